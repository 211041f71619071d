"""Plain records passed between importers, the store, the coding UI and the LLM coder."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ACTION_TYPES = ("message", "draw", "erase", "undo", "reset", "tool", "other")
"""What an action can be (a codebook's ``applies_to`` names some of them)."""


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
        return f"[{action.action_type}] {action.content or ''}".strip()
    tool = action.meta.get("tool")
    detail = f" ({tool})" if tool and action.action_type == "tool" else ""
    return f"[{text}{detail}]"
