"""Study analysis: session-level splits and the queries behind stats and report."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from annotate.errors import NotFoundError, UsageError
from annotate.store.base import Database, dumps, now
from annotate.store.gold import label_sources, union_all


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


class Analysis:
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- session splits -----------------------------------------------------------------

    def create_session_split(self, split: SessionSplitWrite, *, replace: bool = False) -> None:
        with self.db.transaction() as conn:
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
        row = self.db.conn.execute(
            "SELECT * FROM session_splits WHERE name = ?", (name,)
        ).fetchone()
        if row is None:
            names = [
                r[0] for r in self.db.conn.execute("SELECT name FROM session_splits ORDER BY 1")
            ]
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
            for r in self.db.conn.execute(
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
            for r in self.db.conn.execute(
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
            for r in self.db.conn.execute(
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
            for r in self.db.conn.execute(
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
        self.db.conn.execute("CREATE TEMP TABLE IF NOT EXISTS _facts_of (id TEXT PRIMARY KEY)")
        self.db.conn.execute("DELETE FROM _facts_of")
        self.db.conn.executemany("INSERT OR IGNORE INTO _facts_of VALUES (?)", ((i,) for i in ids))
        if not positions:
            return self.db.conn.execute(
                "SELECT a.id, a.session, a.condition, a.role, a.action_type "
                "FROM _facts_of w CROSS JOIN actions a ON a.id = w.id"
            ).fetchall()
        return self.db.conn.execute(
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
        return {r[0]: tuple(r[1:]) for r in self.db.conn.execute(sql, (wanted,))}

    def action_fields(
        self, ids: Iterable[str], columns: Sequence[str], meta_paths: Sequence[str]
    ) -> list[tuple[Any, ...]]:
        """Of these actions: id, the ``columns`` (checked by the caller) and the value at
        each ``meta`` path (``pairing``, ``request.target``; JSON true/false as ``true``
        and ``false``, an object as its JSON text, missing as None), in one pass."""
        self.db.conn.execute("CREATE TEMP TABLE IF NOT EXISTS _facts_of (id TEXT PRIMARY KEY)")
        self.db.conn.execute("DELETE FROM _facts_of")
        self.db.conn.executemany("INSERT OR IGNORE INTO _facts_of VALUES (?)", ((i,) for i in ids))
        selected = [f"a.{c}" for c in columns]
        params: list[str] = []
        for path in meta_paths:
            json_path = "$" + "".join(f'."{part}"' for part in path.split("."))
            selected.append(
                "CASE json_type(a.meta, ?) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' "
                "ELSE json_extract(a.meta, ?) END"
            )
            params += [json_path, json_path]
        return self.db.conn.execute(
            f"SELECT {', '.join(['a.id', *selected])} "
            "FROM _facts_of w CROSS JOIN actions a ON a.id = w.id",
            params,
        ).fetchall()

    def label_meta_values(
        self, codebook: str, question: str, coder: str, key: str
    ) -> list[tuple[str, Any]]:
        """``(action_id, meta[key])`` of a coder's answered labels on a question (what a
        rule recorded with its answers, e.g. ``delayed``)."""
        return self.db.conn.execute(
            "SELECT action_id, json_extract(meta, ?) FROM labels WHERE codebook = ? "
            "AND question = ? AND coder = ? AND value IS NOT NULL",
            (f'$."{key}"', codebook, question, coder),
        ).fetchall()

    def action_ids_of_sessions(self, sessions: Iterable[str]) -> list[str]:
        """The ids of every action of these sessions (by index on ``(session, seq)``)."""
        return [
            r[0]
            for s in sorted(set(sessions))
            for r in self.db.conn.execute("SELECT id FROM actions WHERE session = ?", (s,))
        ]

    def answered_labels(self, codebook: str, coders: Sequence[str]) -> list[dict[str, Any]]:
        """Answered labels of these coders: action, question, coder, value, codes (a tuple)."""
        if not coders:
            return []
        marks = ",".join("?" * len(coders))
        rows = []
        for r in self.db.conn.execute(
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
        for r in self.db.conn.execute(
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
            self.db.conn.execute(
                "CREATE TEMP TABLE IF NOT EXISTS _answers_of (id TEXT PRIMARY KEY)"
            )
            self.db.conn.execute("DELETE FROM _answers_of")
            self.db.conn.executemany(
                "INSERT OR IGNORE INTO _answers_of VALUES (?)", ((i,) for i in action_ids)
            )
            sql += " AND l.action_id IN (SELECT id FROM _answers_of)"
        both, params = union_all(sql, (codebook, question, *coders), label_sources(coders))
        return [
            (a, c, v, tuple(json.loads(codes)) if codes else ())
            for a, c, v, codes in self.db.conn.execute(f"{both} ORDER BY 1, 2", params)
        ]

    def label_counts_by_coder(self) -> list[dict[str, Any]]:
        """Answered labels and labelled actions per (codebook, coder)."""
        return [
            dict(r)
            for r in self.db.conn.execute(
                "SELECT codebook, coder, count(*) AS labels, count(DISTINCT action_id) AS actions "
                "FROM labels WHERE value IS NOT NULL OR codes IS NOT NULL "
                "GROUP BY codebook, coder ORDER BY codebook, coder"
            )
        ]

    def llm_validation_runs(self) -> list[dict[str, Any]]:
        """LLM runs that reached a validation result (kappa or gate), newest first.

        Empty when the LLM coder's tables are absent or hold no validation.
        """
        if not self.db.has_table("llm_runs"):
            return []
        rows = []
        for r in self.db.conn.execute(
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
        if not self.db.has_table("agreement_runs"):
            return []
        return [
            dict(r) for r in self.db.conn.execute("SELECT * FROM agreement_runs ORDER BY 1 DESC")
        ]
