"""The selected labels as item x coder integer codes, read in one pass (`agree`).

One query per run reads every selected label in the order of (item, question, coder), with
the question, coder and value already numbered by SQL, in chunks: each chunk becomes NumPy
arrays, the content of each label is hashed (its digest, and the run's ``labels_hash``, in
that same order), and no object is kept per label but its id and digest. Counting (which
values occur, which codebook versions) is done on the values read in that same pass.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from annotate.codebook import NO, Question
from annotate.store.label_cells import LabelScope, label_content, unpack

if TYPE_CHECKING:
    from annotate.reliability.agreement_data import Selection
    from annotate.store import Store


@dataclass(frozen=True)
class QuestionData:
    """One question's answers by the selected coders, as an item x coder table of codes."""

    question: Question
    coders: tuple[str, ...]
    items: tuple[str, ...]
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
    """What a run read, for its provenance: the label ids with the digest of each (the
    first 8 bytes of its SHA-256 as an unsigned integer: ``f"{d:016x}"`` is
    :func:`label_digest`), sorted by id, the SHA-256 of all their content in (item,
    question, coder) order, and the codebook versions they were made under."""

    label_ids: np.ndarray
    digests: np.ndarray
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
    sets: list[tuple[Any, int, str]] = field(default_factory=list)
    """(item, coder, codes JSON) of answers with codes."""


def read_questions(store: Store, selection: Selection) -> tuple[list[QuestionData], LabelsRead]:
    """Every selected question's table and what was read, in one pass (call it inside
    ``store.read_snapshot()``)."""
    questions = selection.questions
    scope = LabelScope(
        selection.codebook.name,
        tuple(q.id for q in questions),
        tuple(selection.coders),
        selection.sample if selection.action_ids is not None else None,
    )
    value_of: dict[str | None, int] = {None: -1}  # value -> number, in the order first read
    versions: set[str] = set()
    id_parts: list[np.ndarray] = []
    digest_parts: list[np.ndarray] = []
    cells = [_Cells() for _ in questions]
    item_index: dict[str, int] = {}  # action id -> number (no sample: ids in sorted order)
    with_codes = any(q.kind != "single" for q in questions)
    total = hashlib.sha256(b"[")
    first = True
    for rows in store.label_cells(scope, None, with_codes=with_codes):
        columns = list(zip(*rows, strict=True))
        item, coder, _, q = unpack(np.array(columns[0], dtype=np.int64))
        number = value_of.setdefault
        value = np.array([number(v, len(value_of) - 1) for v in columns[3]], dtype=np.int32)
        versions.update(columns[4])
        at = 5
        if scope.sample is None:
            item = np.array([item_index.setdefault(a, len(item_index)) for a in columns[at]])
            at += 1
        id_parts.append(np.array(columns[1], dtype=np.int64))
        encoded = columns[2] if columns[2][0] is not None else _contents(rows, at)
        total.update((b"" if first else b",") + b",".join(encoded))
        first = False
        sha256 = hashlib.sha256
        heads = b"".join([sha256(b).digest()[:8] for b in encoded])
        digest_parts.append(np.frombuffer(heads, dtype=">u8").astype(np.uint64))
        for k, c in enumerate(cells):
            mine = q == k
            c.items.append(item[mine])
            c.coders.append(coder[mine])
            c.values.append(value[mine])
        if with_codes:
            for n, raw in enumerate(columns[at]):
                if raw is not None:
                    cells[q[n]].sets.append((int(item[n]), int(coder[n]), raw))
    total.update(b"]")
    names = tuple(sorted(v for v in value_of if v is not None))
    if names:  # first-read numbers -> positions in the sorted names
        sorted_at = np.empty(len(names), dtype=np.int32)
        rank = {v: k for k, v in enumerate(names)}
        for v, k in value_of.items():
            if v is not None:
                sorted_at[k] = rank[v]
        for c in cells:
            c.values = [np.where(v >= 0, sorted_at[np.maximum(v, 0)], -1) for v in c.values]
    label_ids = np.concatenate(id_parts) if id_parts else np.empty(0, dtype=np.int64)
    digests = np.concatenate(digest_parts) if digest_parts else np.empty(0, dtype=np.uint64)
    order = np.argsort(label_ids, kind="stable")
    read = LabelsRead(label_ids[order], digests[order], total.hexdigest(), tuple(sorted(versions)))
    ids = selection.action_ids
    id_of = ids if ids is not None else list(item_index)
    if scope.sample is not None and not store.sample_positions_dense(scope.sample):
        position = store.sample_positions(scope.sample)  # renumber: positions with gaps
        for c in cells:
            c.items = [np.searchsorted(position, x) for x in c.items]
            c.sets = [(int(np.searchsorted(position, p)), j, raw) for p, j, raw in c.sets]
    skipped_rows = store.skipped_cells(scope)
    datas = []
    for question, c in zip(questions, cells, strict=True):
        skipped: dict[str, list[str]] = {}
        for action_id, qid, coder_name in skipped_rows:
            if qid == question.id:
                skipped.setdefault(action_id, []).append(coder_name)
        datas.append(_table(store, selection, question, c, names, id_of, skipped))
    return datas, read


def _contents(rows: Iterable[tuple[Any, ...]], at: int) -> list[bytes]:
    """The content JSON of each row, made in Python (this SQLite's JSON differs): the row
    holds the codes and the fields from column ``at`` on."""
    keys = ("codes", "action_id", "question", "coder", "value", "other_text", "codebook_hash")
    out = []
    for r in rows:
        row = dict(zip(keys, r[at:], strict=True))
        row["codes"] = tuple(json.loads(row["codes"])) if row["codes"] else ()
        out.append(label_content(row).encode())
    return out


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
    item = np.concatenate(c.items) if c.items else np.empty(0, dtype=np.int64)
    coder = np.concatenate(c.coders) if c.coders else np.empty(0, dtype=np.int32)
    value = np.concatenate(c.values) if c.values else np.empty(0, dtype=np.int32)
    rated, row = np.unique(item, return_inverse=True)  # sample positions (else id order)
    dtype = np.int16 if len(names) < np.iinfo(np.int16).max else np.int32
    codes = np.full((len(rated), len(coders)), -1, dtype=dtype)
    codes[row, coder] = value
    row_of = dict(zip(rated.tolist(), range(len(rated)), strict=True)) if c.sets else {}
    sets: dict[tuple[int, int], frozenset[str]] = {}
    for number, j, raw in c.sets:
        i = row_of[number]
        v = codes[i, j]
        if question.kind == "multi" or (
            question.kind == "yes_no_reasons" and v >= 0 and names[v] == NO
        ):
            sets[(i, j)] = frozenset(json.loads(raw))
    items = tuple(id_of[p] for p in rated.tolist())
    not_coded: list[tuple[str, str]] = []
    if selection.action_ids is not None and len(rated) < len(id_of):
        answered = np.zeros(len(id_of), dtype=bool)
        answered[rated] = True
        missing = [id_of[p] for p in np.flatnonzero(~answered).tolist()]
        types = store.action_types_by_id(missing)
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
        n_labels=len(item),
    )
