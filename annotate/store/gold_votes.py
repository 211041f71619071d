"""The reads and the bulk write of adjudication (`annotate adjudicate`): the coders' answers
as one small row per item and question (their vote pattern, packed in SQL), the flags and
the gold already stored, and the majority gold written with one ``INSERT ... SELECT``.

At corpus scale (1M items x 3 coders) no Python object is made per label: SQLite groups
the labels of an item and question in its ordered pass over the covering index
``labels_answered`` and packs the coders' value numbers into one integer; only answers a
number cannot say (codes, an "Other" text, a value the codebook does not list) come as
JSON, which the few such labels cost.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from annotate.coders import GOLD
from annotate.store.base import Database, codes_json, dumps, now
from annotate.store.gold import labels_from
from annotate.store.label_cells import ANSWERED, CHUNK, LabelScope, sql_case
from annotate.store.labels import decoded_label
from annotate.store.revisions import answer_tail, item_revision

if TYPE_CHECKING:
    from annotate.codebook import Answer, Codebook
    from annotate.store.gold import Gold

PATTERN_BITS = 62
"""The coders' value numbers are packed into one SQLite integer while they fit in this
many bits; past that (many coders, many codes) the pattern is a text ``"coder:number,..."``."""


GOLD_UPSERT = (
    "ON CONFLICT (codebook, action_id, question) DO UPDATE SET answer = excluded.answer, "
    # the same answer with other provenance (the votes behind it): the revision stays
    "revision = CASE WHEN (SELECT a.value IS b.value AND a.codes IS b.codes "
    "AND a.other_text IS b.other_text AND a.codebook_hash IS b.codebook_hash "
    "FROM gold_answers a, gold_answers b WHERE a.id = old.answer "
    "AND b.id = excluded.answer) THEN old.revision ELSE excluded.revision END, "
    "created_at = CASE WHEN (SELECT a.value IS NULL AND a.codes IS NULL "
    "FROM gold_answers a WHERE a.id = old.answer) THEN excluded.created_at "
    "ELSE old.created_at END, updated_at = excluded.updated_at "
    "WHERE old.answer IS NOT excluded.answer"
)
"""The upsert of a bulk write of gold (``INSERT INTO gold AS old``), as :meth:`save_gold`
makes it: a gold whose answer and provenance are unchanged stays as it was; the time of
the first answer is kept."""


@dataclass(frozen=True)
class VoteScope:
    """What `adjudicate` reads: a label scope, and the values its SQL numbers (1..n, in
    this order; anything else comes as JSON with the label's answer)."""

    labels: LabelScope
    values: tuple[str, ...]

    @property
    def value_bits(self) -> int:
        return (len(self.values) + 1).bit_length()

    @property
    def packed(self) -> bool:
        """Whether a pattern is one integer (else a text)."""
        return len(self.labels.coders) * self.value_bits <= PATTERN_BITS


@dataclass(frozen=True)
class GoldKind:
    """One distinct majority gold: the answer and provenance many items share."""

    question: str
    value: str | None
    codes: str | None
    """The codes as the store keeps them (a sorted JSON list), or None."""
    other_text: str | None
    meta: str
    """The provenance as the store keeps it (:func:`annotate.store.base.dumps`)."""

    @classmethod
    def of(cls, question: str, answer: Answer, meta: dict[str, Any]) -> GoldKind:
        """The answer and provenance as :meth:`save_gold` stores them."""
        return cls(question, answer.value, codes_json(answer), answer.other_text, dumps(meta))


def _source(scope: LabelScope, index: str, through_sample: bool) -> tuple[str, str, str, list[Any]]:
    """(item column, tables, condition, parameters) of a pass over the scope's labels:
    through the sample's items in id order (the item is the position), or over ``index``
    alone (the item is the action id; the sample is not applied)."""
    cond, params = scope.where()
    labels = labels_from(scope.coders, index)
    if not through_sample:
        return "l.action_id", labels, cond, params
    assert scope.sample is not None
    tables = (
        f"sample_items s INDEXED BY sample_items_action CROSS JOIN {labels} "
        "ON l.action_id = s.action_id"
    )
    return "s.position", tables, f"s.sample = ? AND {cond}", [scope.sample, *params]


class GoldVotes:
    def __init__(self, db: Database, gold: Gold) -> None:
        self.db = db
        self.gold = gold

    def vote_patterns_sql(
        self, scope: VoteScope, *, through_sample: bool = False
    ) -> tuple[str, list[Any]]:
        """The query of :meth:`vote_patterns` (exposed for its EXPLAIN QUERY PLAN test)."""
        labels = scope.labels
        ccase, cparams = sql_case("l.coder", labels.coders, -1)
        qcase, qparams = sql_case("l.question", labels.questions, -1)
        vcase, vparams = sql_case("l.value", scope.values, len(scope.values) + 1, start=1)
        if scope.packed:
            pattern = f"sum({vcase} << ({ccase} * {scope.value_bits}))"
            pparams = [*vparams, *cparams]
        else:
            pattern = f"group_concat({ccase} || ':' || {vcase})"
            pparams = [*cparams, *vparams]
        known = ",".join("?" * len(scope.values))
        rich = "l.codes IS NOT NULL OR l.other_text IS NOT NULL OR l.value IS NULL" + (
            f" OR l.value NOT IN ({known})" if scope.values else ""
        )
        columns = (
            f"{qcase}, {pattern}, group_concat(CASE WHEN {rich} THEN "
            f"json_array({ccase}, l.value, l.codes, l.other_text) END)"
        )
        item, source, cond, params = _source(labels, "labels_answered", through_sample)
        sql = (
            f"SELECT {item}, {columns} FROM {source} WHERE {cond} AND {ANSWERED} "
            f"GROUP BY {item}, l.question"
        )
        return sql, [*qparams, *pparams, *scope.values, *cparams, *params]

    def vote_patterns(
        self, scope: VoteScope, *, through_sample: bool = False
    ) -> Iterator[list[tuple[Any, ...]]]:
        """The scope's answered labels, one row per item and question, in chunks. Each row
        is: the item; the question's index in ``scope.labels.questions``; the vote
        pattern; and None, or the JSON arrays (``[coder, value, codes, other_text]``,
        comma-separated) of the labels whose answer is more than a listed value (codes,
        an "Other" text, an unlisted value).

        The pattern, with :attr:`VoteScope.packed`, is the sum of each answering coder's
        value number (1 + the value's index in ``scope.values``, ``len(values) + 1`` for
        any other) shifted left by the coder's index times :attr:`VoteScope.value_bits`;
        else the text ``"coder:number,..."``.

        The item is the action id, in id order, and the scope's sample is not applied:
        every labelled item of the codebook comes, in one ordered pass over the covering
        index (the caller keeps the sample's items by merging with
        :meth:`sample_items_by_id`); looking each item of a large sample up in the index
        instead costs twice as much (and SQLite then sorts the groups). With
        ``through_sample`` (a sample small beside the labels), the item is its sample
        position, and each item's labels are looked up."""
        sql, params = self.vote_patterns_sql(scope, through_sample=through_sample)
        cursor = self.db.conn.cursor()
        cursor.row_factory = None
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(CHUNK):
            yield rows

    def flagged_cells_sql(
        self, scope: LabelScope, *, through_sample: bool = False
    ) -> tuple[str, list[Any]]:
        ccase, cparams = sql_case("l.coder", scope.coders, -1)
        qcase, qparams = sql_case("l.question", scope.questions, -1)
        columns = f"{qcase}, {ccase}"
        if scope.sample is not None and not through_sample:  # few flags: look them up
            cond, params = scope.where()
            sql = (
                f"SELECT s.position, {columns} FROM {labels_from(scope.coders, 'labels_progress')} "
                "CROSS JOIN sample_items s ON s.sample = ? AND s.action_id = l.action_id "
                f"WHERE {cond} AND l.flagged"
            )
            return sql, [*qparams, *cparams, scope.sample, *params]
        item, source, cond, params = _source(scope, "labels_progress", through_sample)
        sql = f"SELECT {item}, {columns} FROM {source} WHERE {cond} AND l.flagged"
        return sql, [*qparams, *cparams, *params]

    def flagged_cells(
        self, scope: LabelScope, *, through_sample: bool = False
    ) -> list[tuple[Any, int, int]]:
        """(item, question index, coder index) of the scope's flagged labels, answered or
        not; the item is its sample position, or its action id without a sample. The
        flags are read from ``labels_progress``, the table only for the flagged labels."""
        sql, params = self.flagged_cells_sql(scope, through_sample=through_sample)
        cursor = self.db.conn.cursor()
        cursor.row_factory = None
        return cursor.execute(sql, params).fetchall()

    def gold_states_sql(
        self,
        scope: LabelScope,
        source: str,
        *,
        through_sample: bool = False,
        kept_only: bool = False,
    ) -> tuple[str, list[Any]]:
        qcase, qparams = sql_case("g.question", scope.questions, -1)
        marks = ",".join("?" * len(scope.questions))
        # each answer's provenance read once, not once per item
        kinds = (
            "WITH a AS MATERIALIZED (SELECT id, source IS ?1 AS mine, "
            "json_extract(meta, '$.method') AS method FROM gold_answers WHERE codebook = ?2 "
            "AND (value IS NOT NULL OR coalesce(codes, '[]') NOT IN ('[]', ''))"
            + (" AND (source IS NOT ?1 OR method = 'decided')" if kept_only else "")
            + ") "
        )
        cond = f"g.codebook = ? AND g.question IN ({marks})"
        head = [source, scope.codebook, *qparams]
        tail = [scope.codebook, *scope.questions]
        if through_sample:
            assert scope.sample is not None
            sql = (
                f"{kinds}SELECT s.position, {qcase}, a.mine, a.method "
                "FROM sample_items s INDEXED BY sample_items_action "
                "CROSS JOIN gold g ON g.action_id = s.action_id "
                f"JOIN a ON a.id = g.answer WHERE s.sample = ? AND {cond}"
            )
            return sql, [*head, scope.sample, *tail]
        sql = (
            f"{kinds}SELECT g.action_id, {qcase}, a.mine, a.method FROM gold g "
            f"JOIN a ON a.id = g.answer WHERE {cond} ORDER BY g.action_id"
        )
        return sql, [*head, *tail]

    def gold_states(
        self, scope: LabelScope, source: str, *, through_sample: bool = False
    ) -> list[tuple[Any, int, int, Any]]:
        """(item, question index, whether ``source`` made it, the ``method`` of its meta)
        of the answered labels of the scope's coder (the gold). The item is as in
        :meth:`vote_patterns`: the action id in id order, the sample not applied, or
        with ``through_sample`` the sample position."""
        sql, params = self.gold_states_sql(scope, source, through_sample=through_sample)
        cursor = self.db.conn.cursor()
        cursor.row_factory = None
        return cursor.execute(sql, params).fetchall()

    def labels_upper_bound(self) -> int:
        """More than the number of labels, at once (the largest id; ids are not reused
        while the largest stays)."""
        return self.db.conn.execute("SELECT coalesce(max(id), 0) FROM coder_labels").fetchone()[0]

    def sample_items_by_id(self, sample: str) -> Iterator[tuple[str, int]]:
        """(action id, position) of the sample's items in action id order (the order of
        :meth:`vote_patterns`), from the covering index ``sample_items_action``."""
        cursor = self.db.conn.cursor()
        cursor.row_factory = None
        cursor.execute(
            "SELECT action_id, position FROM sample_items INDEXED BY sample_items_action "
            "WHERE sample = ? ORDER BY action_id",
            (sample,),
        )
        while rows := cursor.fetchmany(CHUNK):
            yield from rows

    def label_rows_of(
        self,
        codebook: str,
        question: str,
        coders: Sequence[str],
        action_ids: Sequence[str],
        columns: Sequence[str],
    ) -> list[dict[str, Any]]:
        """The labels of these items (any order), as :meth:`label_rows` makes them: by the
        unique index, 900 items per query."""
        out: list[dict[str, Any]] = []
        who = ",".join("?" * len(coders))
        for start in range(0, len(action_ids), 900):
            chunk = list(action_ids[start : start + 900])
            marks = ",".join("?" * len(chunk))
            rows = self.db.conn.execute(
                f"SELECT {', '.join(columns)} FROM labels WHERE action_id IN ({marks}) "
                f"AND codebook = ? AND question = ? AND coder IN ({who})",
                [*chunk, codebook, question, *coders],
            )
            out += map(decoded_label, rows)
        return out

    def _kind_answer_ids(
        self, codebook: Codebook, source: str, kinds: Sequence[GoldKind]
    ) -> list[int]:
        """The ``gold_answers`` id of each gold of ``kinds`` (added where new)."""
        return self.gold.gold_answer_ids(
            [
                (codebook.name, codebook.version_hash, k.question, k.value, k.codes,
                 k.other_text, source, k.meta)
                for k in kinds
            ]
        )  # fmt: skip

    def write_gold_kinds_sql(self) -> str:
        """The statement that writes the gold of :meth:`write_gold` (for its query plan)."""
        return (
            "INSERT INTO gold AS old (codebook, action_id, question, answer, revision, "
            "created_at, updated_at) "
            "SELECT ?, g.action_id, k.question, k.answer, g.revision, ?, ? "
            "FROM temp._gold_items g CROSS JOIN temp._gold_kinds k ON k.id = g.kind WHERE 1 "
            f"{GOLD_UPSERT}"
        )

    def write_gold(
        self,
        codebook: Codebook,
        source: str,
        kinds: Sequence[GoldKind],
        items: Iterable[tuple[str, int]],
    ) -> int:
        """Store gold for many items at once (upserts as :meth:`save_gold` makes them: a
        gold whose answer, source, meta and codebook version are unchanged stays as it
        was); ``items`` are (action id, index in ``kinds``), best in action id order (the
        order of ``gold``'s key). Return how many gold rows changed. The rows are staged in
        temporary tables, then written by one statement."""
        with self.db.transaction() as conn:  # joins the caller's transaction, if any
            conn.execute(
                "CREATE TEMP TABLE IF NOT EXISTS _gold_kinds (id INTEGER PRIMARY KEY, "
                "question TEXT, answer INTEGER)"
            )
            conn.execute(
                "CREATE TEMP TABLE IF NOT EXISTS _gold_items (action_id TEXT NOT NULL, "
                "kind INTEGER NOT NULL, revision INTEGER NOT NULL)"
            )
            conn.execute("DELETE FROM temp._gold_kinds")
            conn.execute("DELETE FROM temp._gold_items")
            version = codebook.version_hash
            answers = self._kind_answer_ids(codebook, source, kinds)
            conn.executemany(
                "INSERT INTO temp._gold_kinds VALUES (?, ?, ?)",
                [(i, k.question, answers[i]) for i, k in enumerate(kinds)],
            )
            tails = [
                answer_tail(
                    k.question, GOLD, k.value, json.loads(k.codes) if k.codes else (),
                    k.other_text, version,
                )
                for k in kinds
            ]  # fmt: skip

            def with_revision(action_id: str, kind: int) -> tuple[str, int, int]:
                return action_id, kind, item_revision(action_id, tails[kind])

            conn.executemany(
                "INSERT INTO temp._gold_items VALUES (?, ?, ?)",
                (with_revision(a, kind) for a, kind in items),
            )
            stamp = now()
            before = conn.total_changes
            conn.execute(self.write_gold_kinds_sql(), (codebook.name, stamp, stamp))
            changed = conn.total_changes - before
            conn.execute("DELETE FROM temp._gold_items")
            return changed

    def clear_answers(self, codebook: str, coder: str, cells: Sequence[tuple[str, str]]) -> None:
        """:meth:`clear_answer` for many (action id, question) of one coder, in one
        transaction."""
        if not cells:
            return
        stamp = now()
        with self.db.transaction() as conn:
            if coder == GOLD:
                self.gold.clear_cells(codebook, cells)
                return
            conn.executemany(
                "UPDATE coder_labels SET value = NULL, codes = NULL, other_text = NULL, "
                "updated_at = ? WHERE action_id = ? AND codebook = ? AND question = ? "
                "AND coder = ?",
                ((stamp, a, codebook, q, coder) for a, q in cells),
            )
            conn.executemany(
                "DELETE FROM coder_labels WHERE action_id = ? AND codebook = ? AND question = ? "
                "AND coder = ? AND flagged = 0 AND skipped = 0 AND note IS NULL",
                ((a, codebook, q, coder) for a, q in cells),
            )
