"""``adjudicate --majority-only`` in one pass: the scope's votes staged in temporary
tables, counted and decided in SQL, the gold written by one statement."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from annotate.coders import GOLD
from annotate.store.base import Database, now
from annotate.store.gold_votes import GOLD_UPSERT, GoldKind, VoteScope
from annotate.store.label_cells import CHUNK, LabelScope, sql_case

if TYPE_CHECKING:
    from annotate.codebook import Codebook
    from annotate.store.gold_votes import GoldVotes


class MajorityPass:
    def __init__(self, db: Database, gold_votes: GoldVotes) -> None:
        self.db = db
        self.gold_votes = gold_votes

    def stage_votes(self, scope: VoteScope, *, through_sample: bool = False) -> int:
        """Keep the scope's vote patterns (:meth:`vote_patterns`) of the sample's items in
        the temporary table ``_votes`` (action id, question index, pattern, JSON of the
        answers a number cannot say), keyed by item and question; return how many. One
        ordered pass over ``labels_answered``; the majority is then counted and written
        from this table (:meth:`write_staged_majority`), not from Python objects."""
        sql, params = self.gold_votes.vote_patterns_sql(scope, through_sample=through_sample)
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
        gold_sql, gold_params = self.gold_votes.gold_states_sql(  # the gold to keep, not all of it
            replace(scope, coders=(GOLD,)), source, through_sample=through_sample, kept_only=True
        )
        self.db.conn.execute("DROP TABLE IF EXISTS temp._set_aside")
        self.db.conn.execute(
            "CREATE TEMP TABLE _set_aside (action_id TEXT NOT NULL, q INTEGER NOT NULL, "
            "why INTEGER NOT NULL, PRIMARY KEY (action_id, q)) WITHOUT ROWID"
        )
        self.db.conn.execute(f"INSERT OR IGNORE INTO temp._set_aside {flags}", [*qparams, *params])
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
            "INSERT INTO temp._set_aside VALUES (?, ?, 2) "
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
            "SELECT ?1, v.action_id, k.question, k.answer, random(), ?2, ?2 "
            "FROM temp._votes v CROSS JOIN temp._pattern_kinds k "
            "ON k.q = v.q AND k.pattern = v.pattern WHERE v.rich IS NULL AND v.aside IS NULL "
            "UNION ALL "
            "SELECT ?1, v.action_id, r.question, r.answer, random(), ?2, ?2 "
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
            answers = self.gold_votes._kind_answer_ids(codebook, source, kinds)
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
        how many gold rows changed. A gold row whose answer changes (or a new one) gets a
        new random revision, as a raw SQL write gets from the triggers: a million SHA-256
        digests in Python would cost more than the write. One whose provenance alone
        changes (the votes behind the same answer) keeps its revision: its answer, all an
        agreement run compares, is the same."""
        with self.db.transaction() as conn:
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
