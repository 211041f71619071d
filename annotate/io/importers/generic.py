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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


@dataclass(frozen=True)
class _Plan:
    """Where each field of a row is read: ``column`` names the source of each of ours;
    ``paths`` (only with dotted paths or ``meta.NAME``) the path of each value read, split
    into its steps, and the name it is kept under (a field of ours, or ``meta.NAME``)."""

    column: dict[str, str]
    paths: tuple[tuple[str, str, tuple[str, ...]], ...] = ()


def _plan(options: ImportOptions) -> _Plan:
    column = {f: options.mapping.get(f, f) for f in FIELDS}
    nested = any("." in v for v in options.mapping.values()) or any(
        k.startswith(META_PREFIX) for k in options.mapping
    )
    if not nested:
        return _Plan(column)
    reads = [(f, source) for f, source in column.items()] + [
        (k, v) for k, v in options.mapping.items() if k.startswith(META_PREFIX)
    ]
    return _Plan(column, tuple((name, src, tuple(src.split("."))) for name, src in reads))


def _action(
    obj: dict[str, Any], plan: _Plan, options: ImportOptions, seqs: dict[str, int]
) -> tuple[Action, str | None]:
    column = plan.column
    if plan.paths:
        return _nested_action(obj, plan, options, seqs)
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


def _nested_action(
    obj: dict[str, Any], plan: _Plan, options: ImportOptions, seqs: dict[str, int]
) -> tuple[Action, str | None]:
    """A row read through dotted paths: each value read is taken out of the record (and
    the objects it emptied with it; only the objects on its path are copied), the rest is
    ``meta`` as it was, types kept."""
    values: dict[str, Any] = {}
    rest = dict(obj)
    copied: set[int] = set()
    for name, source, steps in plan.paths:
        if len(steps) == 1 or source in obj:
            value = obj.get(source)
            if value is not None:
                values[name] = value
                rest.pop(source, None)
            continue
        value = obj
        for step in steps:
            value = value.get(step) if isinstance(value, dict) else None
            if value is None:
                break
        if value is not None:
            values[name] = value
            _take(rest, steps, copied)
    column = plan.column
    if values.get("session") in (None, ""):
        raise ValueError(f"missing field '{column['session']}'")
    for name in [n for n in values if n.startswith(META_PREFIX)]:
        rest[name[len(META_PREFIX) :]] = values.pop(name)

    def text(f: str) -> str | None:
        return fields.text(values.get(f), column[f])

    return _build(text, values.get, column, rest, options, seqs)


def _take(rest: dict[str, Any], steps: tuple[str, ...], copied: set[int]) -> None:
    """Remove the value at ``steps`` from ``rest`` (whose objects on the path are copied
    once, so the row read is not changed), and the objects left empty."""
    chain = [rest]
    holder = rest
    for step in steps[:-1]:
        inner = holder.get(step)
        if not isinstance(inner, dict):  # taken already (one path mapped twice)
            return
        if id(inner) not in copied:
            inner = holder[step] = dict(inner)
            copied.add(id(inner))
        chain.append(inner)
        holder = inner
    holder.pop(steps[-1], None)
    for depth in range(len(steps) - 1, 0, -1):
        if chain[depth]:
            break
        del chain[depth - 1][steps[depth - 1]]


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
    plan = _plan(options)
    rows = _rows_jsonl(path) if fmt == "jsonl" else _rows_csv(path, options)
    for lineno, row in rows:
        if isinstance(row, str):
            yield lineno, Problem(lineno, row)
            continue
        try:
            action, label = _action(row, plan, options, seqs)
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
