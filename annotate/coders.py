"""What a coder's name says: the adjudicated gold, an LLM (``llm:MODEL``), a participant's own
reports (``self:NAME``), a rule set (``rule:NAME``, `annotate audit`), or a human."""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping

from annotate.errors import UsageError

GOLD = "gold"
LLM_PREFIX = "llm:"
SELF_PREFIX = "self:"
RULE_PREFIX = "rule:"


def is_llm(coder: str) -> bool:
    return coder.startswith(LLM_PREFIX)


def self_coder(participant: str) -> str:
    return SELF_PREFIX + participant


def is_rule(coder: str) -> bool:
    return coder.startswith(RULE_PREFIX)


def is_human(coder: str) -> bool:
    """Coders counted by default: not the adjudicated gold, not an LLM, not a participant's
    own reports, not a rule set."""
    return coder != GOLD and not coder.startswith((LLM_PREFIX, SELF_PREFIX, RULE_PREFIX))


CODER_ENV = "ANNOTATE_CODER"


def default_coder(environ: Mapping[str, str] = os.environ) -> tuple[str, str]:
    """The coder of `annotate code` without ``--coder``, and where the name came from:
    ``$ANNOTATE_CODER``, else the login name."""
    name = environ.get(CODER_ENV, "").strip()
    if name:
        return name, f"${CODER_ENV}"
    try:
        login = getpass.getuser().strip()
    except (KeyError, OSError):  # no login name: no user database entry, no variable
        login = ""
    if login:
        return login, "the login name"
    raise UsageError(
        "no coder name: pass --coder NAME",
        hint=f"or set ${CODER_ENV}; the login name is unknown here",
    )
