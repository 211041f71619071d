"""Import files into the store: each file is streamed into one transaction.

A problem on any line stops that file: the transaction rolls back, so nothing of the file
is stored, and the error names the first bad line (the rest of the file is still read, to
say how many more there are). With ``skip_invalid`` the bad lines are left out and listed.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from annotate.codebook import Answer, LoadedCodebook
from annotate.errors import AnnotateError, ImportFormatError
from annotate.io.importers import ImportOptions, expand, parse_file, source_format
from annotate.io.importers.base import Item, Problem
from annotate.models import Action, ImportedLabel
from annotate.store import CORPUS_SOURCE, LabelWrite, Store
from annotate.store.actions import ActionRow, action_row

BATCH = 20_000


@dataclass
class FileResult:
    path: Path
    format: str
    actions: int = 0
    new_actions: int = 0
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


class _FileImport:
    """The state of one file's import: batches, ids seen, problems found."""

    def __init__(self, store: Store, path: Path, fmt_name: str, labels_as: LabelsAs | None):
        self.store = store
        self.path = path
        self.result = FileResult(path, fmt_name)
        self.labels_as = labels_as
        self.codes = (
            labels_as.codebook.codebook.question(labels_as.question).codes if labels_as else []
        )
        self.first_line: dict[str, int] = {}
        self.problems: list[Problem] = []
        self.actions: list[ActionRow] = []
        self.labels: list[LabelWrite] = []
        self.sessions: set[str] = set()
        self.import_id = 0

    def take(self, line: int, item: Item, keep_going: bool) -> None:
        if type(item) is tuple:  # an action row, straight from the parser (platform)
            row: ActionRow = item
        elif isinstance(item, Action):
            row = action_row(item)
        elif isinstance(item, Problem):
            self.problems.append(item)
            return
        else:
            self._take_label(item)
            return
        action_id = row[0]
        first_line = self.first_line
        if action_id in first_line:
            self.problems.append(
                Problem(
                    line,
                    f"duplicate action id '{action_id}' (first on line {first_line[action_id]})",
                )
            )
            return
        first_line[action_id] = line
        if keep_going or not self.problems:
            self.actions.append(row)
            self.sessions.add(row[1])
            self.result.actions += 1
            if len(self.actions) >= BATCH:
                self.flush()

    def _take_label(self, label: ImportedLabel) -> None:
        if self.labels_as is None:
            return
        if label.value not in self.codes:
            cb = self.labels_as.codebook.codebook
            self.problems.append(
                Problem(
                    label.line,
                    f"label '{label.value}' is not a code of {cb.name} {self.labels_as.question} "
                    f"({', '.join(self.codes)})",
                )
            )
            return
        self.labels.append(
            LabelWrite(
                label.action_id,
                self.labels_as.question,
                self.labels_as.coder,
                Answer(label.value),
                source=CORPUS_SOURCE,
            )
        )

    def flush(self) -> None:
        if self.actions:
            new = self.store.insert_actions(self.actions, self.import_id)
            if new < len(self.actions):  # some ids were stored before: the same actions?
                clash = self.store.conflicting_actions(self.actions)
                if clash:
                    raise ImportFormatError(
                        f"{self.path}:{self.first_line[clash[0]]}: action id '{clash[0]}' is "
                        "already stored with another session, type or content"
                        + (f" (and {len(clash) - 1} more)" if len(clash) > 1 else ""),
                        hint="give each row a unique id (--map id=COLUMN); nothing of this "
                        "file was stored",
                    )
            self.result.new_actions += new
            self.actions.clear()
        if self.labels and self.labels_as is not None:
            # a label whose action was skipped as invalid is skipped with it
            kept = [w for w in self.labels if w.action_id in self.first_line]
            self.result.labels += len(kept)
            self.result.new_labels += self.store.save_answers(
                self.labels_as.codebook.codebook, kept
            )
            self.labels.clear()


def _import_one(
    store: Store,
    path: Path,
    fmt: str | None,
    options: ImportOptions,
    skip_invalid: bool,
    labels_as: LabelsAs | None,
) -> FileResult:
    fmt_name, source = source_format(path, fmt)
    state = _FileImport(store, path, fmt_name, labels_as)
    with store.transaction():
        state.import_id = store.begin_import(path=str(path), sha256=_sha256(path), fmt=fmt_name)
        if labels_as is not None:
            store.register_codebook(labels_as.codebook)
        with store.bulk_actions():
            for line, item in parse_file(path, source, options):
                state.take(line, item, keep_going=skip_invalid)
            if state.problems and not skip_invalid:
                first = min(state.problems, key=lambda p: p.line)
                more = len(state.problems) - 1
                raise ImportFormatError(
                    first.where(path)
                    + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""),
                    hint="fix the file, or pass --skip-invalid to import the valid lines",
                )
            if not state.first_line:
                raise ImportFormatError(f"{path}: no actions in this file")
            state.flush()
        if source.order_by_timestamp and state.result.new_actions:
            store.resequence_by_time(state.sessions)
        if source.infer_roles and state.result.new_actions:
            store.infer_roles(state.sessions)
        store.finish_import(state.import_id, state.result.actions, state.result.new_actions)
    state.result.skipped = [p.where(path) for p in sorted(state.problems, key=lambda p: p.line)]
    return state.result


def import_files(
    store: Store,
    paths: list[Path],
    *,
    fmt: str | None = None,
    options: ImportOptions | None = None,
    skip_invalid: bool = False,
    labels_as: LabelsAs | None = None,
) -> list[FileResult]:
    """Import each file in its own transaction; a bad file stops the run at that file."""
    options = options or ImportOptions()
    files = expand(paths)
    results: list[FileResult] = []
    for index, path in enumerate(files):
        try:
            results.append(_import_one(store, path, fmt, options, skip_invalid, labels_as))
        except AnnotateError as exc:
            if len(files) > 1:
                exc.hint = "; ".join(
                    part
                    for part in (
                        exc.hint,
                        _names("already imported", files[:index]),
                        _names("not tried", files[index + 1 :]),
                    )
                    if part
                )
            raise
    return results


def _names(what: str, files: list[Path]) -> str:
    if not files:
        return ""
    shown = ", ".join(f.name for f in files[:3])
    return f"{what}: {shown}" + (f" and {len(files) - 3} more" if len(files) > 3 else "")
