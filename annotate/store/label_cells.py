"""Labels as integer cells for the statistics (`agree`, `adjudicate`): one pass over the
selected labels, in chunks of items, with the item, coder, value, question and codebook
version of each label already numbered by SQL and packed into one integer, so that no Python
object is made per label and counting stays in SQL.

A scope is a codebook, its questions, the coders and a named sample (its items are read
through ``sample_items``, never copied) or every labelled item (numbered once, in action id
order, in a temporary table).

Each chunk comes back as three comma-separated lists made by ``group_concat`` and parsed by
NumPy: the packed keys, the label ids and the labels' revisions (see migration 14). That is
a third of the cost of fetching one row tuple per label, and memory stays flat in the number
of labels.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from annotate.store.base import Database
from annotate.store.gold import label_sources, union_all

ITEMS_PER_CHUNK = 20_000
"""Items per query: large enough that each chunk is a few C-level calls, small enough that
memory stays flat."""

ANSWERED = "(l.value IS NOT NULL OR l.codes IS NOT NULL)"

CODER_BITS = 8
VALUE_BITS = 12
QUESTION_BITS = 8
VERSION_BITS = 6
UNKNOWN_VALUE = (1 << VALUE_BITS) - 2
"""The value index of a value outside the ``values`` read (the caller reads again with them)."""
UNKNOWN_VERSION = (1 << VERSION_BITS) - 1
"""The version index of a codebook version outside the ``versions`` read."""
ALL_ITEMS = "temp._agree_all_items"
"""Every labelled item of a scope without a sample, numbered in action id order."""


@dataclass(frozen=True)
class LabelScope:
    """Which labels: one codebook's questions, by these coders, on a sample's items (or on
    every labelled item when ``sample`` is None)."""

    codebook: str
    questions: tuple[str, ...]
    coders: tuple[str, ...]
    sample: str | None = None

    def where(self, *, lookup: bool = True) -> tuple[str, list[Any]]:
        """The condition on ``labels l`` (without the sample) and its parameters. Without
        ``lookup`` the questions and coders filter the rows an item's one index lookup finds
        (``+``), instead of one lookup per question and coder."""
        q = ",".join("?" * len(self.questions))
        c = ",".join("?" * len(self.coders))
        plus = "" if lookup else "+"
        sql = f"l.codebook = ? AND {plus}l.question IN ({q}) AND {plus}l.coder IN ({c})"
        return sql, [self.codebook, *self.questions, *self.coders]


@dataclass(frozen=True)
class CellChunk:
    """One chunk of a scope's answered labels, as NumPy arrays of the same length."""

    keys: Any
    """int64 keys; :func:`unpack` splits them."""
    label_ids: Any
    revisions: Any
    """int64 revisions (the digest a run keeps, to tell later which labels changed)."""


CHUNK = 1 << 15
"""Rows per fetch where rows are fetched one by one: a few C-level calls per chunk, and flat
memory."""


def sql_case(
    column: str, names: Sequence[str], default: int, start: int = 0
) -> tuple[str, list[Any]]:
    """``CASE column WHEN name0 THEN start ... ELSE default END``: names to integers in SQL."""
    if not names:
        return str(default), []
    whens = " ".join(f"WHEN ? THEN {start + i}" for i in range(len(names)))
    return f"CASE {column} {whens} ELSE {default} END", list(names)


class LabelCells:
    def __init__(self, db: Database) -> None:
        self.db = db

    def answer_counts(self, scope: LabelScope) -> tuple[dict[str, int], list[str]]:
        """Value -> how many answered labels of the scope give it, and the codebook versions
        those labels were made under (counted in SQL, from the index alone)."""
        cond, params = scope.where()
        sql = (
            f"SELECT l.value, l.codebook_hash, count(*) FROM {{labels}} WHERE {cond} AND {ANSWERED}"
        )
        if scope.sample is not None:
            sql += " AND l.action_id IN (SELECT action_id FROM sample_items WHERE sample = ?)"
            params.append(scope.sample)
        values: dict[str, int] = {}
        hashes: set[str] = set()
        for labels in label_sources(scope.coders, "labels_answered"):
            query = sql.format(labels=labels) + " GROUP BY 1, 2"
            for value, version, n in self.db.conn.execute(query, params):
                hashes.add(version)
                if value is not None:
                    values[value] = values.get(value, 0) + n
        return dict(sorted(values.items())), sorted(hashes)

    def version_hashes(self, codebook: str) -> list[str]:
        """The version hashes of ``codebook`` stored in this file."""
        return [
            r[0]
            for r in self.db.conn.execute(
                "SELECT version_hash FROM codebooks WHERE name = ? ORDER BY 1", (codebook,)
            )
        ]

    def skipped_cells(self, scope: LabelScope) -> list[tuple[str, str, str]]:
        """(action id, question, coder) of the scope's labels skipped without an answer."""
        cond, params = scope.where()
        sql = (
            "SELECT l.action_id, l.question, l.coder FROM "
            "coder_labels l INDEXED BY labels_skipped "  # gold is never skipped
            f"WHERE {cond} AND l.skipped AND l.value IS NULL AND l.codes IS NULL"
        )
        if scope.sample is not None:  # the few skipped labels, each looked up in the sample
            sql += (
                " AND EXISTS (SELECT 1 FROM sample_items s INDEXED BY sample_items_action "
                "WHERE s.sample = ? AND s.action_id = l.action_id)"
            )
            params.append(scope.sample)
        return [tuple(r) for r in self.db.conn.execute(sql + " ORDER BY 1, 3, 2", params)]

    def sample_positions_dense(self, sample: str) -> bool:
        """Whether the sample's positions are 0..n-1 (as :meth:`create_sample` numbers them)."""
        # min and max apart: each one index lookup (together, one pass over every row)
        n, low, high = self.db.conn.execute(
            "SELECT (SELECT count(*) FROM sample_items WHERE sample = ?1), "
            "(SELECT min(position) FROM sample_items WHERE sample = ?1), "
            "(SELECT max(position) FROM sample_items WHERE sample = ?1)",
            (sample,),
        ).fetchone()
        return n == 0 or (low == 0 and high == n - 1)

    def sample_positions(self, sample: str) -> Any:
        """The sample's positions in order, as a NumPy array."""
        import numpy as np

        return np.array(
            [r[0] for r in self.db.conn.execute(
                "SELECT position FROM sample_items WHERE sample = ? ORDER BY position", (sample,)
            )],
            dtype=np.int64,
        )  # fmt: skip

    def number_labelled_items(self, scope: LabelScope) -> Sequence[str]:
        """Number every item the scope (without a sample) has answered labels on, in action
        id order, in a temporary table that :meth:`label_arrays` reads; return their ids.
        Call it inside the same read snapshot as :meth:`label_arrays`."""
        assert scope.sample is None
        cond, params = scope.where()
        distinct, distinct_params = union_all(
            f"SELECT DISTINCT l.action_id FROM {{labels}} WHERE {cond} AND {ANSWERED}",
            params,
            label_sources(scope.coders, "labels_answered"),
        )
        if distinct.count(" UNION ALL "):  # an item both coders and gold answered: once
            distinct = distinct.replace(" UNION ALL ", " UNION ")
        self.db.conn.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {ALL_ITEMS.split('.')[1]} "
            "(position INTEGER PRIMARY KEY, action_id TEXT NOT NULL UNIQUE)"
        )
        self.db.conn.execute(f"DELETE FROM {ALL_ITEMS}")
        self.db.conn.execute(
            f"INSERT INTO {ALL_ITEMS} (position, action_id) "
            "SELECT row_number() OVER (ORDER BY action_id) - 1, action_id FROM "
            f"({distinct})",
            distinct_params,
        )
        from annotate.store.item_ids import ItemIds

        n, text = self.db.conn.execute(
            f"SELECT count(*), group_concat(action_id, char(10)) FROM "
            f"(SELECT action_id FROM {ALL_ITEMS} ORDER BY position)"
        ).fetchone()
        found = ItemIds.joined(text, n)
        if found is not None:
            return found
        return [r[0] for r in self.db.conn.execute(f"SELECT action_id FROM {ALL_ITEMS} ORDER BY 1")]

    def coded_sets(self, scope: LabelScope) -> Iterator[tuple[int, int, int, str]]:
        """(item position, coder index, question index, codes JSON) of the scope's labels
        with codes (multi questions, the reasons of a yes/no)."""
        items, iparams = self._items(scope)
        qcase, qparams = sql_case("l.question", scope.questions, -1)
        ccase, cparams = sql_case("l.coder", scope.coders, -1)
        cond, params = scope.where()
        for labels in label_sources(scope.coders, "labels_answered"):
            yield from self.db.conn.execute(
                f"SELECT s.position, {ccase}, {qcase}, l.codes FROM ({items}) s "
                f"CROSS JOIN {labels} ON l.action_id = s.action_id "
                f"WHERE {cond} AND l.codes IS NOT NULL",
                [*cparams, *qparams, *iparams, *params],
            )

    def _items(self, scope: LabelScope, *bounds: str) -> tuple[str, list[Any]]:
        """``SELECT action_id, position`` of the scope's items, with ``bounds`` (conditions
        on ``action_id``), and its parameters before those of the bounds."""
        if scope.sample is not None:
            table, where, params = (
                "sample_items INDEXED BY sample_items_action",
                ["sample = ?"],
                [scope.sample],
            )
        else:
            table, where, params = ALL_ITEMS, [], []
        where += bounds
        sql = f"SELECT action_id, position FROM {table}"
        return sql + (" WHERE " + " AND ".join(where) if where else ""), params

    def _item_chunks(self, scope: LabelScope) -> Iterator[tuple[str, str | None]]:
        """(after, up to) action ids of each chunk of ``ITEMS_PER_CHUNK`` items (the last
        chunk: up to None)."""
        items, params = self._items(scope, "action_id > ?")
        after = ""
        while True:
            row = self.db.conn.execute(
                f"{items} ORDER BY action_id LIMIT 1 OFFSET {ITEMS_PER_CHUNK - 1}",
                [*params, after],
            ).fetchone()
            upto = None if row is None else row[0]
            yield after, upto
            if upto is None:
                return
            after = upto

    def label_arrays_sql(
        self,
        scope: LabelScope,
        values: Sequence[str],
        versions: Sequence[str],
        *,
        last_chunk: bool = False,
    ) -> tuple[str, list[Any], list[Any]]:
        """The query of one chunk of :meth:`label_arrays`, with its parameters before and
        after the chunk's bounds (exposed for its EXPLAIN QUERY PLAN test)."""
        if len(scope.coders) >= 1 << CODER_BITS or len(scope.questions) >= 1 << QUESTION_BITS:
            raise ValueError("too many coders or questions to read at once")
        if len(values) >= UNKNOWN_VALUE or len(versions) >= UNKNOWN_VERSION:
            raise ValueError("too many distinct values or codebook versions to read at once")
        # one question: every label the WHERE keeps is question 0 (a CASE per label saved)
        qcase, qparams = (
            ("0", []) if len(scope.questions) == 1 else sql_case("l.question", scope.questions, -1)
        )
        ccase, cparams = sql_case("l.coder", scope.coders, -1)
        vcase, vparams = sql_case("l.value", values, UNKNOWN_VALUE)
        hcase, hparams = sql_case("l.codebook_hash", versions, UNKNOWN_VERSION)
        value = f"CASE WHEN l.value IS NULL THEN 0 ELSE {vcase} + 1 END"
        key = (
            f"((((s.position << {CODER_BITS} | {ccase}) << {VALUE_BITS} | {value}) "
            f"<< {QUESTION_BITS} | {qcase}) << {VERSION_BITS}) | {hcase}"
        )
        bounds = ["action_id > ?"] + ([] if last_chunk else ["action_id <= ?"])
        items, iparams = self._items(scope, *bounds)
        cond, params = scope.where(lookup=False)
        half = (
            f"SELECT {key} AS k, l.id AS id, l.revision AS revision "
            f"FROM ({items}) s "
            # +: a lookup of each item's labels, not a range scan copied from the bounds
            f"CROSS JOIN {{labels}} ON l.action_id = +s.action_id WHERE {cond} AND {ANSWERED}"
        )
        sources = label_sources(scope.coders, "labels_answered")
        inner = " UNION ALL ".join(half.format(labels=labels) for labels in sources)
        sql = f"SELECT group_concat(k), group_concat(id), group_concat(revision) FROM ({inner})"
        return sql, [*cparams, *vparams, *qparams, *hparams, *iparams], params

    def label_arrays(
        self, scope: LabelScope, values: Sequence[str], versions: Sequence[str]
    ) -> Iterator[CellChunk]:
        """The scope's answered labels, a chunk of items at a time (in action id order).

        Each key packs the item's position (in the sample, else in
        :meth:`number_labelled_items`), the coder's index in ``scope.coders``, the value's
        index in ``values`` + 1 (0: no value; ``UNKNOWN_VALUE`` + 1: not in ``values``), the
        question's index in ``scope.questions`` and the codebook version's index in
        ``versions`` (``UNKNOWN_VERSION``: not in ``versions``); :func:`unpack` splits them.
        """
        import numpy as np

        queries = {
            last: self.label_arrays_sql(scope, values, versions, last_chunk=last)
            for last in (False, True)
        }
        halves = len(label_sources(scope.coders, "labels_answered"))  # the same parameters
        for after, upto in self._item_chunks(scope):
            sql, before, rest = queries[upto is None]
            bounds = [after] if upto is None else [after, upto]
            params = [*before, *bounds, *rest] * halves
            keys, ids, revisions = self.db.conn.execute(sql, params).fetchone()
            if keys is not None:
                yield CellChunk(
                    np.fromstring(keys, dtype=np.int64, sep=","),
                    np.fromstring(ids, dtype=np.int64, sep=","),
                    np.fromstring(revisions, dtype=np.int64, sep=","),
                )


def unpack(keys: Any) -> tuple[Any, Any, Any, Any, Any]:
    """(item, coder, value index (-1: none), question, codebook version) of a NumPy array of
    keys."""
    version = keys & ((1 << VERSION_BITS) - 1)
    rest = keys >> VERSION_BITS
    question = rest & ((1 << QUESTION_BITS) - 1)
    rest >>= QUESTION_BITS
    value = (rest & ((1 << VALUE_BITS) - 1)) - 1
    rest >>= VALUE_BITS
    coder = rest & ((1 << CODER_BITS) - 1)
    return rest >> CODER_BITS, coder, value, question, version
