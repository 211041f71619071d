"""Actions and the imports they came from."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from annotate.errors import NotFoundError, UsageError
from annotate.models import Action
from annotate.store.base import StoreBase, dumps, now

ACTION_COLUMNS = (
    "id, session, participant, role, seq, timestamp, elapsed_s, action_type, content, "
    "condition, meta"
)
STRATIFY_COLUMNS = ("action_type", "condition", "role", "session", "participant")


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


class ActionsMixin(StoreBase):
    def add_actions(
        self,
        actions: Sequence[Action],
        *,
        path: str,
        sha256: str,
        fmt: str,
        resequence_by_time: bool = False,
    ) -> int:
        """Insert actions not stored yet; return how many were new. One transaction.

        With ``resequence_by_time`` the sessions touched are renumbered by timestamp, so a
        session split across files (one per participant) reads in the order it happened.
        """
        with self.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO imports (path, sha256, format, n_actions, n_new, imported_at) "
                "VALUES (?, ?, ?, ?, 0, ?)",
                (path, sha256, fmt, len(actions), now()),
            )
            import_id = cur.lastrowid
            before = conn.total_changes
            conn.executemany(
                f"INSERT OR IGNORE INTO actions ({ACTION_COLUMNS}, import_id) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    (
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
                        import_id,
                    )
                    for a in actions
                ),
            )
            n_new = conn.total_changes - before
            if n_new == 0:  # a re-import leaves no trace
                conn.execute("DELETE FROM imports WHERE id = ?", (import_id,))
            else:
                conn.execute("UPDATE imports SET n_new = ? WHERE id = ?", (n_new, import_id))
            if resequence_by_time and n_new:
                for session in sorted({a.session for a in actions}):
                    self._resequence(conn, session)
        return n_new

    def _resequence(self, conn: sqlite3.Connection, session: str) -> None:
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM actions WHERE session = ? ORDER BY timestamp, seq, id", (session,)
            )
        ]
        conn.executemany(
            "UPDATE actions SET seq = ? WHERE id = ?", ((i, aid) for i, aid in enumerate(ids))
        )

    def existing_action_ids(self, ids: Iterable[str]) -> set[str]:
        wanted = list(dict.fromkeys(ids))
        found: set[str] = set()
        for start in range(0, len(wanted), 900):
            chunk = wanted[start : start + 900]
            marks = ",".join("?" * len(chunk))
            found.update(
                r[0]
                for r in self.conn.execute(f"SELECT id FROM actions WHERE id IN ({marks})", chunk)
            )
        return found

    def action(self, action_id: str) -> Action:
        row = self.conn.execute(
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
            for row in self.conn.execute(
                f"SELECT {ACTION_COLUMNS} FROM actions WHERE id IN ({marks})", chunk
            ):
                by_id[row["id"]] = row_to_action(row)
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise NotFoundError(f"no action with id '{missing[0]}'")
        return [by_id[i] for i in ids]

    def context(self, action: Action, *, before: int = 8, after: int = 0) -> list[Action]:
        """The ``before`` preceding and ``after`` following actions of the same session."""
        prev = self.conn.execute(
            f"SELECT {ACTION_COLUMNS} FROM actions WHERE session = ? AND seq < ? "
            "ORDER BY seq DESC LIMIT ?",
            (action.session, action.seq, before),
        ).fetchall()
        nxt = self.conn.execute(
            f"SELECT {ACTION_COLUMNS} FROM actions WHERE session = ? AND seq > ? "
            "ORDER BY seq LIMIT ?",
            (action.session, action.seq, after),
        ).fetchall()
        return [row_to_action(r) for r in reversed(prev)] + [row_to_action(r) for r in nxt]

    def session_actions(self, session: str) -> list[Action]:
        return [
            row_to_action(r)
            for r in self.conn.execute(
                f"SELECT {ACTION_COLUMNS} FROM actions WHERE session = ? ORDER BY seq", (session,)
            )
        ]

    def count_actions(self) -> int:
        return self.conn.execute("SELECT count(*) FROM actions").fetchone()[0]

    def action_rows(self, where: str | None = None) -> list[dict[str, Any]]:
        """Every action as a dict (for sampling and export); ``where`` is a SQL condition."""
        sql = f"SELECT {ACTION_COLUMNS} FROM actions"
        if where:
            sql += f" WHERE {where}"
        sql += " ORDER BY session, seq"
        try:
            return [dict(r) for r in self.conn.execute(sql)]
        except sqlite3.Error as exc:
            raise UsageError(
                f"--where: {exc}",
                hint="a SQL condition on the columns " + ACTION_COLUMNS,
            ) from exc

    def overview_by_condition(self) -> list[dict[str, Any]]:
        return [
            dict(r)
            for r in self.conn.execute(
                "SELECT coalesce(condition, '-') AS condition, count(DISTINCT session) AS sessions,"
                " count(*) AS actions, sum(action_type = 'message') AS messages "
                "FROM actions GROUP BY 1 ORDER BY 1"
            )
        ]

    def import_history(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.conn.execute("SELECT * FROM imports ORDER BY id")]
