"""What a report's ``--by`` groups actions by: a column of the action, or any ``meta`` path.

``--by condition``, ``--by meta.pairing``, ``--by meta.level,meta.pairing`` (several at
once: a table for each). :func:`parse_by` checks the names; :func:`groups_of` reads the
values for a set of actions in one query (``meta`` paths through SQLite's JSON functions,
never by loading each action's ``meta`` into Python). One function, so that every table
grouped by a field groups the same way.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

import pandas as pd

from annotate.analysis.stats import NO_VALUE
from annotate.errors import UsageError
from annotate.store import Store

COLUMNS = ("condition", "role", "action_type", "session", "participant")
META = "meta."
_PART = re.compile(r"[^.\"\\]+")


def parse_by(value: str | Sequence[str]) -> list[str]:
    """The groupings named (comma-separated, or a list), checked; ``UsageError`` names the
    first that is neither a column nor ``meta.PATH``."""
    names = value.split(",") if isinstance(value, str) else [n for v in value for n in v.split(",")]
    out: list[str] = []
    for raw in names:
        name = raw.strip()
        if not name:
            continue
        if name.startswith(META):
            parts = name[len(META) :].split(".")
            if all(_PART.fullmatch(p) for p in parts):
                out.append(name)
                continue
        elif name in COLUMNS:
            out.append(name)
            continue
        raise UsageError(
            f"--by: unknown column '{name}'",
            hint="a column (" + ", ".join(COLUMNS) + ") or meta.PATH, e.g. meta.pairing",
        )
    if not out:
        raise UsageError("--by: name a field", hint="e.g. --by condition or --by meta.pairing")
    return list(dict.fromkeys(out))


def meta_groupings(keys: Sequence[str]) -> list[str]:
    """``meta.KEY`` for each top-level ``meta`` key that is a path of its own (no dot, quote or
    backslash in it), as :func:`parse_by` accepts it."""
    return [META + k for k in keys if _PART.fullmatch(k)]


def groups_of(store: Store, action_ids: Collection[str], by: Sequence[str]) -> pd.DataFrame:
    """``action_id`` and a column per grouping of ``by`` (as :func:`parse_by` returns them):
    each value as text, ``-`` where the action has none."""
    columns = [b for b in by if not b.startswith(META)]
    paths = [b[len(META) :] for b in by if b.startswith(META)]
    rows = store.analysis.action_fields(action_ids, columns, paths)
    frame = pd.DataFrame(rows, columns=["action_id", *columns, *(META + p for p in paths)])
    for name in by:
        frame[name] = frame[name].map(_text)
    return frame[["action_id", *by]]


def _text(value: object) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return NO_VALUE
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
