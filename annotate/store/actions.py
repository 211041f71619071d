"""Actions and the imports they came from."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from annotate.errors import NotFoundError, UsageError
from annotate.models import Action
from annotate.store.base import Database, dumps, now
from annotate.store.lock import process_running
from annotate.store.where import check_where, condition_sql, interruptible

if TYPE_CHECKING:  # numpy loads when a sample is drawn, not with every command
    import numpy as np

ACTION_COLUMNS = (
    "id, session, participant, role, seq, timestamp, elapsed_s, action_type, content, "
    "condition, meta"
)
ActionRow = list[Any]
"""An action as it is inserted: the values of :data:`ACTION_COLUMNS` in order, ``meta``
as its stored JSON. Importers build these straight from a line (no :class:`Action`); a
list, so that an import can number ``seq`` in time order in place before it writes."""
STRATIFY_COLUMNS = ("action_type", "condition", "role", "session", "participant")
READ_BY_IMPORT = frozenset({"actions_session_seq"})
"""The index of ``actions`` that an import reads between its groups (the sessions already
stored, renumbered, their roles inferred): never left for the end of a run."""


def row_to_action(row: sqlite3.Row) -> Action:
    return Action(
        id=row["id"],
        session=row["session"],
        seq=row["seq"],
        action_type=row["action_type"],
        content=row["content"],
        participant=row["participant"],
        role=row["role"],
        timestamp=row["timestamp"],
        elapsed_s=row["elapsed_s"],
        condition=row["condition"],
        meta=json.loads(row["meta"] or "{}"),
    )


def action_row(a: Action) -> ActionRow:
    return [
        a.id,
        a.session,
        a.participant,
        a.role,
        a.seq,
        a.timestamp,
        a.elapsed_s,
        a.action_type,
        a.content,
        a.condition,
        dumps(a.meta),
    ]


class Actions:
    def __init__(self, db: Database) -> None:
        self.db = db

    def begin_import(self, *, path: str, sha256: str, fmt: str) -> int:
        """Record an import; call inside a transaction, with :meth:`finish_import` at its end."""
        cur = self.db.conn.execute(
            "INSERT INTO imports (path, sha256, format, n_actions, n_new, imported_at) "
            "VALUES (?, ?, ?, 0, 0, ?)",
            (path, sha256, fmt, now()),
        )
        return int(cur.lastrowid or 0)

    def insert_actions(self, rows: Sequence[ActionRow], import_id: int) -> int:
        """Insert the actions not stored yet (matched by id); return how many were new."""
        before = self.db.conn.total_changes
        self.db.conn.executemany(
            f"INSERT OR IGNORE INTO actions ({ACTION_COLUMNS}, import_id) "
            f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, {int(import_id)})",
            rows,
        )
        return self.db.conn.total_changes - before

    @contextmanager
    def bulk_actions(self, *, defer_indexes: bool = False) -> Iterator[None]:
        """A bulk load of actions, inside a write transaction: a larger page cache, and when
        the table is empty its indexes are dropped and built once at the end of this
        transaction (one sort each instead of an insert into each per row). On an error the
        transaction's rollback brings them back as they were.

        ``defer_indexes``: the indexes an import does not read (all but
        :data:`READ_BY_IMPORT`) are built at the end of the run, by
        :meth:`restore_action_indexes`, not of this transaction: a million actions written
        in 50 transactions are then not inserted into them row by row (each insert in the
        middle of an index of a few distinct keys: 3.8 s of 12 at 1M, building them 1.5 s).
        They are listed in ``deferred_indexes`` with this process, so that if it dies
        first, the next open of the file builds them."""
        assert self.db.in_write, "bulk_actions runs inside store.db.transaction()"
        conn = self.db.conn
        now: list[str] = []
        if conn.execute("SELECT 1 FROM actions LIMIT 1").fetchone() is None:
            for name, sql in conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'index' "
                "AND tbl_name = 'actions' AND sql IS NOT NULL"
            ).fetchall():
                if defer_indexes and name not in READ_BY_IMPORT:
                    conn.execute(
                        "INSERT INTO deferred_indexes (name, sql, pid) VALUES (?, ?, ?)",
                        (name, sql, os.getpid()),
                    )
                else:
                    now.append(sql)
                conn.execute(f'DROP INDEX "{name}"')
        with self.db.larger_cache():
            yield
            for sql in now:
                conn.execute(sql)

    def restore_action_indexes(self) -> None:
        """Build the indexes that :meth:`bulk_actions` left for the end of a run."""
        listed = "SELECT name, sql, pid FROM deferred_indexes"
        if not self.db.conn.execute(listed).fetchone():
            return
        # SQLite's sorter takes as much memory as the page cache: the default 2 MB builds
        # a million actions' indexes in 0.1 s more than 64 MB does, and 120 MB smaller
        with self.db.transaction():
            built = {
                r[0]
                for r in self.db.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
            }
            for name, sql, _ in self.db.conn.execute(listed).fetchall():
                if name not in built:
                    self.db.conn.execute(sql)
            self.db.conn.execute("DELETE FROM deferred_indexes")

    def repair(self) -> None:
        """The indexes an import left for its end, once the process that left them is gone
        (opening a file while another process imports into it leaves them to that one)."""
        left = self.db.conn.execute("SELECT pid FROM deferred_indexes").fetchall()
        if left and not any(process_running(pid) for (pid,) in left):
            self.db.on_wait(
                f"{self.db.path}: building the indexes an interrupted import left, once "
                "(seconds for a million actions)"
            )
            self.restore_action_indexes()

    def conflicting_actions(self, rows: Sequence[ActionRow]) -> list[str]:
        """Ids among ``rows`` already stored with another session, type or content."""
        incoming = {r[0]: (r[1], r[7], r[8]) for r in rows}
        ids = list(incoming)
        clash = []
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = self.db.conn.execute(
                "SELECT id, session, action_type, content FROM actions "
                f"WHERE id IN ({', '.join('?' * len(chunk))})",
                chunk,
            )
            clash += [r[0] for r in rows if tuple(r[1:]) != incoming[r[0]]]
        return clash

    def stored_sessions(self, sessions: Iterable[str], *, without_role: bool = False) -> set[str]:
        """Those of ``sessions`` that have actions stored (``without_role``: an action whose
        role is not known), found on ``actions_session_seq``."""
        wanted = list(sessions)
        found: set[str] = set()
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            sql = f"SELECT DISTINCT session FROM actions WHERE session IN ({marks})"
            if without_role:
                sql += " AND role IS NULL"
            found.update(r[0] for r in self.db.conn.execute(sql, chunk))
        return found

    def finish_import(self, import_id: int, n_actions: int, n_new: int) -> None:
        if n_new == 0:  # a re-import leaves no trace
            self.db.conn.execute("DELETE FROM imports WHERE id = ?", (import_id,))
        else:
            self.db.conn.execute(
                "UPDATE imports SET n_actions = ?, n_new = ? WHERE id = ?",
                (n_actions, n_new, import_id),
            )

    def add_actions(self, actions: Sequence[Action], *, path: str, sha256: str, fmt: str) -> int:
        """Insert a list of actions as one import, in one transaction; return how many were new."""
        with self.db.transaction():
            import_id = self.begin_import(path=path, sha256=sha256, fmt=fmt)
            n_new = self.insert_actions([action_row(a) for a in actions], import_id)
            self.finish_import(import_id, len(actions), n_new)
        return n_new

    def _touched(self, sessions: Iterable[str]) -> None:
        self.db.conn.execute("CREATE TEMP TABLE IF NOT EXISTS _touched (session TEXT PRIMARY KEY)")
        self.db.conn.execute("DELETE FROM _touched")
        self.db.conn.executemany(
            "INSERT OR IGNORE INTO _touched VALUES (?)", ((s,) for s in sessions)
        )

    def resequence_by_time(self, sessions: Iterable[str]) -> None:
        """Renumber ``seq`` in these sessions by timestamp.

        A session split across files (one per participant) then reads in the order it
        happened, whichever file came first.
        """
        self._touched(sessions)
        self.db.conn.execute(
            "UPDATE actions SET seq = r.rn FROM ("
            " SELECT id, row_number() OVER (PARTITION BY session ORDER BY timestamp, seq, id) - 1"
            " AS rn FROM actions WHERE session IN (SELECT session FROM _touched)) AS r "
            "WHERE actions.id = r.id AND actions.seq IS NOT r.rn"
        )

    def infer_roles(self, sessions: Iterable[str]) -> None:
        """Fill missing roles: in the Map Task the participant who draws is the Follower.

        Only sessions with exactly two participants of whom exactly one drew are filled;
        ``--role NAME=ROLE`` at import sets roles explicitly.
        """
        self._touched(sessions)
        self.db.conn.execute(
            "WITH people AS (SELECT session, participant,"
            "  max(action_type IN ('draw', 'erase')) AS drew FROM actions"
            "  WHERE session IN (SELECT session FROM _touched) GROUP BY session, participant),"
            " clear AS (SELECT session FROM people GROUP BY session"
            "  HAVING count(*) = 2 AND sum(drew) = 1) "
            "UPDATE actions SET role = CASE WHEN p.drew THEN 'follower' ELSE 'guide' END,"
            " meta = json_set(meta, '$.role_inferred', json('true')) "
            # `+participant`: each session's people are looked up by session; by the
            # participant index, a name shared by every session ("Guide") would read all
            # of that name's actions once per session (22 s instead of 0.2 s at 100k)
            "FROM people AS p WHERE p.session = actions.session"
            " AND p.participant = +actions.participant AND actions.role IS NULL"
            " AND actions.session IN (SELECT session FROM clear)"
        )

    def stored_action_types(self) -> list[str]:
        """Every action type in the file, sorted: one seek per type on ``actions_type`` (a
        loose index scan), not a pass over every action."""
        sql = (
            "WITH RECURSIVE t(kind) AS (SELECT min(action_type) FROM actions UNION ALL"
            " SELECT (SELECT min(action_type) FROM actions WHERE action_type > t.kind)"
            " FROM t WHERE t.kind IS NOT NULL) SELECT kind FROM t WHERE kind IS NOT NULL"
        )
        return [r[0] for r in self.db.conn.execute(sql)]

    def action_types_by_id(self, ids: Iterable[str]) -> dict[str, str]:
        """The action type of each of ``ids`` that is stored (unknown ids are left out)."""
        wanted = list(dict.fromkeys(ids))
        found: dict[str, str] = {}
        for start in range(0, len(wanted), 900):
            chunk = wanted[start : start + 900]
            marks = ",".join("?" * len(chunk))
            found.update(
                self.db.conn.execute(
                    f"SELECT id, action_type FROM actions WHERE id IN ({marks})", chunk
                ).fetchall()
            )
        return found

    def action(self, action_id: str) -> Action:
        row = self.db.conn.execute(
            f"SELECT {ACTION_COLUMNS} FROM actions WHERE id = ?", (action_id,)
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no action with id '{action_id}'")
        return row_to_action(row)

    def actions_by_ids(self, ids: Sequence[str]) -> list[Action]:
        """Actions in the order of ``ids``."""
        by_id: dict[str, Action] = {}
        for start in range(0, len(ids), 900):
            chunk = list(ids[start : start + 900])
            marks = ",".join("?" * len(chunk))
            for row in self.db.conn.execute(
                f"SELECT {ACTION_COLUMNS} FROM actions WHERE id IN ({marks})", chunk
            ):
                by_id[row["id"]] = row_to_action(row)
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise NotFoundError(f"no action with id '{missing[0]}'")
        return [by_id[i] for i in ids]

    def context(self, action: Action, *, before: int = 8, after: int = 0) -> list[Action]:
        """The ``before`` preceding and ``after`` following actions of the same session."""
        prev = self.db.conn.execute(
            f"SELECT {ACTION_COLUMNS} FROM actions WHERE session = ? AND seq < ? "
            "ORDER BY seq DESC LIMIT ?",
            (action.session, action.seq, before),
        ).fetchall()
        nxt = self.db.conn.execute(
            f"SELECT {ACTION_COLUMNS} FROM actions WHERE session = ? AND seq > ? "
            "ORDER BY seq LIMIT ?",
            (action.session, action.seq, after),
        ).fetchall()
        return [row_to_action(r) for r in reversed(prev)] + [row_to_action(r) for r in nxt]

    def session_actions(self, session: str) -> list[Action]:
        return [
            row_to_action(r)
            for r in self.db.conn.execute(
                f"SELECT {ACTION_COLUMNS} FROM actions WHERE session = ? ORDER BY seq", (session,)
            )
        ]

    @contextmanager
    def trace_rows(self, action_types: Sequence[str] = ()) -> Iterator[sqlite3.Cursor]:
        """``(id, session, seq, participant, role, action_type, content, meta)`` of every
        action (of ``action_types``, when given) in session order, ties in the order the
        file had them: a cursor, so that a million actions are read as they are used."""
        sql = "SELECT id, session, seq, participant, role, action_type, content, meta FROM actions"
        if action_types:
            sql += f" WHERE action_type IN ({','.join('?' * len(action_types))})"
        cursor = self.db.conn.cursor()
        cursor.row_factory = None
        yield cursor.execute(sql + " ORDER BY session, seq, rowid", tuple(action_types))

    def count_actions(self) -> int:
        return self.db.conn.execute("SELECT count(*) FROM actions").fetchone()[0]

    def action_rows(self, where: str | None = None) -> list[dict[str, Any]]:
        """Every action as a dict (for sampling and export); ``where`` is one SQL condition
        (checked by :func:`~annotate.store.where.check_where`; Ctrl-C stops it)."""
        sql = f"SELECT {ACTION_COLUMNS} FROM actions"
        if where:
            sql += f" WHERE {condition_sql(check_where(self.db, where))}"
        sql += " ORDER BY session, seq"
        with self._where_query():
            return [dict(r) for r in self.db.conn.execute(sql)]

    @contextmanager
    def _where_query(self) -> Iterator[None]:
        """Run a query with the user's ``--where`` (Ctrl-C stops it); a bad one is a
        one-line error."""
        try:
            with interruptible(self.db.conn, "--where"):
                yield
        except sqlite3.Error as exc:
            raise UsageError(
                f"--where: {exc}",
                hint="a SQL condition on the columns " + ACTION_COLUMNS,
            ) from exc

    def _sampling_sql(self, where: str | None, columns: Sequence[str]) -> str:
        """The actions matching ``where`` in session order (what a draw numbers)."""
        sql = f"SELECT {', '.join(['rowid', *columns])} FROM actions"
        if where:
            sql += f" WHERE {condition_sql(check_where(self.db, where))}"
        return sql + " ORDER BY session, seq, rowid"

    @contextmanager
    def sampling_rows(
        self, where: str | None, stratify: Sequence[str] = ()
    ) -> Iterator[sqlite3.Cursor]:
        """``(rowid, *stratify)`` of the actions matching ``where`` (one SQL condition,
        checked by :func:`~annotate.store.where.check_where`; Ctrl-C stops it) in session
        order, as tuples: what a draw needs, and nothing of the actions' text."""
        unknown = [c for c in stratify if c not in STRATIFY_COLUMNS]
        if unknown:
            raise UsageError(f"--stratify: unknown column '{unknown[0]}'")
        sql = self._sampling_sql(where, stratify)
        with self._where_query():
            cursor = self.db.conn.cursor()
            cursor.row_factory = None
            yield cursor.execute(sql)

    def sampling_rowids(self, where: str | None) -> np.ndarray:
        """The row ids of the actions matching ``where`` in session order, as int64: the
        rows of :meth:`sampling_rows` without strata, read as one string of SQLite's
        instead of a Python tuple per row (a million actions: 0.13 s instead of 0.3 s).

        ``group_concat`` over a subquery with ORDER BY concatenates in that order: SQLite
        never flattens such a subquery into an aggregate (rule 16 of its query flattener),
        so the rows reach the aggregate in the order asked for."""
        import numpy as np

        sql = f"SELECT group_concat(rowid) FROM ({self._sampling_sql(where, ())})"
        with self._where_query():
            joined = self.db.conn.execute(sql).fetchone()[0]
        if joined is None:
            return np.empty(0, dtype=np.int64)
        return np.fromstring(joined, dtype=np.int64, sep=",")

    def overview_by_condition(self) -> list[dict[str, Any]]:
        return [
            dict(r)
            for r in self.db.conn.execute(
                # sessions counted per (condition, session) first: over actions_condition
                "SELECT coalesce(condition, '-') AS condition, count(DISTINCT session) AS sessions,"
                " sum(n) AS actions, sum(messages) AS messages FROM ("
                "  SELECT condition, session, count(*) AS n,"
                "  sum(action_type = 'message') AS messages"
                "  FROM actions GROUP BY condition, session) "
                "GROUP BY 1 ORDER BY 1"
            )
        ]

    def import_history(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.conn.execute("SELECT * FROM imports ORDER BY id")]
