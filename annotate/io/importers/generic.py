"""Generic JSONL and CSV action logs: one action per row, columns named by ``--map``.

Our field names are those of :data:`annotate.io.importers.base.FIELDS`; ``--map
content=text,session=dialogue`` says which source column holds each. ``session`` and
``content`` are required; ``seq`` defaults to the row order within the session, ``id`` to
``<session>:<seq>`` (the same in every file, so a re-import adds nothing and two files that
give one id different content are caught), ``action_type`` to ``message``. Every other
column goes to ``meta``.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from annotate.io.importers import fields
from annotate.io.importers.base import FIELDS, ImportOptions, Item, Problem
from annotate.models import ACTION_TYPES, Action, ImportedLabel

REQUIRED = ("session", "content")


def _rows_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any] | str]]:
    with path.open(encoding="utf-8-sig") as fh:  # -sig: a byte-order mark is not data
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = fields.json_line(line)
            except ValueError as exc:
                yield lineno, str(exc)
                continue
            yield lineno, obj if isinstance(obj, dict) else "expected a JSON object"


def _rows_csv(path: Path, options: ImportOptions) -> Iterator[tuple[int, dict[str, Any] | str]]:
    with path.open(encoding="utf-8-sig", newline="") as fh:  # Excel writes a byte-order mark
        reader = csv.DictReader(fh, strict=True)
        try:
            header = reader.fieldnames or []
        except csv.Error as exc:
            yield 1, f"not valid CSV ({exc})"
            return
        absent = [options.mapping.get(f, f) for f in REQUIRED]
        absent = [c for c in absent if c not in header]
        if absent:
            yield (
                1,
                (
                    f"no column {', '.join(repr(c) for c in absent)} (columns: "
                    f"{', '.join(header) or 'none'}); say which holds it with --map "
                    f"{REQUIRED[0]}=COLUMN,{REQUIRED[1]}=COLUMN"
                ),
            )
            return
        while True:
            last_good = reader.line_num
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:  # the rest of the file cannot be read reliably
                yield last_good + 1, f"not valid CSV from this line on ({exc})"
                return
            if None in row:
                yield reader.line_num, "more values than header columns"
                continue
            yield reader.line_num, {k: v for k, v in row.items() if v not in (None, "")}


def _action(
    obj: dict[str, Any], lineno: int, path: Path, options: ImportOptions, seqs: dict[str, int]
) -> tuple[Action, str | None]:
    column = {f: options.mapping.get(f, f) for f in FIELDS}
    missing = [f for f in REQUIRED if obj.get(column[f]) in (None, "")]
    if missing:
        raise ValueError(f"missing field '{column[missing[0]]}'")

    def text(f: str) -> str | None:
        return fields.text(obj.get(column[f]), column[f])

    session = str(text("session"))
    action_type = text("action_type") or "message"
    if action_type not in ACTION_TYPES:
        raise fields.FieldError(
            column["action_type"],
            f"unknown action type '{action_type[:40]}' (one of {', '.join(ACTION_TYPES)})",
        )
    if obj.get(column["seq"]) not in (None, ""):
        seq = fields.whole_number(obj[column["seq"]], column["seq"])
    else:
        seq = seqs.get(session, 0)
        if seq > fields.MAX_INT:
            raise fields.FieldError(column["seq"], "the row before has the largest number")
    seqs[session] = seq + 1
    elapsed_s = fields.number(obj.get(column["elapsed_s"]), column["elapsed_s"])
    used = set(column.values())
    participant = text("participant")
    role = text("role")
    if participant is not None:
        role = options.roles.get(participant, role)
    content = fields.content(obj.get(column["content"]))
    action = Action(
        id=text("id") or f"{session}:{seq}",
        session=session,
        seq=seq,
        action_type=action_type,
        content=content,
        participant=participant,
        role=role,
        timestamp=text("timestamp"),
        elapsed_s=elapsed_s,
        condition=text("condition") or options.condition or None,
        meta={k: v for k, v in obj.items() if k not in used},
    )
    label = text("label")
    return action, label or None


def _parse(path: Path, options: ImportOptions, fmt: str) -> Iterator[tuple[int, Item]]:
    seqs: dict[str, int] = {}
    rows = _rows_jsonl(path) if fmt == "jsonl" else _rows_csv(path, options)
    for lineno, row in rows:
        if isinstance(row, str):
            yield lineno, Problem(lineno, row)
            continue
        try:
            action, label = _action(row, lineno, path, options, seqs)
        except ValueError as exc:
            yield lineno, Problem(lineno, str(exc))
            continue
        yield lineno, action
        if label is not None:
            yield lineno, ImportedLabel(action.id, label, lineno)


def parse_jsonl(path: Path, options: ImportOptions) -> Iterator[tuple[int, Item]]:
    return _parse(path, options, "jsonl")


def parse_csv(path: Path, options: ImportOptions) -> Iterator[tuple[int, Item]]:
    return _parse(path, options, "csv")
