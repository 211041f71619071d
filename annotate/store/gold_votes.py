"""The SQL of adjudication (`annotate adjudicate`), its one planner: the coders' answers
staged as one small row per item and question (their vote pattern, packed in SQL), the
cases set aside (flagged, or with gold to keep), the majority gold written with one
``INSERT ... SELECT``, and the cases of each kind read back from the staged tables for the
screen.

At corpus scale (1M items x 3 coders) no Python object is made per label: SQLite groups
the labels of an item and question in its ordered pass over the covering index
``labels_answered`` and packs the coders' value numbers into one integer; only answers a
number cannot say (codes, an "Other" text, a value the codebook does not list) come as
JSON, which the few such labels cost.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from annotate.coders import GOLD
from annotate.store.base import Database, codes_json, dumps, now
from annotate.store.gold import labels_from
from annotate.store.label_cells import ANSWERED, CHUNK, LabelScope, sql_case
from annotate.store.labels import clear_coder_cells, decoded_label
from annotate.store.revisions import ANSWER_REVISION, register_answer_revision

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
        """The scope's answered labels, one row per item and question: the item; the
        question's index in ``scope.labels.questions``; the vote pattern; and None, or the
        JSON arrays (``[coder, value, codes, other_text]``, comma-separated) of the labels
        whose answer is more than a listed value (codes, an "Other" text, an unlisted
        value).

        The pattern, with :attr:`VoteScope.packed`, is the sum of each answering coder's
        value number (1 + the value's index in ``scope.values``, ``len(values) + 1`` for
        any other) shifted left by the coder's index times :attr:`VoteScope.value_bits`;
        else the text ``"coder:number,..."``.

        The item is the action id, in one ordered pass over the covering index (the
        sample not applied); with ``through_sample`` (a sample small beside the labels),
        its sample position, each item's labels looked up."""
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

    def kept_gold_sql(
        self, scope: LabelScope, source: str, *, through_sample: bool = False
    ) -> tuple[str, list[Any]]:
        """(item, question index, whether ``source`` made it, the ``method`` of its meta)
        of the gold a majority vote must keep: decided, or not made by ``source``. The item
        is as in :meth:`vote_patterns_sql`."""
        qcase, qparams = sql_case("g.question", scope.questions, -1)
        marks = ",".join("?" * len(scope.questions))
        # each answer's provenance read once, not once per item
        kinds = (
            "WITH a AS MATERIALIZED (SELECT id, source IS ?1 AS mine, "
            "json_extract(meta, '$.method') AS method FROM gold_answers WHERE codebook = ?2 "
            "AND (value IS NOT NULL OR coalesce(codes, '[]') NOT IN ('[]', '')) "
            "AND (source IS NOT ?1 OR method = 'decided')) "
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

    def labels_upper_bound(self) -> int:
        """More than the number of labels, at once (the largest id; ids are not reused
        while the largest stays)."""
        return self.db.conn.execute("SELECT coalesce(max(id), 0) FROM coder_labels").fetchone()[0]

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

    def clear_answers(self, codebook: str, coder: str, cells: Sequence[tuple[str, str]]) -> None:
        """:meth:`clear_answer` for many (action id, question) of one coder, in one
        transaction."""
        if not cells:
            return
        with self.db.transaction() as conn:
            if coder == GOLD:
                self.gold.clear_cells(codebook, cells)
                return
            clear_coder_cells(conn, codebook, coder, cells)

    # -- adjudicate --majority-only in one pass ------------------------------------------

    def stage_votes(self, scope: VoteScope, *, through_sample: bool = False) -> int:
        """Keep the scope's vote patterns (:meth:`vote_patterns_sql`) of the sample's items in
        the temporary table ``_votes`` (action id, question index, pattern, JSON of the
        answers a number cannot say), keyed by item and question; return how many. One
        ordered pass over ``labels_answered``; the majority is then counted and written
        from this table (:meth:`write_staged_majority`), not from Python objects."""
        self.staged_pass += 1
        sql, params = self.vote_patterns_sql(scope, through_sample=through_sample)
        sample = scope.labels.sample
        if through_sample:
            assert sample is not None
            items = (
                "SELECT s.action_id, v.q, v.pattern, v.rich FROM v "
                "JOIN sample_items s ON s.sample = ? AND s.position = v.item"
            )
            params = [*params, sample]
        elif sample is not None:
            items = (
                "SELECT v.item, v.q, v.pattern, v.rich FROM v WHERE v.item IN "
                "(SELECT action_id FROM sample_items WHERE sample = ?)"
            )
            params = [*params, sample]
        else:
            items = "SELECT v.item, v.q, v.pattern, v.rich FROM v"
        self.db.conn.execute("DROP TABLE IF EXISTS temp._votes")
        self.db.conn.execute(
            "CREATE TEMP TABLE _votes (action_id TEXT NOT NULL, q INTEGER NOT NULL, pattern, "
            "rich TEXT, aside INTEGER, PRIMARY KEY (action_id, q)) WITHOUT ROWID"
        )
        before = self.db.conn.total_changes
        self.db.conn.execute(
            f"WITH v(item, q, pattern, rich) AS ({sql}) "
            f"INSERT INTO temp._votes (action_id, q, pattern, rich) {items}",
            params,
        )
        return self.db.conn.total_changes - before

    def staged_pattern_counts(self, scope: VoteScope) -> list[tuple[int, Any, int]]:
        """(question index, pattern, cases) of the staged votes a number says whole. Integer
        patterns are counted by NumPy from one list per question (a GROUP BY sorts them
        all: 1 s for a million)."""
        if not scope.packed:
            return self.db.conn.execute(
                "SELECT q, pattern, count(*) FROM temp._votes WHERE rich IS NULL "
                "GROUP BY q, pattern"
            ).fetchall()
        import numpy as np

        out: list[tuple[int, Any, int]] = []
        for q in range(len(scope.labels.questions)):
            (text,) = self.db.conn.execute(
                "SELECT group_concat(pattern) FROM temp._votes WHERE rich IS NULL AND q = ?",
                (q,),
            ).fetchone()
            if text:
                found, counts = np.unique(
                    np.fromstring(text, dtype=np.int64, sep=","), return_counts=True
                )
                out += [(q, p, n) for p, n in zip(found.tolist(), counts.tolist(), strict=True)]
        return out

    def staged_rich_patterns(self) -> Iterator[list[tuple[int, Any, str, int, int]]]:
        """(question index, pattern, JSON, cases, cases not set aside) of the staged votes
        with answers a number cannot say (codes, an "Other" text, an unlisted value), one
        row per distinct votes, in chunks (the same texts repeat: "ok", a greeting). Read
        after :meth:`stage_set_aside`."""
        cursor = self.db.conn.cursor()
        cursor.row_factory = None
        cursor.execute(
            "SELECT v.q, v.pattern, v.rich, count(*), sum(v.aside IS NULL) "
            "FROM temp._votes v WHERE v.rich IS NOT NULL GROUP BY v.q, v.pattern, v.rich"
        )
        while rows := cursor.fetchmany(CHUNK):
            yield rows

    def stage_set_aside(
        self, scope: LabelScope, source: str, *, through_sample: bool = False
    ) -> list[tuple[str, int, int, Any, str | None]]:
        """Keep in ``_set_aside`` the cases a majority vote must not write: flagged by a
        selected coder (bit 1), or with gold it must keep (bit 2: decided, or not made by
        ``source``). Return each (action id, question index, why,
        staged pattern or None, staged JSON or None)."""
        cond, params = scope.where()
        qcase, qparams = sql_case("l.question", scope.questions, -1)
        flags = (
            f"SELECT l.action_id, {qcase}, 1 FROM coder_labels l INDEXED BY labels_flagged "
            f"WHERE {cond} AND l.flagged"
        )
        if scope.sample is not None:  # the few flagged labels, each looked up in the sample
            flags += (
                " AND EXISTS (SELECT 1 FROM sample_items s INDEXED BY sample_items_action "
                "WHERE s.sample = ? AND s.action_id = l.action_id)"
            )
            params = [*params, scope.sample]
        gold_sql, gold_params = self.kept_gold_sql(  # the gold to keep, not all of it
            replace(scope, coders=(GOLD,)), source, through_sample=through_sample
        )
        self.db.conn.execute("DROP TABLE IF EXISTS temp._set_aside")
        self.db.conn.execute(
            "CREATE TEMP TABLE _set_aside (action_id TEXT NOT NULL, q INTEGER NOT NULL, "
            "why INTEGER NOT NULL, kind TEXT, PRIMARY KEY (action_id, q)) WITHOUT ROWID"
        )
        self.db.conn.execute(
            f"INSERT OR IGNORE INTO temp._set_aside (action_id, q, why) {flags}",
            [*qparams, *params],
        )
        kept = [(item, q) for item, q, _, _ in self.db.conn.execute(gold_sql, gold_params)]
        if through_sample and kept:  # the item is the sample position: its action id
            assert scope.sample is not None
            ids = dict(self.db.conn.execute(
                "SELECT position, action_id FROM sample_items WHERE sample = ?",
                (scope.sample,),
            ).fetchall()) if len(kept) > 900 else {
                p: a for p, a in self.db.conn.execute(
                    f"SELECT position, action_id FROM sample_items WHERE sample = ? AND "
                    f"position IN ({','.join('?' * len(kept))})",
                    (scope.sample, *(k[0] for k in kept)),
                )
            }  # fmt: skip
            kept = [(ids[p], q) for p, q in kept]
        elif scope.sample is not None and kept:  # gold is read for every item
            self.db.conn.execute(
                "CREATE TEMP TABLE IF NOT EXISTS _kept (action_id TEXT, q INTEGER)"
            )
            self.db.conn.execute("DELETE FROM temp._kept")
            self.db.conn.executemany("INSERT INTO temp._kept VALUES (?, ?)", kept)
            kept = self.db.conn.execute(
                "SELECT k.action_id, k.q FROM temp._kept k WHERE k.action_id IN "
                "(SELECT action_id FROM sample_items WHERE sample = ?)",
                (scope.sample,),
            ).fetchall()
        self.db.conn.executemany(
            "INSERT INTO temp._set_aside (action_id, q, why) VALUES (?, ?, 2) "
            "ON CONFLICT (action_id, q) DO UPDATE SET why = why | 2",
            [tuple(k) for k in kept],
        )
        self.db.conn.execute(  # marked on the staged votes: no lookup per vote in what follows
            "UPDATE temp._votes SET aside = 1 "
            "WHERE (action_id, q) IN (SELECT action_id, q FROM temp._set_aside)"
        )
        return self.db.conn.execute(
            "SELECT x.action_id, x.q, x.why, v.pattern, v.rich FROM temp._set_aside x "
            "LEFT JOIN temp._votes v ON v.action_id = x.action_id AND v.q = x.q"
        ).fetchall()

    def write_staged_majority_sql(self) -> str:
        """The statement of :meth:`write_staged_majority` (for its query plan)."""
        return (
            "INSERT INTO gold AS old (codebook, action_id, question, answer, revision, "
            "created_at, updated_at) "
            f"SELECT ?1, v.action_id, k.question, k.answer, {ANSWER_REVISION}(v.action_id, "
            "k.answer), ?2, ?2 "
            "FROM temp._votes v CROSS JOIN temp._pattern_kinds k "
            "ON k.q = v.q AND k.pattern = v.pattern WHERE v.rich IS NULL AND v.aside IS NULL "
            "UNION ALL "
            f"SELECT ?1, v.action_id, r.question, r.answer, {ANSWER_REVISION}(v.action_id, "
            "r.answer), ?2, ?2 "
            "FROM temp._votes v CROSS JOIN temp._rich_kinds r INDEXED BY _rich_votes "
            "ON r.q = v.q AND r.pattern = v.pattern AND r.rich = v.rich "
            f"WHERE v.rich IS NOT NULL AND v.aside IS NULL {GOLD_UPSERT}"
        )

    def stage_pattern_kinds(
        self,
        codebook: Codebook,
        source: str,
        kinds: Sequence[GoldKind],
        patterns: Iterable[tuple[int, Any, int]],
    ) -> None:
        """Keep in ``_pattern_kinds`` the (question index, pattern) whose staged votes have
        majority gold, with the index in ``kinds`` of their gold (its answer stored in
        ``gold_answers`` now)."""
        with self.db.transaction() as conn:
            answers = self._kind_answer_ids(codebook, source, kinds)
            conn.execute("DROP TABLE IF EXISTS temp._pattern_kinds")
            conn.execute(
                "CREATE TEMP TABLE _pattern_kinds (q INTEGER NOT NULL, pattern NOT NULL, "
                "question TEXT NOT NULL, answer INTEGER NOT NULL, PRIMARY KEY (q, pattern))"
            )
            conn.executemany(
                "INSERT INTO temp._pattern_kinds VALUES (?, ?, ?, ?)",
                [(q, p, kinds[k].question, answers[k]) for q, p, k in patterns],
            )

    def write_staged_majority(self, codebook: str) -> int:
        """Write the gold of every staged vote (not set aside) whose pattern has majority
        gold (:meth:`stage_pattern_kinds`), or its pattern and JSON (``_rich_kinds``, their
        answers stored by :meth:`stage_rich_answers`), in one statement; return
        how many gold rows changed. A gold row whose answer changes (or a new one) gets the
        revision of its content, as every label write (:mod:`annotate.store.revisions`).
        One whose provenance alone changes (the votes behind the same answer) keeps its
        revision: its answer, all an agreement run compares, is the same."""
        with self.db.transaction() as conn:
            register_answer_revision(
                conn,
                conn.execute(
                    "SELECT id, question, value, codes, other_text, codebook_hash "
                    "FROM gold_answers WHERE id IN (SELECT answer FROM temp._pattern_kinds "
                    "UNION SELECT answer FROM temp._rich_kinds)"
                ),
                GOLD,
            )
            stamp = now()
            before = conn.total_changes
            conn.execute(self.write_staged_majority_sql(), (codebook, stamp))
            return conn.total_changes - before

    def staged_stale_gold(
        self, scope: LabelScope, source: str, *, actions_only: bool = False
    ) -> list[tuple[str, str]]:
        """(action id, question) of the gold ``source`` made by a majority vote on the
        scope's items (its sample's, or any) that the staged majority no longer backs: not
        a staged vote with a majority gold (its pattern in ``_pattern_kinds``, or its
        pattern and JSON in ``_rich_kinds``) that is not set aside. Read before the majority
        is written. ``actions_only``: only gold on a stored action (a sample of every action,
        not applied: gold can name an id no action has, and no sample holds it)."""
        qcase, qparams = sql_case("g.question", scope.questions, -1)
        marks = ",".join("?" * len(scope.questions))
        sample = ""
        params: list[Any] = [source, scope.codebook, *qparams, scope.codebook, *scope.questions]
        if scope.sample is not None:  # looked up for the few gold no majority backs
            sample = (
                " AND EXISTS (SELECT 1 FROM sample_items s INDEXED BY sample_items_action "
                "WHERE s.sample = ? AND s.action_id = m.action_id)"
            )
            params.append(scope.sample)
        elif actions_only:
            sample = " AND EXISTS (SELECT 1 FROM actions t WHERE t.id = m.action_id)"
        sql = (
            "WITH a AS MATERIALIZED (SELECT id FROM gold_answers WHERE source IS ? "
            "AND codebook = ? AND json_extract(meta, '$.method') = 'majority' "
            "AND (value IS NOT NULL OR coalesce(codes, '[]') NOT IN ('[]', ''))) "
            f"SELECT g.action_id, g.question, {qcase} AS q FROM gold g JOIN a ON a.id = g.answer "
            f"WHERE g.codebook = ? AND g.question IN ({marks})"
        )
        backed = (
            "(EXISTS (SELECT 1 FROM temp._votes v JOIN temp._pattern_kinds k "
            "ON k.q = v.q AND k.pattern = v.pattern WHERE v.action_id = m.action_id "
            "AND v.q = m.q AND v.rich IS NULL AND v.aside IS NULL) OR EXISTS (SELECT 1 "
            "FROM temp._votes v JOIN temp._rich_kinds r INDEXED BY _rich_votes ON r.q = v.q "
            "AND r.pattern = v.pattern AND r.rich = v.rich WHERE v.action_id = m.action_id "
            "AND v.q = m.q AND v.aside IS NULL))"
        )
        cursor = self.db.conn.cursor()
        cursor.row_factory = None
        return cursor.execute(
            f"SELECT m.action_id, m.question FROM ({sql}) m WHERE NOT ({backed}){sample} "
            "ORDER BY m.q, m.action_id",
            params,
        ).fetchall()

    def stage_rich_majority(self) -> None:
        """Empty ``_rich_kinds``: the majority gold of the staged votes with answers a
        number cannot say, by their votes (:meth:`add_rich_kinds`), written by
        :meth:`write_staged_majority`."""
        self.db.conn.execute("DROP TABLE IF EXISTS temp._rich_kinds")
        self.db.conn.execute(
            "CREATE TEMP TABLE _rich_kinds (id INTEGER PRIMARY KEY, q INTEGER NOT NULL, "
            "pattern NOT NULL, rich TEXT NOT NULL, question TEXT NOT NULL, value TEXT, "
            "codes TEXT, other_text TEXT, meta TEXT NOT NULL, answer INTEGER)"
        )
        self.db.conn.execute(
            "CREATE UNIQUE INDEX temp._rich_votes ON _rich_kinds (q, pattern, rich)"
        )

    def add_rich_kinds(self, kinds: Iterable[tuple[int, Any, str, GoldKind]]) -> None:
        """Keep in ``_rich_kinds`` the majority gold of these (question index, pattern,
        JSON) of :meth:`staged_rich_patterns`."""
        self.db.conn.executemany(
            "INSERT INTO temp._rich_kinds (q, pattern, rich, question, value, codes, "
            "other_text, meta) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                (q, pattern, rich, k.question, k.value, k.codes, k.other_text, k.meta)
                for q, pattern, rich, k in kinds
            ),
        )

    def stage_rich_answers(self, codebook: Codebook, source: str) -> None:
        """Store the answers of ``_rich_kinds`` with their provenance in ``gold_answers``
        (shared when the same) and keep their ids, for :meth:`write_staged_majority`."""
        content = "json_array(?1, ?2, k.question, k.value, k.codes, k.other_text, ?3, k.meta)"
        book = (codebook.name, codebook.version_hash, source)
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO gold_answers (codebook, codebook_hash, question, value, codes, "
                f"other_text, source, meta, content) SELECT ?1, ?2, k.question, k.value, "
                f"k.codes, k.other_text, ?3, k.meta, {content} FROM temp._rich_kinds k "
                "WHERE true ON CONFLICT (content) DO NOTHING",
                book,
            )
            conn.execute(
                "UPDATE temp._rich_kinds AS k SET answer = "
                f"(SELECT a.id FROM gold_answers a WHERE a.content = {content})",
                book,
            )

    # -- the cases of the pass, read back for the screen -----------------------------------

    staged_pass = 0
    """Counts the passes staged on this connection (:meth:`stage_votes`): the cases a pass
    classified are read back from its tables only while no later pass replaced them."""

    def stage_undecided(self, votes: Iterable[tuple[int, Any, str | None]]) -> None:
        """Keep in ``_undecided`` the (question index, pattern, JSON or None) of the staged
        votes that go to the adjudicator (no majority, or one that is not a code), for
        :meth:`staged_cases`."""
        self.db.conn.execute("DROP TABLE IF EXISTS temp._undecided")
        self.db.conn.execute(
            "CREATE TEMP TABLE _undecided (q INTEGER NOT NULL, pattern NOT NULL, rich TEXT, "
            "UNIQUE (q, pattern, rich))"
        )
        self.db.conn.executemany("INSERT INTO temp._undecided VALUES (?, ?, ?)", votes)

    def classify_set_aside(self, kinds: Iterable[tuple[str | None, str, int]]) -> None:
        """Say what each case of ``_set_aside`` is, as (kind or None, action id, question
        index): ``to_decide`` (flagged), ``kept`` (its gold stays), None (answered by one
        coder and not flagged: left for later)."""
        self.db.conn.executemany(
            "UPDATE temp._set_aside SET kind = ? WHERE action_id = ? AND q = ?", kinds
        )

    def staged_cases_sql(self, kind: str, sample: str | None) -> tuple[str, list[Any]]:
        """The query of :meth:`staged_cases` (for its query plan)."""
        if kind == "majority":
            cases = (
                "SELECT v.action_id, v.q FROM temp._votes v CROSS JOIN temp._pattern_kinds k "
                "ON k.q = v.q AND k.pattern = v.pattern WHERE v.rich IS NULL AND v.aside IS NULL "
                "UNION ALL SELECT v.action_id, v.q FROM temp._votes v "
                "CROSS JOIN temp._rich_kinds r INDEXED BY _rich_votes ON r.q = v.q "
                "AND r.pattern = v.pattern AND r.rich = v.rich "
                "WHERE v.rich IS NOT NULL AND v.aside IS NULL"
            )
        elif kind == "to_decide":
            cases = (
                "SELECT v.action_id, v.q FROM temp._votes v CROSS JOIN temp._undecided u "
                "ON u.q = v.q AND u.pattern = v.pattern AND u.rich IS v.rich "
                "WHERE v.aside IS NULL "
                "UNION ALL SELECT action_id, q FROM temp._set_aside WHERE kind = 'to_decide'"
            )
        elif kind == "kept":
            cases = "SELECT action_id, q FROM temp._set_aside WHERE kind = 'kept'"
        else:
            raise ValueError(f"no kind of case {kind!r}")
        if sample is None:
            return f"SELECT c.q, c.action_id FROM ({cases}) c ORDER BY c.q, c.action_id", []
        sql = (
            f"SELECT c.q, c.action_id FROM ({cases}) c JOIN sample_items s "
            "ON s.sample = ? AND s.action_id = c.action_id ORDER BY c.q, s.position"
        )
        return sql, [sample]

    def staged_cases(self, kind: str, sample: str | None, staged: int) -> list[tuple[int, str]]:
        """(question index, action id) of the cases of one kind the pass ``staged``
        classified (``majority``, ``to_decide``, ``kept``), by question, then by the
        sample's order (without a sample: by id)."""
        if staged != self.staged_pass:
            raise RuntimeError("a later adjudication pass replaced the cases of this plan")
        sql, params = self.staged_cases_sql(kind, sample)
        cursor = self.db.conn.cursor()
        cursor.row_factory = None
        return cursor.execute(sql, params).fetchall()
