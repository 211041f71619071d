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

import json
from collections.abc import Iterator
from dataclasses import dataclass
from math import isfinite
from pathlib import Path
from typing import Any

from annotate.io.importers import fields
from annotate.io.importers.base import ImportOptions, Item, Problem
from annotate.store.actions import ActionRow
from annotate.store.base import dumps

REQUIRED = ("action_id", "timestamp", "session_id", "participant_id", "action_type")
SKIP_META: set[str] = set()  # screenshot and html_snapshot are kept: see annotate/media.py


@dataclass(slots=True)
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


def looks_like_platform(first_record: dict[str, Any]) -> bool:
    return all(k in first_record for k in ("action_id", "participant_id", "action_type"))


def action_type_of(kind: str, content: str | None, metadata: dict[str, Any]) -> str:
    """Our action type for the platform's ``action_type`` (and its content)."""
    if kind == "send_message":
        return "message"
    lowered = (content or "").lower()
    if kind.startswith("map_draw"):
        tool = str(metadata.get("stroke_tool", "")).lower()
        return "erase" if "eras" in tool or "eras" in lowered else "draw"
    if kind == "map_tool_click":
        if lowered in {"reset", "clear"}:
            return "reset"
        if lowered == "undo":
            return "undo"
        return "tool"
    return "other"


KNOWN = frozenset(
    {
        *REQUIRED,
        "participant_name",
        "action_content",
        "metadata",
        "session_elapsed_seconds",
        "role",
        "condition",
    }
)
"""The fields read into their own columns; every other field goes to ``meta``."""
NOT_EXTRA = KNOWN | SKIP_META


def _record(obj: Any) -> PlatformRecord:
    if not isinstance(obj, dict):
        raise ValueError("expected a JSON object")
    get = obj.get
    required = {k: fields.text(get(k), k) for k in REQUIRED if k != "timestamp"}
    missing = [k for k in REQUIRED if get(k) in (None, "")]
    if missing:
        raise ValueError(f"missing field '{missing[0]}'")
    metadata = get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ValueError("field 'metadata' must be an object")
    return PlatformRecord(
        action_id=str(required["action_id"]),
        timestamp=fields.utc_timestamp(obj["timestamp"]),
        session_id=str(required["session_id"]),
        participant_id=str(required["participant_id"]),
        participant_name=fields.text(get("participant_name"), "participant_name"),
        action_type=str(required["action_type"]),
        action_content=fields.content(get("action_content")),
        metadata=metadata,
        elapsed=fields.number(get("session_elapsed_seconds"), "session_elapsed_seconds"),
        role=fields.text(get("role"), "role"),
        condition=fields.text(get("condition"), "condition"),
    )


def _row(rec: PlatformRecord, seq: int, options: ImportOptions, extra: dict[str, Any]) -> ActionRow:
    kind = action_type_of(rec.action_type, rec.action_content, rec.metadata)
    participant = rec.participant_name or rec.participant_id
    meta = {"source_type": rec.action_type, "participant_id": rec.participant_id}
    if rec.metadata:
        meta["metadata"] = rec.metadata
    if extra:
        meta.update(extra)
    if kind == "tool":
        meta["tool"] = rec.action_content
    roles = options.roles
    return (
        rec.action_id,
        rec.session_id,
        participant,
        (roles.get(participant) or roles.get(rec.participant_id) or rec.role)
        if roles
        else rec.role,
        seq,
        rec.timestamp,
        rec.elapsed,
        kind,
        rec.action_content,
        rec.condition or options.condition,
        dumps(meta),
    )


def _plain(obj: Any) -> PlatformRecord | None:
    """The record of a line whose every field is of the usual kind, checked cheaply; None
    for anything else, which :func:`_record` then reads field by field (and names the
    field that is wrong)."""
    if type(obj) is not dict:
        return None
    get = obj.get
    action_id, session_id, participant_id, kind, stamp = (
        get("action_id"),
        get("session_id"),
        get("participant_id"),
        get("action_type"),
        get("timestamp"),
    )
    if not (
        type(action_id) is str
        and action_id
        and type(session_id) is str
        and session_id
        and type(participant_id) is str
        and participant_id
        and type(kind) is str
        and kind
        and type(stamp) is str
        and stamp
    ):
        return None
    name, content, role, condition, metadata, elapsed = (
        get("participant_name"),
        get("action_content"),
        get("role"),
        get("condition"),
        get("metadata"),
        get("session_elapsed_seconds"),
    )
    if not (
        (name is None or type(name) is str)
        and (content is None or type(content) is str)
        and (role is None or type(role) is str)
        and (condition is None or type(condition) is str)
        and (metadata is None or type(metadata) is dict)
    ):
        return None
    if elapsed is not None:
        if type(elapsed) is int and -MAX_EXACT <= elapsed <= MAX_EXACT:
            elapsed = float(elapsed)
        elif not (type(elapsed) is float and isfinite(elapsed)):
            return None
    return PlatformRecord(
        action_id,
        fields.utc_timestamp(stamp),
        session_id,
        participant_id,
        name,
        kind,
        content,
        metadata or {},
        elapsed,
        role,
        condition,
    )


MAX_EXACT = 2**53
"""Whole seconds up to this are the same float either way; larger go the long way."""


def parse(path: Path, options: ImportOptions) -> Iterator[tuple[int, Item]]:
    """Action rows (no :class:`Action` objects: 1M lines are inserted, nothing more)."""
    loads, json_line = json.loads, fields.json_line
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            try:
                # most lines: one JSON decode and type checks; too deep nesting needs an
                # opening bracket per level, so only a line with many is walked
                obj = (
                    loads(line)
                    if line.count("{") + line.count("[") <= fields.MAX_JSON_DEPTH
                    else json_line(line)
                )
            except (ValueError, RecursionError):
                if not line.strip():
                    continue
                try:
                    json_line(line)
                except ValueError as exc:
                    yield lineno, Problem(lineno, str(exc))
                continue
            try:
                rec = _plain(obj) or _record(obj)
            except ValueError as exc:
                yield lineno, Problem(lineno, str(exc))
                continue
            extra = (
                {}
                if obj.keys() <= NOT_EXTRA
                else {k: v for k, v in obj.items() if k not in NOT_EXTRA}
            )
            yield lineno, _row(rec, lineno, options, extra)
