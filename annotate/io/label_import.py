"""Codings made elsewhere (a spreadsheet, another tool): CSV or JSONL rows of labels.

Columns: ``action_id, coder, question, value`` and optionally ``other_text``, ``codes``
(a ``;``-separated set: the reasons of a ``no`` in yes/no questions, the choices of a
multi-select question) and ``note``. ``question`` may be left out when the codebook has one.
Any other column is an error (a misspelt ``other_text`` would otherwise lose its text).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from annotate.codebook import Answer, Codebook, LoadedCodebook
from annotate.errors import AnnotateError, ImportFormatError
from annotate.io.importers import fields
from annotate.io.importers.encoding import not_utf8
from annotate.io.label_overwrites import ImportPlan, plan_import, refuse_overwrites
from annotate.store import LabelWrite, Store

COLUMNS = ("action_id", "coder", "question", "value", "other_text", "codes", "note")


@dataclass(frozen=True)
class LabelImportResult:
    path: Path
    rows: int
    plan: ImportPlan
    coders: list[str]

    def summary(self) -> str:
        p = self.plan
        parts = [f"{p.new} new", f"{len(p.answers)} answers replaced"]
        if p.gold:
            parts.append(f"{len(p.gold)} gold labels replaced")
        if p.notes:
            parts.append(f"{p.notes} notes replaced")
        if p.rationales:
            parts.append(f"{p.rationales} rationales replaced")
        parts.append(f"{p.unchanged} unchanged")
        return f"{self.rows} labels read: " + ", ".join(parts)


def _unknown_columns(where: str, names: list[str]) -> ImportFormatError | None:
    unknown = [n for n in names if n not in COLUMNS]
    if not unknown:
        return None
    return ImportFormatError(
        f"{where}: unknown column{'s' if len(unknown) > 1 else ''} "
        + ", ".join(repr(n) for n in unknown),
        hint="columns: " + ", ".join(COLUMNS),
    )


def _csv_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8-sig", newline="") as fh:  # Excel writes a BOM
        reader = csv.DictReader(fh, strict=True)
        last_line = 1  # reader.line_num lags on a broken record: the next line is the one
        try:
            header = [str(n).strip() for n in reader.fieldnames or []]
            if error := _unknown_columns(f"{path}:1", header):
                raise error
            reader.fieldnames = header
            for row in reader:
                if None in row:  # DictReader files surplus values under None
                    raise ImportFormatError(
                        f"{path}:{reader.line_num}: {len(header) + len(row[None])} values "
                        f"for {len(header)} columns",
                        hint="a value with a comma needs double quotes around it",
                    )
                last_line = reader.line_num
                yield last_line, {k: v for k, v in row.items() if v not in (None, "")}
        except csv.Error as exc:
            raise ImportFormatError(
                f"{path}:{last_line + 1}: not valid CSV ({exc})",
                hint='a double quote inside a quoted value is written twice: ""',
            ) from None


def jsonl_objects(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each non-blank line of a JSONL file as an object, with its line number."""
    with path.open(encoding="utf-8-sig") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = fields.json_line(line)
            except ValueError as exc:
                raise ImportFormatError(f"{path}:{lineno}: {exc}") from None
            if not isinstance(obj, dict):
                raise ImportFormatError(f"{path}:{lineno}: expected a JSON object")
            yield lineno, obj


def _jsonl_rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for lineno, obj in jsonl_objects(path):
        if error := _unknown_columns(f"{path}:{lineno}", list(obj)):
            raise error
        yield lineno, obj


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    rows = _csv_rows(path) if path.suffix.lower() == ".csv" else _jsonl_rows(path)
    try:
        yield from rows
    except UnicodeDecodeError:
        raise not_utf8(path) from None


def _codes(raw: Any) -> tuple[str, ...]:
    if raw in (None, ""):
        return ()
    if isinstance(raw, list):
        return tuple(str(c) for c in raw)
    return tuple(c.strip() for c in str(raw).split(";") if c.strip())


def _write(where: str, row: dict[str, Any], loaded: LoadedCodebook) -> LabelWrite:
    cb = loaded.codebook
    try:  # every column but codes (a list or ';'-separated text) is text
        row = {k: v if k == "codes" else fields.text(v, k) for k, v in row.items()}
    except ValueError as exc:
        raise ImportFormatError(f"{where}: {exc}") from None
    for column in ("action_id", "coder", "value"):
        if row.get(column) in (None, "") and not (column == "value" and row.get("codes")):
            raise ImportFormatError(f"{where}: missing field '{column}'")
    question_id = row.get("question")
    if question_id in (None, ""):
        if len(cb.questions) != 1:
            raise ImportFormatError(
                f"{where}: missing field 'question' ({cb.name} has "
                f"{', '.join(q.id for q in cb.questions)})"
            )
        question_id = cb.questions[0].id
    answer = Answer(
        value=None if row.get("value") in (None, "") else str(row["value"]),
        codes=_codes(row.get("codes")),
        other_text=row.get("other_text") or None,
    )
    try:
        question = cb.question(str(question_id))
        if question.kind == "number" and not answer.codes and answer.other_text is None:
            answer = Answer.number(answer.value or "", question)  # "0.80" is stored as "0.8"
        answer.check(question)
    except AnnotateError as exc:
        raise ImportFormatError(f"{where}: {exc.message}", hint=exc.hint) from exc
    return LabelWrite(
        str(row["action_id"]),
        str(question_id),
        str(row["coder"]),
        answer,
        source="import",
        note=str(row["note"]) if row.get("note") else None,
    )


def _content(write: LabelWrite) -> tuple[Any, ...]:
    a = write.answer
    return a.value, sorted(a.codes), a.other_text, write.note


def _check_against_store(
    path: Path, store: Store, loaded: LoadedCodebook, writes: dict[int, LabelWrite]
) -> None:
    """Every action exists and is one the codebook (and the question) applies to."""
    cb = loaded.codebook
    types = store.actions.action_types_by_id(w.action_id for w in writes.values())
    for lineno, w in writes.items():
        action_type = types.get(w.action_id)
        if action_type is None:
            raise ImportFormatError(
                f"{path}:{lineno}: unknown action id '{w.action_id}'",
                hint="import the actions first with `annotate import`",
            )
        check_applies(f"{path}:{lineno}", cb, w.question, w.action_id, action_type)


def check_applies(
    where: str, cb: Codebook, question_id: str, action_id: str, action_type: str
) -> None:
    """Refuses a label for an action its codebook or question does not apply to (``where``:
    the file and line)."""
    question = cb.question(question_id)
    for applies, what, allowed in (
        (cb.applies, cb.name, cb.applies_to),
        (question.applies, f"{cb.name} {question_id}", question.applies_to),
    ):
        if not applies(action_type):
            raise ImportFormatError(
                f"{where}: {what} does not apply to action '{action_id}', "
                f"a {action_type} (it applies to {', '.join(allowed or [])})"
            )


def import_labels(
    store: Store,
    path: Path,
    loaded: LoadedCodebook,
    *,
    replace: bool = False,
    replace_gold: bool = False,
) -> LabelImportResult:
    """Check every row, then store them all in one transaction (or none).

    A row that would change a stored answer is refused unless ``replace`` (a gold label:
    ``replace_gold``), see :mod:`annotate.io.label_overwrites`."""
    cb = loaded.codebook
    if not path.is_file():
        raise ImportFormatError(f"{path}: no such file")
    writes: dict[int, LabelWrite] = {}
    first_line: dict[tuple[str, str, str], int] = {}
    for lineno, row in _rows(path):
        write = _write(f"{path}:{lineno}", row, loaded)
        key = (write.action_id, write.question, write.coder)
        if key in first_line:
            earlier = writes[first_line[key]]
            if _content(earlier) != _content(write):
                raise ImportFormatError(
                    f"{path}:{lineno}: {write.coder}'s {write.question} for action "
                    f"'{write.action_id}' differs from line {first_line[key]}",
                    hint="keep one row per action, question and coder",
                )
            continue  # the same row again
        first_line[key] = lineno
        writes[lineno] = write
    if not writes:
        raise ImportFormatError(f"{path}: no label rows")
    _check_against_store(path, store, loaded, writes)
    with store.db.transaction():
        plan = plan_import(store, cb, writes)  # read and written in one transaction
        refuse_overwrites(path, plan, replace=replace, replace_gold=replace_gold)
        store.codebooks.register_codebook(loaded)
        store.labels.save_answers(cb, list(writes.values()))
    return LabelImportResult(path, len(writes), plan, sorted({w.coder for w in writes.values()}))
