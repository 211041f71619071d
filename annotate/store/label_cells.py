"""Labels as integer cells for the statistics (`agree`, `adjudicate`): one ordered pass over
the selected labels, read in chunks, with the codes already mapped to integers in SQL, so
that no row object is made per label and counting stays in SQL.

A scope is a codebook, its questions, the coders and a named sample (its items are read
through ``sample_items``, never copied into a temporary table) or every labelled item.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from annotate.store.base import StoreBase

CHUNK = 1 << 15
"""Rows per fetch: large enough that each chunk is a few C-level calls, small enough that
memory stays flat."""

ANSWERED = "(l.value IS NOT NULL OR l.codes IS NOT NULL)"

CONTENT_SQL = (
    "json_array(l.action_id, l.question, l.coder, l.value, json(coalesce(l.codes, '[]')), "
    "l.other_text, l.codebook_hash)"
)
"""A label's content as compact JSON, the text :func:`label_content` makes in Python (its
digest is what `agree --run` compares). ``json(codes)`` keeps the stored text's escapes:
codes are ``[A-Za-z0-9_-]`` (the codebook schema), so their JSON has none."""


def label_content(row: dict[str, Any]) -> str:
    """A label's content (item, question, coder, answer, codebook version) as compact JSON."""
    return json.dumps(
        [
            row["action_id"],
            row["question"],
            row["coder"],
            row["value"],
            list(row["codes"] or ()),
            row["other_text"],
            row["codebook_hash"],
        ],
        ensure_ascii=False,
        separators=(",", ":"),
    )


@cache
def sql_content_matches(conn_version: str) -> bool:
    """Whether this SQLite's ``json_array`` writes exactly what :func:`label_content` writes
    (escapes of quotes, backslashes, control characters; non-ASCII as is). Checked once per
    SQLite version; otherwise the content is made in Python."""
    import sqlite3

    probe = {
        "action_id": 'a"\\\n\t\x01\x7f',
        "question": "é中\u2028",
        "coder": "c\b\f\r",
        "value": None,
        "codes": ("x", "y"),
        "other_text": "/",
        "codebook_hash": "h",
    }
    conn = sqlite3.connect(":memory:")
    try:
        made = conn.execute(
            "SELECT json_array(?, ?, ?, ?, json(?), ?, ?)",
            (
                probe["action_id"],
                probe["question"],
                probe["coder"],
                probe["value"],
                json.dumps(list(probe["codes"])),
                probe["other_text"],
                probe["codebook_hash"],
            ),
        ).fetchone()[0]
    except sqlite3.Error:
        return False
    finally:
        conn.close()
    return made == label_content(probe)


@dataclass(frozen=True)
class LabelScope:
    """Which labels: one codebook's questions, by these coders, on a sample's items (or on
    every labelled item when ``sample`` is None)."""

    codebook: str
    questions: tuple[str, ...]
    coders: tuple[str, ...]
    sample: str | None = None

    def where(self) -> tuple[str, list[Any]]:
        """The condition on ``labels l`` (without the sample) and its parameters."""
        q = ",".join("?" * len(self.questions))
        c = ",".join("?" * len(self.coders))
        sql = f"l.codebook = ? AND l.question IN ({q}) AND l.coder IN ({c})"
        return sql, [self.codebook, *self.questions, *self.coders]


def _case(column: str, names: Sequence[str], default: int = -1) -> tuple[str, list[Any]]:
    """``CASE column WHEN name0 THEN 0 ... ELSE default END``: names to integers in SQL."""
    if not names:
        return str(default), []
    whens = " ".join(f"WHEN ? THEN {i}" for i in range(len(names)))
    return f"CASE {column} {whens} ELSE {default} END", list(names)


class LabelCellsMixin(StoreBase):
    def answer_counts(self, scope: LabelScope) -> tuple[dict[str, int], list[str]]:
        """Value -> how many answered labels of the scope give it, and the codebook versions
        those labels were made under (counted in SQL, from the index alone)."""
        cond, params = scope.where()
        sql = (
            "SELECT l.value, l.codebook_hash, count(*) FROM labels l INDEXED BY labels_answered "
            f"WHERE {cond} AND {ANSWERED}"
        )
        if scope.sample is not None:
            sql += " AND l.action_id IN (SELECT action_id FROM sample_items WHERE sample = ?)"
            params.append(scope.sample)
        values: dict[str, int] = {}
        hashes: set[str] = set()
        for value, version, n in self.conn.execute(sql + " GROUP BY 1, 2 ORDER BY 1", params):
            hashes.add(version)
            if value is not None:
                values[value] = values.get(value, 0) + n
        return values, sorted(hashes)

    def skipped_cells(self, scope: LabelScope) -> list[tuple[str, str, str]]:
        """(action id, question, coder) of the scope's labels skipped without an answer."""
        cond, params = scope.where()
        sql = (
            "SELECT l.action_id, l.question, l.coder FROM labels l INDEXED BY labels_skipped "
            f"WHERE {cond} AND l.skipped AND l.value IS NULL AND l.codes IS NULL"
        )
        if scope.sample is not None:
            sql += " AND l.action_id IN (SELECT action_id FROM sample_items WHERE sample = ?)"
            params.append(scope.sample)
        return [tuple(r) for r in self.conn.execute(sql + " ORDER BY 1, 3, 2", params)]

    def sample_positions_dense(self, sample: str) -> bool:
        """Whether the sample's positions are 0..n-1 (as :meth:`create_sample` numbers them)."""
        n, low, high = self.conn.execute(
            "SELECT count(*), min(position), max(position) FROM sample_items WHERE sample = ?",
            (sample,),
        ).fetchone()
        return n == 0 or (low == 0 and high == n - 1)

    def sample_positions(self, sample: str) -> Any:
        """The sample's positions in order, as a NumPy array."""
        import numpy as np

        return np.array(
            [r[0] for r in self.conn.execute(
                "SELECT position FROM sample_items WHERE sample = ? ORDER BY position", (sample,)
            )],
            dtype=np.int64,
        )  # fmt: skip

    def label_cells_sql(
        self, scope: LabelScope, values: Sequence[str] | None, *, with_codes: bool = False
    ) -> tuple[str, list[Any]]:
        """The query of :meth:`label_cells` (exposed for its EXPLAIN QUERY PLAN test)."""
        if len(scope.coders) >= 1 << CODER_BITS or len(scope.questions) >= 1 << QUESTION_BITS:
            raise ValueError("too many coders or questions to read at once")
        if values is not None and len(values) + 1 >= 1 << VALUE_BITS:
            raise ValueError("too many distinct values to read at once")
        qcase, qparams = _case("l.question", scope.questions)
        ccase, cparams = _case("l.coder", scope.coders)
        vcase, vparams = _case("l.value", values) if values is not None else ("-1", [])
        item = "s.position" if scope.sample is not None else "0"
        key = (
            f"((({item} << {CODER_BITS} | {ccase}) << {VALUE_BITS} | ({vcase} + 1)) "
            f"<< {QUESTION_BITS}) | {qcase}"
        )
        in_sql = sql_content_matches(_version())
        made = f"CAST({CONTENT_SQL} AS BLOB)" if in_sql else "NULL"
        columns = f"{key}, l.id, {made}"
        if values is None:
            columns += ", l.value, l.codebook_hash"
        if scope.sample is None:
            columns += ", l.action_id"
        if with_codes or not in_sql:
            columns += ", l.codes"
        if not in_sql:
            columns += ", l.action_id, l.question, l.coder, l.value, l.other_text, l.codebook_hash"
        cond, params = scope.where()
        wanted = f"{cond} AND {ANSWERED}"
        head = [*cparams, *vparams, *qparams]  # in the order the key uses them
        if scope.sample is not None:
            sql = (
                f"SELECT {columns} FROM sample_items s INDEXED BY sample_items_action "
                "CROSS JOIN labels l INDEXED BY labels_answered ON l.action_id = s.action_id "
                f"WHERE s.sample = ? AND {wanted} ORDER BY s.action_id, l.question, l.coder"
            )
            return sql, [*head, scope.sample, *params]
        sql = (
            f"SELECT {columns} FROM labels l INDEXED BY labels_answered "
            f"WHERE {wanted} ORDER BY l.action_id, l.question, l.coder"
        )
        return sql, [*head, *params]

    def label_cells(
        self, scope: LabelScope, values: Sequence[str] | None, *, with_codes: bool = False
    ) -> Iterator[list[tuple[Any, ...]]]:
        """The scope's answered labels, in chunks of rows ordered by item id, question and
        coder. Each row is:

        - a key packing the item's sample position (0 without a sample), the coder's index
          in ``scope.coders``, the value's index in ``values`` + 1 (0: no value) and the
          question's index in ``scope.questions`` (:func:`unpack` splits a NumPy array of
          keys);
        - the label id;
        - its content as compact UTF-8 JSON (see :func:`label_content`), or None when this
          SQLite writes JSON differently: the row then ends with the codes, action id,
          question, coder, value, other text and codebook hash, to make it in Python;
        - with ``values`` None, the value and the codebook hash (the key's value index is
          then -1: the caller numbers the values, and no ``GROUP BY`` pass finds them first);
        - without a sample, the action id; with ``with_codes``, the codes (JSON).
        """
        sql, params = self.label_cells_sql(scope, values, with_codes=with_codes)
        cursor = self.conn.execute(sql, params)
        while rows := cursor.fetchmany(CHUNK):
            yield rows


CODER_BITS = 8
VALUE_BITS = 12
QUESTION_BITS = 8


def unpack(keys: Any) -> tuple[Any, Any, Any, Any]:
    """(item, coder, value index (-1: none), question) of a NumPy array of keys."""
    question = keys & ((1 << QUESTION_BITS) - 1)
    rest = keys >> QUESTION_BITS
    value = (rest & ((1 << VALUE_BITS) - 1)) - 1
    rest >>= VALUE_BITS
    coder = rest & ((1 << CODER_BITS) - 1)
    return rest >> CODER_BITS, coder, value, question


def _version() -> str:
    import sqlite3

    return sqlite3.sqlite_version
