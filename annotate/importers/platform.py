"""The collaboration platform's JSONL action export (one file per participant).

Roles: the export has none; when a session's two participants are in, the one who drew is
the Follower (the store fills this in, see ``Store.infer_roles``).

Timestamps are parsed (ISO 8601, offsets honoured, none = UTC) and stored in one UTC form.

Source shape: one JSON object per line with action_id, timestamp, session_id, participant_id,
participant_name, action_type (send_message, map_draw_stop, map_tool_click, ...),
action_content, metadata, session_elapsed_seconds; optional role and condition.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from annotate.importers.base import ImportOptions, Item, Problem
from annotate.models import Action

REQUIRED = ("action_id", "timestamp", "session_id", "participant_id", "action_type")
SKIP_META = {"screenshot", "html_snapshot"}


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


def utc_timestamp(value: Any) -> str:
    """ISO 8601 text in one fixed UTC form (``2026-04-10T21:44:11.831000Z``), so that
    text order is time order: the store orders a session's actions by this text.

    A time without an offset is taken as UTC."""
    if not isinstance(value, str):
        raise ValueError(f"field 'timestamp' must be ISO 8601 text, not {value!r}")
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"field 'timestamp': {value!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _record(obj: Any) -> PlatformRecord:
    if not isinstance(obj, dict):
        raise ValueError("expected a JSON object")
    missing = [k for k in REQUIRED if obj.get(k) in (None, "")]
    if missing:
        raise ValueError(f"missing field '{missing[0]}'")
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ValueError("field 'metadata' must be an object")
    elapsed = obj.get("session_elapsed_seconds")
    if elapsed is not None and not isinstance(elapsed, int | float):
        raise ValueError("field 'session_elapsed_seconds' must be a number")
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
        action_id=str(obj["action_id"]),
        timestamp=utc_timestamp(obj["timestamp"]),
        session_id=str(obj["session_id"]),
        participant_id=str(obj["participant_id"]),
        participant_name=obj.get("participant_name"),
        action_type=str(obj["action_type"]),
        action_content=None if obj.get("action_content") is None else str(obj["action_content"]),
        metadata=metadata,
        elapsed=elapsed,
        role=obj.get("role"),
        condition=obj.get("condition"),
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
                rec = _record(json.loads(line))
            except json.JSONDecodeError as exc:
                yield lineno, Problem(lineno, f"not valid JSON ({exc.msg})")
                continue
            except ValueError as exc:
                yield lineno, Problem(lineno, str(exc))
                continue
            yield lineno, _to_action(rec, lineno, options)
