"""Queries of self-annotation (``annotate code --self``): one participant's own actions in
time order, and the in-session checkpoint answers shown as anchors.

A small helper over an open store (composition, as :mod:`annotate.store.coding`), so that
adding it changes nothing for the rest of the store.
"""

from __future__ import annotations

from collections.abc import Sequence

from annotate.models import Action
from annotate.store.actions import ACTION_COLUMNS, row_to_action
from annotate.store.base import Database

CHECKPOINT = "checkpoint"
IS_CHECKPOINT = (
    f"(action_type = '{CHECKPOINT}' OR json_extract(meta, '$.source_type') = '{CHECKPOINT}')"
)


def is_checkpoint(action: Action) -> bool:
    """A checkpoint answer given during the session (an action of type ``checkpoint``, or a
    platform action whose own type was ``checkpoint``)."""
    return CHECKPOINT in (action.action_type, action.meta.get("source_type"))


class SelfQueries:
    def __init__(self, db: Database):
        self.db = db

    def participants_named(self, who: str, session: str | None = None) -> list[str]:
        """The stored participants ``who`` names: a participant name or id, or (with
        ``session``) a role in that session."""
        scope, params = ("session = ? AND ", [session]) if session is not None else ("", [])
        for where in (
            "participant = ?",  # the index: a name is found at once
            "json_extract(meta, '$.participant_id') = ?",
            *(["role = ?"] if session is not None else []),
        ):
            # no ORDER BY: it would walk the participant index row by row on a full scan
            one = not where.startswith("role")  # a name or an id is one participant
            rows = self.db.conn.execute(
                f"SELECT {'' if one else 'DISTINCT '}participant FROM actions "
                f"WHERE {scope}{where} AND participant IS NOT NULL" + (" LIMIT 1" if one else ""),
                [*params, who],
            ).fetchall()
            if rows:
                return sorted(r[0] for r in rows)
        return []

    def some_participants(self, limit: int = 12) -> list[str]:
        rows = self.db.conn.execute(
            "SELECT DISTINCT participant FROM actions WHERE participant IS NOT NULL "
            "ORDER BY participant LIMIT ?",
            (limit,),
        )
        return [r[0] for r in rows]

    def own_actions(self, participant: str, session: str | None = None) -> list[Action]:
        """The participant's actions (checkpoints aside), in time order: by timestamp where
        the log has one, else by session and turn."""
        sql = f"SELECT {ACTION_COLUMNS} FROM actions WHERE participant = ? AND NOT {IS_CHECKPOINT}"
        params: list[str] = [participant]
        if session is not None:
            sql += " AND session = ?"
            params.append(session)
        sql += " ORDER BY timestamp IS NULL, timestamp, session, seq"
        return [row_to_action(r) for r in self.db.conn.execute(sql, params)]

    def checkpoints(self, sessions: Sequence[str]) -> list[Action]:
        """The checkpoint actions of these sessions, in session order."""
        out: list[Action] = []
        ids = list(dict.fromkeys(sessions))
        for start in range(0, len(ids), 900):
            chunk = ids[start : start + 900]
            marks = ",".join("?" * len(chunk))
            out += [
                row_to_action(r)
                for r in self.db.conn.execute(
                    f"SELECT {ACTION_COLUMNS} FROM actions WHERE session IN ({marks}) "
                    f"AND {IS_CHECKPOINT} ORDER BY session, seq",
                    chunk,
                )
            ]
        return out
