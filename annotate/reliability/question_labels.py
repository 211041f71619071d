"""The selected labels as item x coder integer codes, read in one pass (`agree`).

The labels are read a chunk of items at a time with the item, coder, value, question and
codebook version already numbered by SQL
(:meth:`~annotate.store.label_cells.LabelCells.label_arrays`): each chunk is a few NumPy
arrays, and no object is kept per label. What a run keeps of each label is its id and
revision (migration 14), from the same pass.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from annotate.codebook import NO, OTHER, Question
from annotate.store.item_ids import ItemIds
from annotate.store.label_cells import UNKNOWN_VALUE, UNKNOWN_VERSION, LabelScope, unpack

if TYPE_CHECKING:
    from annotate.reliability.selection import Selection
    from annotate.store import Store


@dataclass(frozen=True)
class QuestionData:
    """One question's answers by the selected coders, as an item x coder table of codes."""

    question: Question
    coders: tuple[str, ...]
    items: Sequence[str]
    """Items answered by at least one selected coder, in sample (else id) order."""
    codes: np.ndarray
    """``codes[i, j]``: index into ``names`` of coder j's value for item i; -1 for none."""
    names: tuple[str, ...]
    """The values ``codes`` numbers (``yes``/``no`` for yes/no questions)."""
    sets: dict[tuple[int, int], frozenset[str]]
    """(item row, coder column) -> the chosen set (multi) or the reasons of a ``no``."""
    skipped: dict[str, tuple[str, ...]]
    """Item -> coders who skipped it."""
    not_coded: tuple[tuple[str, str], ...]
    """Sample items no selected coder answered, with the reason."""
    n_labels: int = 0
    """Answered labels read (cells of the table)."""

    @property
    def kind(self) -> str:
        return self.question.kind

    def value_row(self, i: int) -> tuple[str | None, ...]:
        """Each coder's value for item row ``i`` (None: no value)."""
        return tuple(self.names[k] if k >= 0 else None for k in self.codes[i].tolist())

    def set_row(self, i: int) -> tuple[frozenset[str] | None, ...]:
        return tuple(self.sets.get((i, j)) for j in range(len(self.coders)))

    def value_counts(self) -> dict[str, int]:
        """Value -> answers giving it."""
        given = self.codes[self.codes >= 0]
        counts = np.bincount(given, minlength=len(self.names)) if given.size else []
        return {n: int(c) for n, c in zip(self.names, counts, strict=False) if c}

    def restricted(self, ids: Collection[str]) -> QuestionData:
        """The same table over the items of ``ids`` only (in the same order)."""
        wanted = set(ids)
        keep = [i for i, item in enumerate(self.items) if item in wanted]
        row_of = {old: new for new, old in enumerate(keep)}
        items: Sequence[str]
        if isinstance(self.items, ItemIds):
            items = self.items.take(np.asarray(keep, dtype=np.intp))
        else:
            items = tuple(self.items[i] for i in keep)
        return replace(
            self,
            items=items,
            codes=self.codes[keep] if keep else self.codes[:0],
            sets={(row_of[i], j): v for (i, j), v in self.sets.items() if i in row_of},
            skipped={k: v for k, v in self.skipped.items() if k in wanted},
            not_coded=tuple((i, r) for i, r in self.not_coded if i in wanted),
            n_labels=int((self.codes[keep] >= 0).sum()) if keep else 0,
        )

    def differing(self) -> list[int]:
        """Rows where the coders who answered did not all give the same answer."""
        if not len(self.items):
            return []
        present = self.codes >= 0
        high = np.where(present, self.codes, -1).max(axis=1)
        low = np.where(present, self.codes, np.iinfo(self.codes.dtype).max).min(axis=1)
        differ = set(np.flatnonzero((high >= 0) & (low != high)).tolist())
        for i in {i for i, _ in self.sets}:  # answers with sets: compare (value, set) pairs
            values, sets = self.value_row(i), self.set_row(i)
            answers = {(v, s) for v, s in zip(values, sets, strict=True) if v is not None or s}
            if len(answers) > 1:
                differ.add(i)
            else:
                differ.discard(i)
        return sorted(differ)


@dataclass
class LabelsRead:
    """What a run read, for its provenance: the label ids with the revision of each (the
    hash of its content, see :mod:`annotate.store.revisions`), sorted by id, the SHA-256 of
    the revisions, and the codebook versions the labels were made under."""

    label_ids: np.ndarray
    revisions: np.ndarray
    labels_hash: str
    codebook_hashes: tuple[str, ...]

    @property
    def n_labels(self) -> int:
        return len(self.label_ids)


@dataclass
class _Cells:
    """One question's cells, gathered chunk by chunk."""

    items: list[np.ndarray] = field(default_factory=list)
    coders: list[np.ndarray] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)
    sets: list[tuple[int, int, str]] = field(default_factory=list)
    """(item, coder, codes JSON) of answers with codes."""


def labels_hash_of(revisions: np.ndarray) -> str:
    """SHA-256 of the labels' revisions (the hashes of their contents) in sorted order: the
    same labels hash the same, in this file or in another."""
    ordered = np.sort(revisions.view(np.uint64)).astype(">u8")
    return hashlib.sha256(memoryview(ordered).cast("B")).hexdigest()


def _expected_values(questions: Sequence[Question]) -> list[str]:
    """The values the questions' labels are expected to hold (each question's codes and
    Other); a label with another value makes the read start again with the values counted."""
    return sorted({c for q in questions for c in q.codes} | {OTHER})


def read_questions(store: Store, selection: Selection) -> tuple[list[QuestionData], LabelsRead]:
    """Every selected question's table and what was read, in one pass (call it inside
    ``store.db.read_snapshot()``)."""
    questions = selection.questions
    scope = LabelScope(
        selection.codebook.name,
        tuple(q.id for q in questions),
        tuple(selection.coders),
        selection.sample if selection.action_ids is not None else None,
    )
    id_of: Sequence[str]
    if scope.sample is None:
        id_of = store.label_cells.number_labelled_items(scope)
    else:
        id_of = selection.action_ids or ()
    values = _expected_values(questions)
    versions = store.label_cells.version_hashes(scope.codebook)
    read = _read_cells(store, scope, values, versions)
    if read is None:  # a value or version outside those expected: count them, read again
        counted, versions = store.label_cells.answer_counts(scope)
        values = sorted(counted)
        read = _read_cells(store, scope, values, versions)
        assert read is not None
    cells, labels = read
    if any(q.kind != "single" for q in questions):
        for item, coder, q, raw in store.label_cells.coded_sets(scope):
            cells[q].sets.append((item, coder, raw))
    if scope.sample is not None and not store.label_cells.sample_positions_dense(scope.sample):
        position = store.label_cells.sample_positions(scope.sample)  # renumber: positions with gaps
        for c in cells:
            c.items = [np.searchsorted(position, x) for x in c.items]
            c.sets = [(int(np.searchsorted(position, p)), j, raw) for p, j, raw in c.sets]
    skipped_rows = store.label_cells.skipped_cells(scope)
    names = tuple(values)
    datas = []
    for question, c in zip(questions, cells, strict=True):
        skipped: dict[str, list[str]] = {}
        for action_id, qid, coder_name in skipped_rows:
            if qid == question.id:
                skipped.setdefault(action_id, []).append(coder_name)
        datas.append(_table(store, selection, question, c, names, id_of, skipped))
    return datas, labels


def _read_cells(
    store: Store, scope: LabelScope, values: Sequence[str], versions: Sequence[str]
) -> tuple[list[_Cells], LabelsRead] | None:
    """Each question's cells and what was read; None when a label holds a value or a
    codebook version outside ``values`` and ``versions``."""
    cells = [_Cells() for _ in scope.questions]
    ids: list[np.ndarray] = []
    revisions: list[np.ndarray] = []
    used = np.zeros(len(versions), dtype=bool)
    for chunk in store.label_cells.label_arrays(scope, values, versions):
        item, coder, value, q, version = unpack(chunk.keys)
        if (value == UNKNOWN_VALUE).any() or (version == UNKNOWN_VERSION).any():
            return None
        used[version] = True
        ids.append(chunk.label_ids)
        revisions.append(chunk.revisions)
        item, coder, value = item.astype(np.int32), coder.astype(np.int16), value.astype(np.int16)
        for k, c in enumerate(cells):
            mine = q == k if len(cells) > 1 else slice(None)
            c.items.append(item[mine])
            c.coders.append(coder[mine])
            c.values.append(value[mine])
    # sorted by id, holding as few copies at a time as can be (3M labels: 24 MB each)
    label_ids = np.concatenate(ids) if ids else np.empty(0, dtype=np.int64)
    ids.clear()
    order = _id_order(label_ids)
    label_ids = label_ids[order]
    revision = np.concatenate(revisions) if revisions else np.empty(0, dtype=np.int64)
    revisions.clear()
    revision = revision[order]
    del order
    found = tuple(v for v, u in zip(versions, used.tolist(), strict=True) if u)
    return cells, LabelsRead(label_ids, revision, labels_hash_of(revision), found)


def _id_order(ids: np.ndarray) -> np.ndarray:
    """The order that sorts ``ids`` (distinct label ids): where they span at most a few times
    their number (the usual case: labels are numbered as they are written), each id's place
    is marked in an array over the span, which is linear; otherwise a sort."""
    if len(ids) == 0:
        return np.empty(0, dtype=np.intp)
    low = int(ids.min())
    span = int(ids.max()) - low + 1
    if span > 4 * len(ids) or len(ids) >= 1 << 31:
        return np.argsort(ids, kind="stable")
    place = np.full(span, -1, dtype=np.int32)  # half of intp: 3M labels at 1M items
    place[ids - low] = np.arange(len(ids), dtype=np.int32)
    return place[place >= 0]


def _table(
    store: Store,
    selection: Selection,
    question: Question,
    c: _Cells,
    names: tuple[str, ...],
    id_of: Sequence[str],
    skipped: dict[str, list[str]],
) -> QuestionData:
    coders = tuple(selection.coders)
    item = np.concatenate(c.items) if c.items else np.empty(0, dtype=np.int32)
    n_labels = len(item)
    coder = np.concatenate(c.coders) if c.coders else np.empty(0, dtype=np.int16)
    value = np.concatenate(c.values) if c.values else np.empty(0, dtype=np.int16)
    # the rated items' positions (in the sample, else in id order) and each cell's row:
    # counting over positions, linear where np.unique would sort
    present = np.zeros(max(len(id_of), int(item.max()) + 1 if item.size else 0), dtype=bool)
    present[item] = True
    rated = np.flatnonzero(present)
    every = len(rated) == len(present)
    row = item if every else (np.cumsum(present, dtype=np.int32) - 1)[item]
    del present
    dtype = np.int16 if len(names) < np.iinfo(np.int16).max else np.int32
    codes = np.full((len(rated), len(coders)), -1, dtype=dtype)
    codes[row, coder] = value
    del item, coder, value, row
    row_of = dict(zip(rated.tolist(), range(len(rated)), strict=True)) if c.sets else {}
    sets: dict[tuple[int, int], frozenset[str]] = {}
    for number, j, raw in c.sets:
        i = row_of[number]
        v = codes[i, j]
        if question.kind == "multi" or (
            question.kind == "yes_no_reasons" and v >= 0 and names[v] == NO
        ):
            sets[(i, j)] = frozenset(json.loads(raw))
    items: Sequence[str]
    if isinstance(id_of, ItemIds):  # no Python string per item
        items = id_of if every else id_of.take(rated)
    else:
        items = tuple(id_of) if every else tuple(id_of[p] for p in rated.tolist())
    not_coded: list[tuple[str, str]] = []
    if selection.action_ids is not None and len(rated) < len(id_of):
        answered = np.zeros(len(id_of), dtype=bool)
        answered[rated] = True
        missing = [id_of[p] for p in np.flatnonzero(~answered).tolist()]
        types = store.actions.action_types_by_id(missing)
        cb = selection.codebook
        for i in missing:
            kind = types[i]
            if not question.applies(kind) or not cb.applies(kind):
                reason = f"The question does not apply to {kind} actions."
            elif skipped.get(i):
                who = ", ".join(repr(c) for c in skipped[i])
                reason = f"Skipped by {who}; answered by no coder."
            else:
                reason = "Answered by no coder yet."
            not_coded.append((i, reason))
    return QuestionData(
        question=question,
        coders=coders,
        items=items,
        codes=codes,
        names=names,
        sets=sets,
        skipped={k: tuple(v) for k, v in skipped.items()},
        not_coded=tuple(not_coded),
        n_labels=n_labels,
    )
