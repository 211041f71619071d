"""Plain records passed between importers, the store, the coding UI and the LLM coder."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from annotate.io.field_paths import get

ACTION_TYPES = ("message", "draw", "erase", "undo", "reset", "tool", "other")
"""The built-in kinds of action, each with its own display. Action types are open: an
agent trace's ``pickup`` or ``chop`` is an action type too (shown ``pickup(onion_1)``)."""


@dataclass(frozen=True)
class Action:
    """One thing a participant said or did in a session, in session order (``seq``)."""

    id: str
    session: str
    seq: int
    action_type: str
    content: str | None = None
    participant: str | None = None
    role: str | None = None
    timestamp: str | None = None
    elapsed_s: float | None = None
    condition: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def speaker(self) -> str:
        return self.role or self.participant or "?"


@dataclass(frozen=True)
class ImportedLabel:
    """A label that arrived with the data (e.g. the Map Task corpus moves)."""

    action_id: str
    value: str
    line: int


_DRAWING_TEXT = {
    "draw": "draws a stroke",
    "erase": "erases part of the drawing",
    "undo": "undoes the last stroke",
    "reset": "clears the whole canvas",
    "tool": "picks a drawing tool",
}


def describe(action: Action) -> str:
    """What a person reading the log should see for an action (never raw JSON)."""
    if action.action_type == "message":
        return action.content or ""
    text = _DRAWING_TEXT.get(action.action_type)
    if text is None:
        if action.action_type == "other":
            return f"[other] {action.content or ''}".strip()
        target = action.content if action.content is not None else action.meta.get("object")
        return f"{action.action_type}({'' if target is None else target})"
    tool = action.meta.get("tool")
    detail = f" ({tool})" if tool and action.action_type == "tool" else ""
    return f"[{text}{detail}]"


def _field_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return ", ".join(f"{k}={_field_text(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_field_text(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def shown_fields(action: Action, paths: Sequence[str]) -> str:
    """The ``meta`` fields named (``verifier``, ``request.target``) that this action has,
    as ``name: value; name: value`` (an empty one left out: an empty ``verifier`` is no
    correction)."""
    parts = []
    for path in paths:
        value = get(action.meta, path)
        if value is None or value == "" or value == {} or value == []:
            continue
        parts.append(f"{path}: {_field_text(value)}")
    return "; ".join(parts)


def describe_with(action: Action, paths: Sequence[str]) -> str:
    """:func:`describe`, then the fields named in brackets: what the coding screen and the
    LLM prompt both show of an action (one wording for both)."""
    text = describe(action)
    extra = shown_fields(action, paths) if paths else ""
    return f"{text} [{extra}]" if extra else text
