"""The collaboration platform's JSONL action export (one file per participant).

Roles: the export has none; when a session's two participants are in, the one who drew is
the Follower (the store fills this in, see ``Store.infer_roles``).

Timestamps are parsed (ISO 8601, offsets honoured, none = UTC) and stored in one UTC form.
Every field is read through :mod:`annotate.io.importers.fields`: an odd value costs its line.

Source shape: one JSON object per line with action_id, timestamp, session_id, participant_id,
participant_name, action_type (send_message, map_draw_stop, map_tool_click, ...),
action_content, metadata, session_elapsed_seconds; optional role and condition.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from annotate.io.importers import fields
from annotate.io.importers.base import ImportOptions, Item, Problem
from annotate.models import Action

REQUIRED = ("action_id", "timestamp", "session_id", "participant_id", "action_type")
SKIP_META: set[str] = set()  # screenshot and html_snapshot are kept: see annotate/media.py


@dataclass(frozen=True)
class PlatformRecord:
    action_id: str
    timestamp: str
    session_id: str
    participant_id: str
    participant_name: str | None
    action_type: str
    action_content: str | None
    metadata: dict[str, Any]
    elapsed: float | None
    role: str | None
    condition: str | None
    extra: dict[str, Any]


def looks_like_platform(first_record: dict[str, Any]) -> bool:
    return all(k in first_record for k in ("action_id", "participant_id", "action_type"))


def action_type_of(rec: PlatformRecord) -> str:
    kind, content = rec.action_type, (rec.action_content or "").lower()
    if kind == "send_message":
        return "message"
    if kind.startswith("map_draw"):
        tool = str(rec.metadata.get("stroke_tool", "")).lower()
        return "erase" if "eras" in tool or "eras" in content else "draw"
    if kind == "map_tool_click":
        if content in {"reset", "clear"}:
            return "reset"
        if content == "undo":
            return "undo"
        return "tool"
    return "other"


def _record(obj: Any) -> PlatformRecord:
    if not isinstance(obj, dict):
        raise ValueError("expected a JSON object")
    required = {k: fields.text(obj.get(k), k) for k in REQUIRED if k != "timestamp"}
    missing = [k for k in REQUIRED if obj.get(k) in (None, "")]
    if missing:
        raise ValueError(f"missing field '{missing[0]}'")
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ValueError("field 'metadata' must be an object")
    known = {
        *REQUIRED,
        "participant_name",
        "action_content",
        "metadata",
        "session_elapsed_seconds",
        "role",
        "condition",
    }
    return PlatformRecord(
        action_id=str(required["action_id"]),
        timestamp=fields.utc_timestamp(obj["timestamp"]),
        session_id=str(required["session_id"]),
        participant_id=str(required["participant_id"]),
        participant_name=fields.text(obj.get("participant_name"), "participant_name"),
        action_type=str(required["action_type"]),
        action_content=fields.content(obj.get("action_content")),
        metadata=metadata,
        elapsed=fields.number(obj.get("session_elapsed_seconds"), "session_elapsed_seconds"),
        role=fields.text(obj.get("role"), "role"),
        condition=fields.text(obj.get("condition"), "condition"),
        extra={k: v for k, v in obj.items() if k not in known and k not in SKIP_META},
    )


def _to_action(rec: PlatformRecord, seq: int, options: ImportOptions) -> Action:
    kind = action_type_of(rec)
    participant = rec.participant_name or rec.participant_id
    meta = {
        "source_type": rec.action_type,
        "participant_id": rec.participant_id,
        **({"metadata": rec.metadata} if rec.metadata else {}),
        **rec.extra,
    }
    if kind == "tool":
        meta["tool"] = rec.action_content
    return Action(
        id=rec.action_id,
        session=rec.session_id,
        seq=seq,
        action_type=kind,
        content=rec.action_content,
        participant=participant,
        role=options.roles.get(participant) or options.roles.get(rec.participant_id) or rec.role,
        timestamp=rec.timestamp,
        elapsed_s=float(rec.elapsed) if rec.elapsed is not None else None,
        condition=rec.condition or options.condition,
        meta=meta,
    )


def parse(path: Path, options: ImportOptions) -> Iterator[tuple[int, Item]]:
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = _record(fields.json_line(line))
            except ValueError as exc:
                yield lineno, Problem(lineno, str(exc))
                continue
            yield lineno, _to_action(rec, lineno, options)
