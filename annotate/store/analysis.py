"""Study analysis: session-level splits, the queries behind stats and report, and merging
another project file into this one (read through ``ATTACH DATABASE``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from annotate.coders import GOLD
from annotate.errors import NotFoundError, StoreError, UsageError
from annotate.store.base import StoreBase, dumps, now
from annotate.store.gold import label_sources, union_all
from annotate.store.migrations import GOLD_IDS
from annotate.store.revisions import refresh_revisions, stored_revision

MERGE_ALIAS = "other"
LABEL_COPY_COLUMNS = (
    "action_id, codebook, codebook_hash, question, coder, value, codes, other_text, note, "
    "flagged, skipped, seconds, source, meta, created_at, updated_at"
)
ACTION_COPY_COLUMNS = (
    "id, session, participant, role, seq, timestamp, elapsed_s, action_type, content, "
    "condition, meta"
)


@dataclass(frozen=True)
class SessionSplitWrite:
    """A session split to store: ``parts`` maps each session to ``(part, group)``."""

    name: str
    per: str | None
    n_test: int
    seed: int
    codebooks: Sequence[str]
    coders: Sequence[str]
    method: str
    objective: float
    random_objective: float | None
    details: Mapping[str, Any]
    parts: Mapping[str, tuple[str, str | None]]


class AnalysisMixin(StoreBase):
    # -- session splits -----------------------------------------------------------------

    def create_session_split(self, split: SessionSplitWrite, *, replace: bool = False) -> None:
        with self.transaction() as conn:
            exists = conn.execute(
                "SELECT 1 FROM session_splits WHERE name = ?", (split.name,)
            ).fetchone()
            if exists and not replace:
                raise UsageError(
                    f"a session split named '{split.name}' already exists",
                    hint="choose another --name, or pass --replace",
                )
            conn.execute("DELETE FROM session_split_items WHERE split = ?", (split.name,))
            conn.execute("DELETE FROM session_splits WHERE name = ?", (split.name,))
            conn.execute(
                "INSERT INTO session_splits (name, per, n_test, seed, codebooks, coders, method, "
                "objective, random_objective, details, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    split.name,
                    split.per,
                    split.n_test,
                    split.seed,
                    dumps(list(split.codebooks)),
                    dumps(list(split.coders)),
                    split.method,
                    split.objective,
                    split.random_objective,
                    dumps(dict(split.details)),
                    now(),
                ),
            )
            conn.executemany(
                "INSERT INTO session_split_items (split, session, part, grp) VALUES (?, ?, ?, ?)",
                [(split.name, s, part, grp) for s, (part, grp) in sorted(split.parts.items())],
            )

    def session_split(self, name: str) -> dict[str, Any]:
        """A stored split: its settings and ``parts`` ``{session: 'train' | 'test'}``."""
        row = self.conn.execute("SELECT * FROM session_splits WHERE name = ?", (name,)).fetchone()
        if row is None:
            names = [r[0] for r in self.conn.execute("SELECT name FROM session_splits ORDER BY 1")]
            raise NotFoundError(
                f"no session split named '{name}'",
                hint=(
                    "session splits: " + ", ".join(names)
                    if names
                    else "make one with `annotate split-sessions --test 3 --per condition`"
                ),
            )
        out = dict(row)
        for key in ("codebooks", "coders", "details"):
            out[key] = json.loads(out[key])
        out["parts"] = {
            r["session"]: r["part"]
            for r in self.conn.execute(
                "SELECT session, part FROM session_split_items WHERE split = ? ORDER BY session",
                (name,),
            )
        }
        return out

    def session_split_parts(self, name: str) -> dict[str, str]:
        return self.session_split(name)["parts"]

    def session_splits(self) -> list[dict[str, Any]]:
        return [
            dict(r)
            for r in self.conn.execute(
                "SELECT s.name, s.per, s.n_test, s.seed, s.method, s.objective, "
                "s.random_objective, s.created_at, "
                "(SELECT count(*) FROM session_split_items i WHERE i.split = s.name "
                " AND i.part = 'test') AS test_sessions, "
                "(SELECT count(*) FROM session_split_items i WHERE i.split = s.name "
                " AND i.part = 'train') AS train_sessions "
                "FROM session_splits s ORDER BY s.created_at, s.name"
            )
        ]

    # -- queries for stats, report and split-sessions ------------------------------------

    def session_type_counts(self) -> list[dict[str, Any]]:
        """Actions per (session, condition, role, action type): counted in the order of
        ``actions_condition``, which holds the four (migration 19)."""
        return [
            dict(r)
            for r in self.conn.execute(
                "SELECT session, condition, role, action_type, count(*) AS n FROM actions "
                "GROUP BY condition, session, action_type, role "
                "ORDER BY session, role, action_type"
            )
        ]

    def action_positions(self) -> list[dict[str, Any]]:
        """Every action with its 0-based position in its session and the session's length
        (the report reads only the labelled ones, with :meth:`action_facts`)."""
        return [
            dict(r)
            for r in self.conn.execute(
                "SELECT id AS action_id, session, condition, role, action_type, "
                "row_number() OVER (PARTITION BY session ORDER BY seq, id) - 1 AS position, "
                "count(*) OVER (PARTITION BY session) AS session_length "
                "FROM actions ORDER BY session, seq, id"
            )
        ]

    def action_facts(self, ids: Iterable[str], *, positions: bool = False) -> list[tuple[Any, ...]]:
        """Of these actions: id, session, condition, role, action type and, with
        ``positions``, the 0-based position in its session and the session's length
        (a window over every action, in SQL; only the rows of ``ids`` come back)."""
        self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS _facts_of (id TEXT PRIMARY KEY)")
        self.conn.execute("DELETE FROM _facts_of")
        self.conn.executemany("INSERT OR IGNORE INTO _facts_of VALUES (?)", ((i,) for i in ids))
        if not positions:
            return self.conn.execute(
                "SELECT a.id, a.session, a.condition, a.role, a.action_type "
                "FROM _facts_of w CROSS JOIN actions a ON a.id = w.id"
            ).fetchall()
        return self.conn.execute(
            "SELECT p.* FROM (SELECT id, session, condition, role, action_type, "
            "row_number() OVER (PARTITION BY session ORDER BY seq, id) - 1 AS position, "
            "count(*) OVER (PARTITION BY session) AS session_length FROM actions) p "
            "JOIN _facts_of w ON w.id = p.id ORDER BY p.session, p.position"
        ).fetchall()

    GROUP_COLUMNS = ("role", "condition", "action_type")

    def action_groups(self, ids: Iterable[str], by: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """``{action id: (its value of each column of by)}`` for these actions ("-" where a
        value is missing); ``by`` from :attr:`GROUP_COLUMNS`."""
        unknown = [c for c in by if c not in self.GROUP_COLUMNS]
        if unknown:
            raise UsageError(
                f"--by: unknown column '{unknown[0]}'",
                hint="choices: " + ", ".join(self.GROUP_COLUMNS),
            )
        columns = ", ".join(f"coalesce(a.{c}, '-')" for c in by)
        sql = f"SELECT a.id, {columns} FROM json_each(?) w JOIN actions a ON a.id = w.value"
        wanted = json.dumps(list(dict.fromkeys(ids)))
        return {r[0]: tuple(r[1:]) for r in self.conn.execute(sql, (wanted,))}

    def action_fields(
        self, ids: Iterable[str], columns: Sequence[str], meta_paths: Sequence[str]
    ) -> list[tuple[Any, ...]]:
        """Of these actions: id, the ``columns`` (checked by the caller) and the value at
        each ``meta`` path (``pairing``, ``request.target``; JSON true/false as ``true``
        and ``false``, an object as its JSON text, missing as None), in one pass."""
        self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS _facts_of (id TEXT PRIMARY KEY)")
        self.conn.execute("DELETE FROM _facts_of")
        self.conn.executemany("INSERT OR IGNORE INTO _facts_of VALUES (?)", ((i,) for i in ids))
        selected = [f"a.{c}" for c in columns]
        params: list[str] = []
        for path in meta_paths:
            json_path = "$" + "".join(f'."{part}"' for part in path.split("."))
            selected.append(
                "CASE json_type(a.meta, ?) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' "
                "ELSE json_extract(a.meta, ?) END"
            )
            params += [json_path, json_path]
        return self.conn.execute(
            f"SELECT {', '.join(['a.id', *selected])} "
            "FROM _facts_of w CROSS JOIN actions a ON a.id = w.id",
            params,
        ).fetchall()

    def label_meta_values(
        self, codebook: str, question: str, coder: str, key: str
    ) -> list[tuple[str, Any]]:
        """``(action_id, meta[key])`` of a coder's answered labels on a question (what a
        rule recorded with its answers, e.g. ``delayed``)."""
        return self.conn.execute(
            "SELECT action_id, json_extract(meta, ?) FROM labels WHERE codebook = ? "
            "AND question = ? AND coder = ? AND value IS NOT NULL",
            (f'$."{key}"', codebook, question, coder),
        ).fetchall()

    def action_ids_of_sessions(self, sessions: Iterable[str]) -> list[str]:
        """The ids of every action of these sessions (by index on ``(session, seq)``)."""
        return [
            r[0]
            for s in sorted(set(sessions))
            for r in self.conn.execute("SELECT id FROM actions WHERE session = ?", (s,))
        ]

    def answered_labels(self, codebook: str, coders: Sequence[str]) -> list[dict[str, Any]]:
        """Answered labels of these coders: action, question, coder, value, codes (a tuple)."""
        if not coders:
            return []
        marks = ",".join("?" * len(coders))
        rows = []
        for r in self.conn.execute(
            "SELECT action_id, question, coder, value, codes FROM labels "
            f"WHERE codebook = ? AND coder IN ({marks}) "
            "AND (value IS NOT NULL OR codes IS NOT NULL) ORDER BY action_id, question, coder",
            (codebook, *coders),
        ):
            d = dict(r)
            d["codes"] = tuple(json.loads(d["codes"])) if d["codes"] else ()
            rows.append(d)
        return rows

    def own_report_labels(self, codebook: str) -> list[dict[str, Any]]:
        """Answered labels of ``codebook`` that are their action's actor's own report: the
        coder is ``self:`` + the action's participant (Tom's report on Tom's action; his
        view of Maya's actions is left out). Same columns as :meth:`answered_labels`."""
        rows = []
        for r in self.conn.execute(
            "SELECT l.action_id, l.question, l.coder, l.value, l.codes "
            "FROM coder_labels l JOIN actions a ON a.id = l.action_id "
            "WHERE l.codebook = ? AND l.coder GLOB 'self:*' AND a.participant IS NOT NULL "
            "AND l.coder = 'self:' || a.participant "
            "AND (l.value IS NOT NULL OR l.codes IS NOT NULL) ORDER BY l.action_id, l.question",
            (codebook,),
        ):
            d = dict(r)
            d["codes"] = tuple(json.loads(d["codes"])) if d["codes"] else ()
            rows.append(d)
        return rows

    def question_answers(
        self,
        codebook: str,
        question: str,
        coders: Sequence[str],
        action_ids: Iterable[str] | None = None,
    ) -> list[tuple[str, str, str | None, tuple[str, ...]]]:
        """(action id, coder, value, codes) of every answer of these coders to one
        question (of ``action_ids`` only, when given): the columns agreement needs, not
        the whole label rows."""
        if not coders:
            return []
        marks = ",".join("?" * len(coders))
        sql = (
            "SELECT l.action_id, l.coder, l.value, l.codes FROM {labels} "
            f"WHERE l.codebook = ? AND l.question = ? AND l.coder IN ({marks}) "
            "AND (l.value IS NOT NULL OR l.codes IS NOT NULL)"
        )
        if action_ids is not None:
            self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS _answers_of (id TEXT PRIMARY KEY)")
            self.conn.execute("DELETE FROM _answers_of")
            self.conn.executemany(
                "INSERT OR IGNORE INTO _answers_of VALUES (?)", ((i,) for i in action_ids)
            )
            sql += " AND l.action_id IN (SELECT id FROM _answers_of)"
        both, params = union_all(sql, (codebook, question, *coders), label_sources(coders))
        return [
            (a, c, v, tuple(json.loads(codes)) if codes else ())
            for a, c, v, codes in self.conn.execute(f"{both} ORDER BY 1, 2", params)
        ]

    def label_counts_by_coder(self) -> list[dict[str, Any]]:
        """Answered labels and labelled actions per (codebook, coder)."""
        return [
            dict(r)
            for r in self.conn.execute(
                "SELECT codebook, coder, count(*) AS labels, count(DISTINCT action_id) AS actions "
                "FROM labels WHERE value IS NOT NULL OR codes IS NOT NULL "
                "GROUP BY codebook, coder ORDER BY codebook, coder"
            )
        ]

    def _has_table(self, name: str, schema: str = "main") -> bool:
        return (
            self.conn.execute(
                f"SELECT 1 FROM {schema}.sqlite_master WHERE type = 'table' AND name = ?", (name,)
            ).fetchone()
            is not None
        )

    def llm_validation_runs(self) -> list[dict[str, Any]]:
        """LLM runs that reached a validation result (kappa or gate), newest first.

        Empty when the LLM coder's tables are absent or hold no validation.
        """
        if not self._has_table("llm_runs"):
            return []
        rows = []
        for r in self.conn.execute(
            "SELECT * FROM llm_runs WHERE kappa IS NOT NULL OR gate IS NOT NULL ORDER BY id DESC"
        ):
            d = dict(r)
            for key in ("report", "settings", "shot_ids"):
                if isinstance(d.get(key), str):
                    with suppress(ValueError):
                        d[key] = json.loads(d[key])
            rows.append(d)
        return rows

    def stored_agreement_runs(self) -> list[dict[str, Any]]:
        """Rows of the agreement runs table (migration 3) when it exists, newest first."""
        if not self._has_table("agreement_runs"):
            return []
        return [dict(r) for r in self.conn.execute("SELECT * FROM agreement_runs ORDER BY 1 DESC")]

    # -- merge --------------------------------------------------------------------------

    @contextmanager
    def attached(self, path: Path) -> Iterator[str]:
        """Attach another project file as schema ``other`` (outside any transaction)."""
        if self._in_transaction:
            raise StoreError("cannot attach a database inside a transaction")
        self.conn.execute(f"ATTACH DATABASE ? AS {MERGE_ALIAS}", (str(path),))
        try:
            yield MERGE_ALIAS
        finally:
            self.conn.execute(f"DETACH DATABASE {MERGE_ALIAS}")

    def merge_actions(self, import_id: int) -> tuple[int, int]:
        """Insert the attached file's actions missing here; return (new, differing).

        Differing: same id, but another session, type or content (ours are kept).
        """
        before = self.conn.total_changes
        self.conn.execute(
            f"INSERT OR IGNORE INTO main.actions ({ACTION_COPY_COLUMNS}, import_id) "
            f"SELECT {ACTION_COPY_COLUMNS}, ? FROM {MERGE_ALIAS}.actions ORDER BY session, seq",
            (import_id,),
        )
        new = self.conn.total_changes - before
        differing = self.conn.execute(
            f"SELECT count(*) FROM {MERGE_ALIAS}.actions o JOIN main.actions m ON m.id = o.id "
            "WHERE o.session IS NOT m.session OR o.action_type IS NOT m.action_type "
            "OR o.content IS NOT m.content"
        ).fetchone()[0]
        return new, differing

    def attached_action_count(self) -> int:
        return self.conn.execute(f"SELECT count(*) FROM {MERGE_ALIAS}.actions").fetchone()[0]

    def attached_codebooks(self) -> list[dict[str, Any]]:
        """Every codebook version of the attached file, with its text (to be verified)."""
        return [
            dict(r)
            for r in self.conn.execute(
                "SELECT name, version_hash, title, version, text, other_by_default "
                f"FROM {MERGE_ALIAS}.codebooks ORDER BY name, version_hash"
            )
        ]

    def merge_codebooks(self) -> int:
        """Copy codebook versions missing here; return how many. A time in the future
        becomes now: no version can stay the newest by its date alone."""
        before = self.conn.total_changes
        self.conn.execute(
            "INSERT OR IGNORE INTO main.codebooks "
            "(name, version_hash, title, version, text, source, added_at, other_by_default) "
            "SELECT name, version_hash, title, version, text, source, min(added_at, ?), "
            f"other_by_default FROM {MERGE_ALIAS}.codebooks",
            (now(),),
        )
        return self.conn.total_changes - before

    def merge_missing_labels(self) -> int:
        """Copy the attached file's labels whose (action, codebook, question, coder) is absent
        (with the revision of their content, whatever the other file's schema): the coders'
        in one statement, the gold row by row (a row of ``gold_answers`` each)."""
        last = self.conn.execute("SELECT coalesce(max(id), 0) FROM main.coder_labels").fetchone()[0]
        copied = self.conn.execute(
            f"INSERT INTO main.coder_labels ({LABEL_COPY_COLUMNS}) "
            f"SELECT {LABEL_COPY_COLUMNS} FROM {MERGE_ALIAS}.labels o WHERE o.coder <> ? "
            "AND NOT EXISTS (SELECT 1 FROM main.coder_labels m WHERE m.action_id = o.action_id"
            " AND m.codebook = o.codebook AND m.question = o.question AND m.coder = o.coder)"
            " ORDER BY o.id",
            (GOLD,),
        ).rowcount  # the rows inserted, not the triggers' updates
        refresh_revisions(self.conn, "id > ?", (last,))
        gold = self.conn.execute(
            "SELECT action_id, codebook, codebook_hash, question, value, codes, other_text, "
            f"source, meta, note, created_at, updated_at FROM {MERGE_ALIAS}.labels o "
            "WHERE o.coder = ? AND NOT EXISTS (SELECT 1 FROM main.gold m "
            "WHERE m.codebook = o.codebook AND m.action_id = o.action_id "
            "AND m.question = o.question) ORDER BY o.id",
            (GOLD,),
        ).fetchall()
        for r in gold:
            answer = self._their_gold_answer(r)
            self.conn.execute(
                "INSERT INTO main.gold (codebook, action_id, question, answer, revision, note, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (r["codebook"], r["action_id"], r["question"], *answer, r["note"],
                 r["created_at"], r["updated_at"]),
            )  # fmt: skip
        return copied + len(gold)

    def _their_gold_answer(self, r: Mapping[str, Any]) -> tuple[int, int]:
        """(gold answer id, revision) here of the attached file's gold row ``r``."""
        answer = self.gold_answer_id(  # type: ignore[attr-defined]
            r["codebook"], r["codebook_hash"], r["question"], r["value"], r["codes"],
            r["other_text"], r["source"], r["meta"],
        )  # fmt: skip
        revision = stored_revision(
            (r["action_id"], r["question"], GOLD, r["value"], r["codes"], r["other_text"],
             r["codebook_hash"])
        )  # fmt: skip
        return answer, revision

    def differing_labels(self) -> list[dict[str, Any]]:
        """Labels on the same key in both files whose answers differ, or where theirs has a
        note or a flag ours lacks: both rows' answer, note, flag and times, and
        ``answer_differs`` (the one place that decides whether the answers differ)."""
        return [
            dict(r)
            for r in self.conn.execute(
                "SELECT m.id AS our_id, o.action_id, o.codebook, o.question, o.coder, "
                "m.value AS our_value, m.codes AS our_codes, m.other_text AS our_other_text, "
                "m.note AS our_note, m.flagged AS our_flagged, "
                "m.updated_at AS our_updated_at, m.codebook_hash AS our_codebook_hash, "
                "o.value AS their_value, o.codes AS their_codes, "
                "o.other_text AS their_other_text, o.note AS their_note, "
                "o.flagged AS their_flagged, o.updated_at AS their_updated_at, "
                "o.codebook_hash AS their_codebook_hash, "
                "(o.value IS NOT m.value OR o.codes IS NOT m.codes "
                "OR o.other_text IS NOT m.other_text) AS answer_differs "
                f"FROM {MERGE_ALIAS}.labels o JOIN main.labels m ON m.action_id = o.action_id "
                "AND m.codebook = o.codebook AND m.question = o.question AND m.coder = o.coder "
                "WHERE answer_differs "
                "OR (coalesce(o.note, '') <> '' AND o.note IS NOT m.note) "
                "OR o.flagged > m.flagged "
                "ORDER BY o.codebook, o.coder, o.action_id, o.question"
            )
        ]

    def take_their_answer(self, our_id: int, key: Mapping[str, Any]) -> None:
        """Overwrite the answer of our label row ``our_id`` (answer, codebook hash, times,
        source) with the attached file's row of the same key; note and flag are left alone
        (see :meth:`set_label_note_flag`)."""
        where = "o.action_id = ? AND o.codebook = ? AND o.question = ? AND o.coder = ?"
        params = (key["action_id"], key["codebook"], key["question"], key["coder"])
        if key["coder"] == GOLD:
            theirs = self.conn.execute(
                "SELECT action_id, codebook, codebook_hash, question, value, codes, "
                f"other_text, source, meta, created_at, updated_at FROM {MERGE_ALIAS}.labels o "
                f"WHERE {where}",
                params,
            ).fetchone()
            self.conn.execute(
                "UPDATE main.gold SET answer = ?, revision = ?, created_at = ?, updated_at = ? "
                "WHERE id = ?",
                (*self._their_gold_answer(theirs), theirs["created_at"], theirs["updated_at"],
                 our_id),
            )  # fmt: skip
            return
        self.conn.execute(
            "UPDATE main.coder_labels SET (codebook_hash, value, codes, other_text, skipped, "
            "seconds, source, meta, created_at, updated_at) = ("
            " SELECT codebook_hash, value, codes, other_text, skipped, seconds,"
            f" source, meta, created_at, updated_at FROM {MERGE_ALIAS}.labels o"
            f" WHERE {where}) WHERE id = ?",
            (*params, our_id),
        )
        refresh_revisions(self.conn, "id = ?", (our_id,))

    def set_label_note_flag(self, our_id: int, note: str | None, flagged: bool) -> None:
        """Set the note and flag of our label row ``our_id`` (its times are kept; gold has
        a note and no flag)."""
        if our_id > GOLD_IDS:
            self.conn.execute("UPDATE main.gold SET note = ? WHERE id = ?", (note, our_id))
            return
        self.conn.execute(
            "UPDATE main.coder_labels SET note = ?, flagged = ? WHERE id = ?",
            (note, int(flagged), our_id),
        )

    def merge_samples(self) -> tuple[list[str], list[str]]:
        """Copy samples absent here; return (copied names, names that differ from ours)."""
        theirs = [
            r[0] for r in self.conn.execute(f"SELECT name FROM {MERGE_ALIAS}.samples ORDER BY 1")
        ]
        copied, differing = [], []
        for name in theirs:
            if self.conn.execute("SELECT 1 FROM main.samples WHERE name = ?", (name,)).fetchone():
                ours = self.conn.execute(
                    "SELECT action_id FROM main.sample_items WHERE sample = ? ORDER BY position",
                    (name,),
                ).fetchall()
                other = self.conn.execute(
                    f"SELECT action_id FROM {MERGE_ALIAS}.sample_items WHERE sample = ? "
                    "ORDER BY position",
                    (name,),
                ).fetchall()
                if [r[0] for r in ours] != [r[0] for r in other]:
                    differing.append(name)
                continue
            self.conn.execute(
                "INSERT INTO main.samples (name, seed, n, stratify, where_clause, origin, "
                "created_at) SELECT name, seed, n, stratify, where_clause, origin, created_at "
                f"FROM {MERGE_ALIAS}.samples WHERE name = ?",
                (name,),
            )
            self.conn.execute(
                "INSERT INTO main.sample_items (sample, position, action_id) "
                f"SELECT sample, position, action_id FROM {MERGE_ALIAS}.sample_items "
                "WHERE sample = ?",
                (name,),
            )
            copied.append(name)
        return copied, differing

    def merge_session_splits(self) -> tuple[list[str], list[str]]:
        """Copy session splits absent here; return (copied names, same-named splits whose
        sessions or parts differ from ours, which are kept)."""
        if not self._has_table("session_splits", MERGE_ALIAS):
            return [], []
        names = [
            r[0]
            for r in self.conn.execute(
                f"SELECT name FROM {MERGE_ALIAS}.session_splits WHERE name NOT IN "
                "(SELECT name FROM main.session_splits) ORDER BY 1"
            )
        ]
        differing = [
            r[0]
            for r in self.conn.execute(
                f"SELECT s.name FROM {MERGE_ALIAS}.session_splits s "
                "JOIN main.session_splits m ON m.name = s.name WHERE EXISTS ("
                f" SELECT session, part FROM {MERGE_ALIAS}.session_split_items WHERE split = s.name"
                " EXCEPT SELECT session, part FROM main.session_split_items WHERE split = s.name"
                ") OR EXISTS ("
                " SELECT session, part FROM main.session_split_items WHERE split = s.name"
                f" EXCEPT SELECT session, part FROM {MERGE_ALIAS}.session_split_items"
                " WHERE split = s.name) ORDER BY 1"
            )
        ]
        for name in names:
            self.conn.execute(
                "INSERT INTO main.session_splits SELECT * FROM "
                f"{MERGE_ALIAS}.session_splits WHERE name = ?",
                (name,),
            )
            self.conn.execute(
                "INSERT INTO main.session_split_items SELECT * FROM "
                f"{MERGE_ALIAS}.session_split_items WHERE split = ?",
                (name,),
            )
        return names, differing

    def runs_left_behind(self) -> tuple[list[int], list[int]]:
        """Ids of the attached file's LLM runs and agreement runs that a merge does not carry
        over and that this file does not already hold (an LLM run matched on its start time,
        coder, model, codebook and prompt hash; an agreement run on its time, codebook and
        labels hash)."""
        return (
            self._unmatched_ids(
                "llm_runs", ("started_at", "coder", "model", "codebook", "prompt_hash")
            ),
            self._unmatched_ids("agreement_runs", ("created_at", "codebook", "labels_hash")),
        )

    def _unmatched_ids(self, table: str, key: Sequence[str]) -> list[int]:
        if not self._has_table(table, MERGE_ALIAS):
            return []
        unmatched = ""
        if self._has_table(table):
            same = " AND ".join(f"m.{c} = o.{c}" for c in key)
            unmatched = f" WHERE NOT EXISTS (SELECT 1 FROM main.{table} m WHERE {same})"
        return [
            r[0]
            for r in self.conn.execute(
                f"SELECT o.id FROM {MERGE_ALIAS}.{table} o{unmatched} ORDER BY o.id"
            )
        ]
