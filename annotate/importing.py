"""Import files into the store: parse every file, then store each in one transaction."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from annotate.codebook import Answer, LoadedCodebook
from annotate.errors import ImportFormatError, UsageError
from annotate.importers import ImportOptions, ParsedFile, expand, parse_file
from annotate.importers.base import Problem
from annotate.importers.platform import infer_roles
from annotate.store import LabelWrite, Store


@dataclass
class FileResult:
    path: Path
    format: str
    actions: int
    new_actions: int
    labels: int = 0
    new_labels: int = 0
    skipped: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class LabelsAs:
    coder: str
    codebook: LoadedCodebook
    question: str


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _check(parsed: ParsedFile, labels_as: LabelsAs | None) -> None:
    """Add the problems that need the codebook: labels outside it."""
    if labels_as is None:
        return
    question = labels_as.codebook.codebook.question(labels_as.question)
    bad = [lab for lab in parsed.labels if lab.value not in question.codes]
    for lab in bad:
        parsed.problems.append(
            Problem(
                lab.line,
                f"label '{lab.value}' is not a code of {labels_as.codebook.codebook.name}"
                f" {question.id} ({', '.join(question.codes)})",
            )
        )
    if bad:
        bad_ids = {lab.action_id for lab in bad}
        parsed.labels = [lab for lab in parsed.labels if lab.action_id not in bad_ids]


def import_files(
    store: Store,
    paths: list[Path],
    *,
    fmt: str | None = None,
    options: ImportOptions | None = None,
    skip_invalid: bool = False,
    labels_as: LabelsAs | None = None,
) -> list[FileResult]:
    """Parse all files first; a file with problems stops everything (unless skip_invalid).

    Each file is then stored in its own transaction, so a failure never half-writes one.
    """
    options = options or ImportOptions()
    files = [parse_file(p, fmt, options) for p in expand(paths)]
    infer_roles([f for f in files if f.format == "platform"])
    for parsed in files:
        _check(parsed, labels_as)
        if parsed.problems and not skip_invalid:
            first = sorted(parsed.problems, key=lambda p: p.line)[0]
            more = len(parsed.problems) - 1
            raise ImportFormatError(
                first.where(parsed.path) + (f" (and {more} more problems)" if more else ""),
                hint="fix the file, or pass --skip-invalid to import the valid lines",
            )
    if labels_as is not None and not any(f.labels for f in files):
        raise UsageError("--labels-as: these files carry no labels")

    results = []
    for parsed in files:
        if not parsed.actions:
            raise ImportFormatError(f"{parsed.path}: no actions in this file")
        result = FileResult(
            parsed.path,
            parsed.format,
            len(parsed.actions),
            0,
            skipped=[p.where(parsed.path) for p in sorted(parsed.problems, key=lambda p: p.line)],
        )
        with store.transaction():
            result.new_actions = store.add_actions(
                parsed.actions,
                path=str(parsed.path),
                sha256=_sha256(parsed.path),
                fmt=parsed.format,
                resequence_by_time=parsed.order_by_timestamp,
            )
            if labels_as is not None and parsed.labels:
                cb = labels_as.codebook.codebook
                store.register_codebook(labels_as.codebook)
                writes = [
                    LabelWrite(
                        lab.action_id, labels_as.question, labels_as.coder, Answer(lab.value)
                    )
                    for lab in parsed.labels
                ]
                result.labels = len(writes)
                result.new_labels = store.save_answers(cb, writes)
        results.append(result)
    return results
