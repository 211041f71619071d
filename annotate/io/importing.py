"""Import files into the store, each file all or nothing.

A problem on any line stops at that file: nothing of it is stored, the files before it are,
and the error names the first bad line (the rest of the file is still read, to say how many
more there are). With ``skip_invalid`` the bad lines are left out and listed.

Files are read one after another and written in groups: once the files read hold
:data:`GROUP_ROWS` actions (and before a bad file's error, and at the end) they are written
in one transaction, each file in turn as if alone (its own row in ``imports``; a platform
file's sessions put in time order, and roles inferred, after it). An import of 2,000 small
files is then 50 transactions, not 2,000. A file larger than a group is streamed in a
transaction of its own. A run that is killed loses the group it had not written yet: nothing
is half-written, and running the import again adds what is missing.

Time order without rewriting every row: a platform file renumbers ``seq`` by time in each
session it touches (:meth:`~annotate.store.actions.Actions.resequence_by_time`, after each
file). For a session none of whose actions were stored before the group, that numbering
depends only on the group's own rows, so it is done here, file after file exactly as the
store would (the same order: time, then the number so far, then id), before the rows are
written: each action is written once, instead of inserted, renumbered after its file and
again after the other participant's. Sessions with actions stored before the group are
renumbered by the store as before.

Into an empty ``actions`` table, the indexes the import does not read are built once at the
end of the run, not row by row in each group (``Actions.bulk_actions(defer_indexes=True)``);
a run that fails on a file builds them for the files before it, and one that dies leaves
them to the next open of the file.
"""

from __future__ import annotations

import gc
import hashlib
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import is_, itemgetter
from pathlib import Path

from annotate.codebook import Answer, LoadedCodebook
from annotate.errors import AnnotateError, ImportFormatError
from annotate.io.importers import ImportOptions, expand, parse_file, source_format
from annotate.io.importers.base import Item, Problem, SourceFormat
from annotate.models import Action, ImportedLabel
from annotate.store import CORPUS_SOURCE, LabelWrite, Store
from annotate.store.actions import ActionRow, action_row

_SESSION, _ROLE = itemgetter(1), itemgetter(3)
GROUP_ROWS = 20_000
"""Actions read before they are written (and a streamed file's batch): 20,000 rows are
about 15 MB; larger groups write no faster."""


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
    """One file: the rows and labels read and not written yet, ids seen, problems found."""

    def __init__(
        self,
        index: int,
        path: Path,
        fmt_name: str,
        source: SourceFormat,
        labels_as: LabelsAs | None,
    ):
        self.index = index
        self.path = path
        self.source = source
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
        if type(item) is list:  # an action row, straight from the parser (platform)
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

    def check(self, skip_invalid: bool) -> None:
        """The file as read can be stored: no problem (unless skipped), some action."""
        path = self.path
        if self.problems and not skip_invalid:
            first = min(self.problems, key=lambda p: p.line)
            more = len(self.problems) - 1
            raise ImportFormatError(
                first.where(path)
                + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""),
                hint="fix the file, or pass --skip-invalid to import the valid lines",
            )
        if not self.first_line:
            raise ImportFormatError(f"{path}: no actions in this file")
        self.sessions.update(map(_SESSION, self.actions))
        self.result.skipped = [p.where(path) for p in sorted(self.problems, key=lambda p: p.line)]

    def begin(self, store: Store) -> None:
        self.import_id = store.actions.begin_import(
            path=str(self.path), sha256=_sha256(self.path), fmt=self.result.format
        )

    def write(self, store: Store) -> None:
        """Insert the rows and labels read since the last write."""
        if self.actions:
            self.sessions.update(map(_SESSION, self.actions))
            self.result.actions += len(self.actions)
            new = store.actions.insert_actions(self.actions, self.import_id)
            if new < len(self.actions):  # some ids were stored before: the same actions?
                clash = store.actions.conflicting_actions(self.actions)
                if clash:
                    raise ImportFormatError(
                        f"{self.path}:{self.first_line[clash[0]]}: action id '{clash[0]}' is "
                        "already stored with another session, type or content"
                        + (f" (and {len(clash) - 1} more)" if len(clash) > 1 else ""),
                        hint="give each row a unique id (--map id=COLUMN); nothing of this "
                        "file was stored",
                    )
            self.result.new_actions += new
            self.actions = []
        if self.labels and self.labels_as is not None:
            # a label whose action was skipped as invalid is skipped with it
            kept = [w for w in self.labels if w.action_id in self.first_line]
            self.result.labels += len(kept)
            self.result.new_labels += store.labels.save_answers(
                self.labels_as.codebook.codebook, kept
            )
            self.labels = []

    def finish(self, store: Store) -> None:
        store.actions.finish_import(self.import_id, self.result.actions, self.result.new_actions)


class _WriteFailed(Exception):
    """A file of a group could not be written (the group was rolled back)."""

    def __init__(self, position: int, error: AnnotateError):
        super().__init__(str(error))
        self.position = position
        self.error = error


_TIME_ORDER = itemgetter(5, 4, 0)
"""A row's place in its session: timestamp, seq, id (``Store.resequence_by_time``'s order)."""


def _number_in_time_order(files: list[_FileImport], stored: set[str]) -> set[str]:
    """Number ``seq`` of the group's platform rows by time, file after file, as
    ``Store.resequence_by_time`` would after each file; return the sessions so numbered.

    Left to the store: sessions with actions stored before the group (``stored``) and
    sessions that a file of another format touches (its rows are not renumbered; they may
    have no time). A row whose id an earlier file of the group holds is not counted: the
    insert will ignore it (or the file fails on it)."""
    left = set(stored)
    for state in files:
        if not state.source.order_by_timestamp:
            left |= state.sessions
    seen: set[str] = set()
    rows_of: dict[str, list[ActionRow]] = {}
    numbered: set[str] = set()
    for state in files:
        # the file's ids are those of its rows (a file with a problem is not written)
        if seen.isdisjoint(state.first_line):
            fresh = state.actions
        else:
            fresh = [row for row in state.actions if row[0] not in seen]
        seen.update(state.first_line)
        if not state.source.order_by_timestamp:
            continue
        touched: dict[str, list[ActionRow]] = {}
        if len(state.sessions) == 1:  # a participant's file: one session
            (session,) = state.sessions
            if session not in left and fresh:
                touched[session] = list(fresh)
        else:
            for row in fresh:
                if row[1] not in left:
                    touched.setdefault(row[1], []).append(row)
        for session, rows in touched.items():
            in_order = rows_of.get(session)
            if in_order is None:
                in_order = rows_of[session] = rows
            else:
                in_order += rows
            in_order.sort(key=_TIME_ORDER)
            for rank, row in enumerate(in_order):
                row[4] = rank
            numbered.add(session)
    return numbered


class _Run:
    """One ``import``: the files read and not written yet, and what was written."""

    def __init__(
        self,
        store: Store,
        fmt: str | None,
        options: ImportOptions,
        skip_invalid: bool,
        labels_as: LabelsAs | None,
    ):
        self.store = store
        self.fmt = fmt
        self.options = options
        self.skip_invalid = skip_invalid
        self.labels_as = labels_as
        self.pending: list[_FileImport] = []
        self.pending_rows = 0
        self.results: list[FileResult] = []
        self.failed = 0
        """The index of the file an error is about."""

    def add(self, index: int, path: Path) -> None:
        """Read one file; write the group when it is full (or before this file's error)."""
        self.failed = index
        try:
            state, rest = self._read(index, path)
        except AnnotateError:
            self.write_pending()
            self.failed = index
            raise
        if rest is not None:
            self.write_pending()
            self.failed = index
            self._stream(state, rest)
            return
        self.pending.append(state)
        self.pending_rows += len(state.actions) + len(state.labels)
        if self.pending_rows >= GROUP_ROWS:
            self.write_pending()

    def _read(
        self, index: int, path: Path
    ) -> tuple[_FileImport, Iterator[tuple[int, Item]] | None]:
        """The file read whole; or, for a file larger than a group, its first rows and the
        rest of its lines to stream."""
        fmt_name, source = source_format(path, self.fmt)
        state = _FileImport(index, path, fmt_name, source, self.labels_as)
        items = parse_file(path, source, self.options)
        keep_going = self.skip_invalid
        take, actions, first_line = state.take, state.actions, state.first_line
        for line, item in items:
            if type(item) is list and item[0] not in first_line and not state.problems:
                first_line[item[0]] = line  # take(), for the usual row: new, no problem yet
                actions.append(item)
            else:
                take(line, item, keep_going)
            if len(actions) >= GROUP_ROWS:
                return state, items
        state.check(self.skip_invalid)
        return state, None

    def _stream(self, state: _FileImport, items: Iterator[tuple[int, Item]]) -> None:
        """A large file in a transaction of its own, written in batches as it is read."""
        store = self.store
        keep_going = self.skip_invalid
        with store.db.transaction():
            state.begin(store)
            if self.labels_as is not None:
                store.codebooks.register_codebook(self.labels_as.codebook)
            with store.actions.bulk_actions(defer_indexes=True):
                state.write(store)
                for line, item in items:
                    state.take(line, item, keep_going)
                    if len(state.actions) >= GROUP_ROWS:
                        state.write(store)
                state.check(self.skip_invalid)
                state.write(store)
            if state.result.new_actions:
                if state.source.order_by_timestamp:
                    store.actions.resequence_by_time(state.sessions)
                if state.source.infer_roles:
                    store.actions.infer_roles(state.sessions)
            state.finish(store)
        self.results.append(state.result)

    def write_pending(self) -> None:
        """Write the files read (one transaction); a file that cannot be written stops the
        run there, with the files before it written."""
        files, self.pending, self.pending_rows = self.pending, [], 0
        if not files:
            return
        self.failed = files[0].index  # a failure of the disk loses the whole group
        try:
            self._write_group(files)
        except _WriteFailed as failed:
            # the group was rolled back, renumbered rows and all: the files before the
            # failed one are read again and written without it
            again = [self._read(state.index, state.path)[0] for state in files[: failed.position]]
            if again:
                self._write_group(again)
            self.failed = files[failed.position].index
            raise failed.error from None

    def _write_group(self, group: list[_FileImport]) -> None:
        store = self.store
        with store.db.transaction():
            if self.labels_as is not None:
                store.codebooks.register_codebook(self.labels_as.codebook)
            with store.actions.bulk_actions(defer_indexes=True):
                sessions = set().union(*(state.sessions for state in group))
                stored = store.actions.stored_sessions(sessions)
                numbered = _number_in_time_order(group, stored)
                # sessions that may hold an action without a role (role inference)
                unroled = (
                    store.actions.stored_sessions(stored, without_role=True) if stored else set()
                )
                for position, state in enumerate(group):
                    try:
                        self._write_file(store, state, numbered, unroled)
                    except AnnotateError as exc:
                        raise _WriteFailed(position, exc) from exc
        self.results.extend(state.result for state in group)

    @staticmethod
    def _write_file(
        store: Store, state: _FileImport, numbered: set[str], unroled: set[str]
    ) -> None:
        source = state.source
        # the sessions of the rows without a role, found without a Python step per row
        actions = state.actions
        unroled.update(
            compress(map(_SESSION, actions), map(is_, map(_ROLE, actions), repeat(None)))
        )
        state.begin(store)
        state.write(store)
        if state.result.new_actions:
            if source.order_by_timestamp:
                left = state.sessions - numbered
                if left:
                    store.actions.resequence_by_time(left)
            if source.infer_roles:
                touched = state.sessions & unroled
                if touched:
                    store.actions.infer_roles(touched)
        state.finish(store)


def import_files(
    store: Store,
    paths: list[Path],
    *,
    fmt: str | None = None,
    options: ImportOptions | None = None,
    skip_invalid: bool = False,
    labels_as: LabelsAs | None = None,
) -> list[FileResult]:
    """Import each file whole or not at all; a bad file stops the run at that file."""
    files = expand(paths)
    run = _Run(store, fmt, options or ImportOptions(), skip_invalid, labels_as)
    try:
        with _collector_paused():
            for index, path in enumerate(files):
                run.add(index, path)
            run.write_pending()
    except AnnotateError as exc:
        # the files before it are stored: their indexes too (a failure of the disk leaves
        # them listed, for the next open of the file)
        with suppress(AnnotateError, sqlite3.Error):
            store.actions.restore_action_indexes()
        if len(files) > 1:
            exc.hint = "; ".join(
                part
                for part in (
                    exc.hint,
                    _names("already imported", files[: run.failed]),
                    _names("not tried", files[run.failed + 1 :]),
                )
                if part
            )
        raise
    store.actions.restore_action_indexes()
    return run.results


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while rows are read and written: every row is a new
    list, so it ran a collection every few hundred rows, and a full one over all the
    rows held (0.5 s of a million-action import). Rows, and what is read into them,
    hold no cycles."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _names(what: str, files: list[Path]) -> str:
    if not files:
        return ""
    shown = ", ".join(f.name for f in files[:3])
    return f"{what}: {shown}" + (f" and {len(files) - 3} more" if len(files) > 3 else "")
