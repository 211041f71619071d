"""What a coder's name says: the adjudicated gold, an LLM (``llm:MODEL``), a participant's own
reports (``self:NAME``), a rule set (``rule:NAME``, `annotate audit`), or a human."""

from __future__ import annotations

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
