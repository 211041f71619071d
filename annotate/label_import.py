"""Codings made elsewhere (a spreadsheet, another tool): CSV or JSONL rows of labels.

Columns: ``action_id, coder, question, value`` and optionally ``other_text``, ``codes``
(a ``;``-separated set: the reasons of a ``no`` in yes/no questions, the choices of a
multi-select question) and ``note``. ``question`` may be left out when the codebook has one.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from annotate.codebook import Answer, LoadedCodebook
from annotate.errors import AnnotateError, ImportFormatError
from annotate.store import LabelWrite, Store


@dataclass(frozen=True)
class LabelImportResult:
    path: Path
    rows: int
    changed: int
    coders: list[str]


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    if path.suffix.lower() == ".csv":
        with path.open(encoding="utf-8-sig", newline="") as fh:  # Excel writes a BOM
            reader = csv.DictReader(fh)
            for row in reader:
                yield reader.line_num, {k: v for k, v in row.items() if v not in (None, "")}
        return
    with path.open(encoding="utf-8-sig") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ImportFormatError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from exc
            if not isinstance(obj, dict):
                raise ImportFormatError(f"{path}:{lineno}: expected a JSON object")
            yield lineno, obj


def _codes(raw: Any) -> tuple[str, ...]:
    if raw in (None, ""):
        return ()
    if isinstance(raw, list):
        return tuple(str(c) for c in raw)
    return tuple(c.strip() for c in str(raw).split(";") if c.strip())


def import_labels(store: Store, path: Path, loaded: LoadedCodebook) -> LabelImportResult:
    """Check every row, then store them all in one transaction (or none)."""
    cb = loaded.codebook
    if not path.is_file():
        raise ImportFormatError(f"{path}: no such file")
    writes: list[LabelWrite] = []
    lines: list[int] = []
    for lineno, row in _rows(path):
        where = f"{path}:{lineno}"
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
            answer.check(cb.question(str(question_id)))
        except AnnotateError as exc:
            raise ImportFormatError(f"{where}: {exc.message}", hint=exc.hint) from exc
        writes.append(
            LabelWrite(
                str(row["action_id"]),
                str(question_id),
                str(row["coder"]),
                answer,
                source="import",
                note=str(row["note"]) if row.get("note") else None,
            )
        )
        lines.append(lineno)
    if not writes:
        raise ImportFormatError(f"{path}: no label rows")
    known = store.existing_action_ids(w.action_id for w in writes)
    for w, lineno in zip(writes, lines, strict=True):
        if w.action_id not in known:
            raise ImportFormatError(
                f"{path}:{lineno}: unknown action id '{w.action_id}'",
                hint="import the actions first with `annotate import`",
            )
    with store.transaction():
        store.register_codebook(loaded)
        changed = store.save_answers(cb, writes)
    return LabelImportResult(path, len(writes), changed, sorted({w.coder for w in writes}))
