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

import msgspec

from annotate.io.importers import fields
from annotate.io.importers.base import ImportOptions, Item, Problem
from annotate.store.actions import ActionRow
from annotate.store.base import dumps, encode_text

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
    roles = options.roles
    return [
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
        dumps(
            _meta(
                rec.action_type, rec.participant_id, rec.metadata, kind, rec.action_content, extra
            )
        ),
    ]


def _meta(
    source_type: str,
    participant_id: str,
    metadata: dict[str, Any] | None,
    kind: str,
    content: str | None,
    extra: dict[str, Any],
) -> dict[str, Any]:
    """An action's ``meta``: what the platform said, and the fields without a column."""
    meta: dict[str, Any] = {"source_type": source_type, "participant_id": participant_id}
    if metadata:
        meta["metadata"] = metadata
    if extra:
        meta.update(extra)
    if kind == "tool":
        meta["tool"] = content
    return meta


class _PlainLine(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A line of the export's own fields only, each of its plain JSON type: what nearly
    every line is. msgspec decodes and type-checks it in C (0.5 us, where the JSON scanner
    alone took 1.6 us); a line with another field, another type (a number for a name, a
    list for ``metadata``, true for the seconds) or nested ``metadata`` fails to decode
    here and is read as a dict (:func:`_usual_row`), or field by field. Where msgspec
    decodes a line, it gives the values ``json.loads`` gives (``tests/test_import_fast_paths``
    reads odd lines both ways); the texts it refuses (NaN, 1e400, a lone surrogate escape)
    go the long way."""

    action_id: str
    timestamp: str
    session_id: str
    participant_id: str
    action_type: str
    participant_name: str | None = None
    action_content: str | None = None
    role: str | None = None
    condition: str | None = None
    metadata: dict[str, str | int | float | bool | None] | None = None
    session_elapsed_seconds: int | float | None = None


_decode_plain = msgspec.json.Decoder(_PlainLine).decode
_decode_any = msgspec.json.Decoder().decode
_NOT_PLAIN = (msgspec.DecodeError, ValueError, RecursionError)
"""A line that is not JSON, not a plain line, or whose time is unusual (a ValueError of
:func:`fields.utc_timestamp`): left to the next way of reading it."""


def _plain_row(line: _PlainLine, lineno: int, options: ImportOptions) -> ActionRow | None:
    """The row of a plain line (the same row as ``_row(_record(obj), ...)``); None when a
    required text is empty or the seconds are too large to be the same float, which the
    long way words."""
    elapsed = line.session_elapsed_seconds
    if type(elapsed) is int:
        if not -MAX_EXACT <= elapsed <= MAX_EXACT:
            return None
        elapsed = float(elapsed)  # msgspec refuses inf and nan: a float is finite
    action_id, session_id, participant_id, source_type, stamp = (
        line.action_id,
        line.session_id,
        line.participant_id,
        line.action_type,
        line.timestamp,
    )
    if not (action_id and session_id and participant_id and source_type and stamp):
        return None
    return _checked_row(
        options, lineno, action_id, session_id, participant_id, line.participant_name,
        line.role, stamp, elapsed, source_type, line.action_content, line.condition,
        line.metadata, None,
    )  # fmt: skip


def _checked_row(
    options: ImportOptions,
    lineno: int,
    action_id: str,
    session_id: str,
    participant_id: str,
    name: str | None,
    role: str | None,
    stamp: str,
    elapsed: float | None,
    source_type: str,
    content: str | None,
    condition: str | None,
    metadata: dict[str, Any] | None,
    extra: dict[str, Any] | None,
) -> ActionRow:
    """The row of a line whose fields are checked (both quick ways end here): its type,
    participant, role (``--role`` first), time in UTC and meta (with ``extra``, the
    line's other fields)."""
    kind = action_type_of(source_type, content, metadata or {})
    participant = name or participant_id
    roles = options.roles
    if roles:
        role = roles.get(participant) or roles.get(participant_id) or role
    if extra:
        meta = dumps(_meta(source_type, participant_id, metadata, kind, content, extra))
    else:
        meta = _meta_text(source_type, participant_id, metadata, kind, content)
    return [
        action_id,
        session_id,
        participant,
        role,
        lineno,
        fields.utc_timestamp(stamp),
        elapsed,
        kind,
        content,
        condition or options.condition,
        meta,
    ]


def _usual_row(obj: dict[str, Any], lineno: int, options: ImportOptions) -> ActionRow | None:
    """The row of a line whose every field is of the usual kind, checked cheaply (the same
    row as ``_row(_record(obj), ...)``); None for anything else, which :func:`_record` then
    reads field by field (and names the field that is wrong)."""
    get = obj.get
    action_id, session_id, participant_id, source_type, stamp = (
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
        and type(source_type) is str
        and source_type
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
    extra = None
    if not obj.keys() <= NOT_EXTRA:
        extra = {k: v for k, v in obj.items() if k not in NOT_EXTRA}
    return _checked_row(
        options, lineno, action_id, session_id, participant_id, name, role, stamp, elapsed,
        source_type, content, condition, metadata, extra,
    )  # fmt: skip


_META_TAILS: dict[tuple[str, str], str] = {}
_METADATA_TEXTS: dict[tuple[str, str], str] = {}
_META_TEXTS: dict[tuple[str, ...], str] = {}
CACHED = 4096
"""Texts kept for reuse (a participant's id, one kind of metadata): a file has a few."""


def _meta_text(
    source_type: str,
    participant_id: str,
    metadata: dict[str, Any] | None,
    kind: str,
    content: str | None,
) -> str:
    """:func:`_meta_written`, the same text taken whole from a cache for the usual line
    (no metadata or a one-entry one of text, and no tool): a participant's lines repeat a
    few of these."""
    if kind == "tool":
        return _meta_written(source_type, participant_id, metadata, kind, content)
    if not metadata:
        key: tuple[str, ...] = (participant_id, source_type)
    elif len(metadata) == 1:
        ((name, value),) = metadata.items()
        if type(value) is not str:
            return _meta_written(source_type, participant_id, metadata, kind, content)
        key = (participant_id, source_type, name, value)
    else:
        return _meta_written(source_type, participant_id, metadata, kind, content)
    text = _META_TEXTS.get(key)
    if text is None:
        if len(_META_TEXTS) >= CACHED:
            _META_TEXTS.clear()
        text = _META_TEXTS[key] = _meta_written(
            source_type, participant_id, metadata, kind, content
        )
    return text


def _meta_written(
    source_type: str,
    participant_id: str,
    metadata: dict[str, Any] | None,
    kind: str,
    content: str | None,
) -> str:
    """``dumps(_meta(..., extra={}))`` written from its parts: the keys in their sorted order
    (metadata, participant_id, source_type, tool), each value as ``dumps`` writes it, and
    the parts that repeat line after line (the participant, the kind of action, a
    one-entry ``metadata``) taken from caches."""
    tail = _META_TAILS.get((participant_id, source_type))
    if tail is None:
        if len(_META_TAILS) >= CACHED:
            _META_TAILS.clear()
        tail = _META_TAILS[participant_id, source_type] = (
            f'"participant_id": {encode_text(participant_id)}, '
            f'"source_type": {encode_text(source_type)}'
        )
    if kind == "tool":
        tail += ', "tool": ' + ("null" if content is None else encode_text(content))
    if not metadata:
        return "{" + tail + "}"
    if len(metadata) == 1:
        ((key, value),) = metadata.items()
        if type(value) is str:
            text = _METADATA_TEXTS.get((key, value))
            if text is None:
                if len(_METADATA_TEXTS) >= CACHED:
                    _METADATA_TEXTS.clear()
                text = _METADATA_TEXTS[key, value] = dumps(metadata)
            return '{"metadata": ' + text + ", " + tail + "}"
    return '{"metadata": ' + dumps(metadata) + ", " + tail + "}"


MAX_EXACT = 2**53
"""Whole seconds up to this are the same float either way; larger go the long way."""


def _slow_item(line: str, lineno: int, options: ImportOptions) -> Item | None:
    """A line the quick reading did not take: decoded and read field by field, so that a
    problem is worded as it always was; None for a blank line."""
    try:
        # too deep nesting needs an opening bracket per level: only a line with many is walked
        obj = (
            json.loads(line)
            if line.count("{") + line.count("[") <= fields.MAX_JSON_DEPTH
            and not fields.SURROGATE_ESCAPE.search(line)
            else fields.json_line(line)
        )
    except (ValueError, RecursionError):
        if not line.strip():
            return None
        try:
            fields.json_line(line)
        except ValueError as exc:
            return Problem(lineno, str(exc))
        return None
    try:
        rec = _record(obj)
    except ValueError as exc:
        return Problem(lineno, str(exc))
    extra = {} if obj.keys() <= NOT_EXTRA else {k: v for k, v in obj.items() if k not in NOT_EXTRA}
    return _row(rec, lineno, options, extra)


def parse(path: Path, options: ImportOptions) -> Iterator[tuple[int, Item]]:
    """Action rows (no :class:`Action` objects: 1M lines are inserted, nothing more).

    Each line is read the quickest way that takes it: as a plain line (:class:`_PlainLine`),
    else as a JSON object of the usual kinds with other fields (:func:`_usual_row`), else
    the long way (:func:`_slow_item`: white space around the object and odd types are
    fine there, and it words every problem). A line with too many brackets to rule out too
    deep nesting is only read as a plain line (whose ``metadata`` is one level) or the long
    way."""
    decode_plain, decode_any, plain_row, usual_row = (
        _decode_plain,
        _decode_any,
        _plain_row,
        _usual_row,
    )
    not_plain, depth = _NOT_PLAIN, fields.MAX_JSON_DEPTH
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            try:
                row = plain_row(decode_plain(line), lineno, options)
            except not_plain:
                row = None
            if row is None and line.count("{") + line.count("[") <= depth:
                try:
                    obj = decode_any(line)
                    row = usual_row(obj, lineno, options) if type(obj) is dict else None
                except not_plain:  # a bad time too: the long way words it
                    row = None
            if row is None:
                item = _slow_item(line, lineno, options)
                if item is None:
                    continue
                yield lineno, item
            else:
                yield lineno, row
