"""Generic JSONL and CSV action logs: one action per row, columns named by ``--map``.

Our field names are those of :data:`annotate.io.importers.base.FIELDS`; ``--map
content=text,session=dialogue`` says which source column holds each; a dotted path reaches
into nested JSON (``content=message.text``), and ``meta.NAME=PATH`` stores a value under a
name of ours in ``meta``. ``session`` is required, and ``content`` for a message;
``seq`` defaults to the row order within the session (several events of one timestep keep
the file's order: map the step to ``meta.timestep``, not to ``seq``), ``id`` to
``<session>:<seq>`` (the same in every file, so a re-import adds nothing and two files that
give one id different content are caught), ``action_type`` to ``message``. Action types are
open: an agent's ``pickup`` is as good as ``message`` or ``draw``. Every other field goes
to ``meta`` as the source wrote it (JSON numbers and booleans stay numbers and booleans).
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from annotate.io import field_paths
from annotate.io.importers import fields
from annotate.io.importers.base import FIELDS, ImportOptions, Item, Problem
from annotate.models import Action, ImportedLabel

REQUIRED = ("session", "content")
"""Required of a CSV file's header (a row may leave content empty when it names an action)."""
META_PREFIX = "meta."
MAX_TYPE = 200


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
    nested = _nested_paths(options)
    if nested:
        return _nested_action(obj, options, seqs, nested)
    if obj.get(column["session"]) in (None, ""):
        raise ValueError(f"missing field '{column['session']}'")

    def text(f: str) -> str | None:
        return fields.text(obj.get(column[f]), column[f])

    used = set(column.values())
    return _build(
        text,
        lambda f: obj.get(column[f]),
        column,
        {k: v for k, v in obj.items() if k not in used},
        options,
        seqs,
    )


def _nested_paths(options: ImportOptions) -> tuple[str, ...]:
    """The mapped paths that reach inside an object (``message.text``), and ``meta.*``."""
    return tuple(
        k for k, v in options.mapping.items() if "." in v or k.startswith(META_PREFIX)
    )


def _nested_action(
    obj: dict[str, Any], options: ImportOptions, seqs: dict[str, int], nested: tuple[str, ...]
) -> tuple[Action, str | None]:
    """A row read through dotted paths: each mapped value is taken out of the record (and
    the objects it emptied with it), the rest is ``meta`` as it was, types kept."""
    column = {f: options.mapping.get(f, f) for f in FIELDS}
    values: dict[str, Any] = {}
    rest = obj
    for f, source in column.items():
        value = field_paths.get(obj, source)
        if value is not None:
            values[f] = value
            rest = field_paths.without(rest, source)
    extra: dict[str, Any] = {}
    for key in nested:
        if key.startswith(META_PREFIX):
            source = options.mapping[key]
            value = field_paths.get(obj, source)
            if value is not None:
                extra[key[len(META_PREFIX) :]] = value
                rest = field_paths.without(rest, source)
    if values.get("session") in (None, ""):
        raise ValueError(f"missing field '{column['session']}'")

    def text(f: str) -> str | None:
        return fields.text(values.get(f), column[f])

    return _build(text, values.get, column, {**rest, **extra}, options, seqs)


def _build(
    text: Callable[[str], str | None],
    raw: Callable[[str], Any],
    column: dict[str, str],
    meta: dict[str, Any],
    options: ImportOptions,
    seqs: dict[str, int],
) -> tuple[Action, str | None]:
    session = str(text("session"))
    action_type = text("action_type") or "message"
    if not action_type.strip() or len(action_type) > MAX_TYPE:
        raise fields.FieldError(
            column["action_type"], f"an action type is a name of 1 to {MAX_TYPE} characters"
        )
    content = fields.content(raw("content"))
    if action_type == "message" and content in (None, ""):
        raise ValueError(
            f"missing field '{column['content']}' (a message needs text; an event without "
            f"one needs an action type: --map action_type=FIELD)"
        )
    seq_value = raw("seq")
    if seq_value not in (None, ""):
        seq = fields.whole_number(seq_value, column["seq"])
    else:
        seq = seqs.get(session, 0)
        if seq > fields.MAX_INT:
            raise fields.FieldError(column["seq"], "the row before has the largest number")
    seqs[session] = seq + 1
    elapsed_s = fields.number(raw("elapsed_s"), column["elapsed_s"])
    participant = text("participant")
    role = text("role")
    if participant is not None:
        role = options.roles.get(participant, role)
    action = Action(
        id=text("id") or f"{session}:{seq}",
        session=session,
        seq=seq,
        action_type=action_type,
        content=content or None,
        participant=participant,
        role=role,
        timestamp=text("timestamp"),
        elapsed_s=elapsed_s,
        condition=text("condition") or options.condition or None,
        meta=meta,
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
