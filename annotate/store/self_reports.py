"""Participants' own reports (coders ``self:NAME``): what their import checks against the
actions, and partner alignment counted in SQL (`annotate report`).

Partner alignment of one question at one action: two or more self-reporters answered it
there, and they all gave the same answer. The answer compared is ``value`` (a single
choice, including "other" whatever its text; the yes or no of a yes/no question, not its
reasons) or, for a multi-select question, the set of codes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from annotate.store.base import StoreBase

SELF_PREFIX = "self:"

_REPORTS = (
    "reports AS ("
    " SELECT l.action_id, l.question, count(*) AS reporters,"
    " count(DISTINCT coalesce(l.value, l.codes)) AS answers"
    " FROM labels l"
    " WHERE l.codebook = :codebook AND l.coder GLOB 'self:*'"
    " AND (l.value IS NOT NULL OR l.codes IS NOT NULL)"
    " AND l.question IN (SELECT value FROM json_each(:questions))"
    " {sessions}"
    " GROUP BY l.action_id, l.question HAVING count(*) >= 2)"
)
_IN_SESSIONS = (
    "AND l.action_id IN (SELECT id FROM actions WHERE session IN "
    "(SELECT value FROM json_each(:sessions)))"
)


def self_coder(participant: str) -> str:
    return SELF_PREFIX + participant


class SelfReportsMixin(StoreBase):
    # -- what an import checks ----------------------------------------------------------

    def action_sessions(self, ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """``{action id: (session, action type)}`` for the ids that are stored."""
        found: dict[str, tuple[str, str]] = {}
        sql = (
            "SELECT id, session, action_type FROM actions "
            "WHERE id IN (SELECT value FROM json_each(?))"
        )
        for r in self.conn.execute(sql, (json.dumps(list(dict.fromkeys(ids))),)):
            found[r[0]] = (r[1], r[2])
        return found

    def action_ids_at(self, places: Iterable[tuple[str, int]]) -> dict[tuple[str, int], str]:
        """``{(session, seq): action id}`` for the places that hold an action."""
        wanted = json.dumps([list(p) for p in dict.fromkeys(places)])
        sql = (
            "SELECT a.session, a.seq, a.id FROM json_each(?) w "
            "JOIN actions a ON a.session = json_extract(w.value, '$[0]') "
            "AND a.seq = json_extract(w.value, '$[1]')"
        )
        return {(r[0], r[1]): r[2] for r in self.conn.execute(sql, (wanted,))}

    def session_participants(self, sessions: Iterable[str]) -> dict[str, list[str]]:
        """The participants with an action in each of ``sessions``."""
        out: dict[str, list[str]] = {}
        sql = (
            "SELECT DISTINCT session, participant FROM actions "
            "WHERE session IN (SELECT value FROM json_each(?)) AND participant IS NOT NULL "
            "ORDER BY session, participant"
        )
        for session, participant in self.conn.execute(sql, (json.dumps(sorted(set(sessions))),)):
            out.setdefault(session, []).append(participant)
        return out

    # -- partner alignment --------------------------------------------------------------

    def self_report_codebooks(self) -> list[str]:
        """Codebooks on which two or more self-reporters answered."""
        sql = (
            "SELECT codebook FROM labels WHERE coder GLOB 'self:*' "
            "AND (value IS NOT NULL OR codes IS NOT NULL) "
            "GROUP BY codebook HAVING count(DISTINCT coder) >= 2 ORDER BY codebook"
        )
        return [r[0] for r in self.conn.execute(sql)]

    def _alignment(
        self, select: str, codebook: str, questions: Sequence[str], sessions: Any, **more: Any
    ) -> list[dict[str, Any]]:
        reports = _REPORTS.format(sessions=_IN_SESSIONS if sessions is not None else "")
        params = {
            "codebook": codebook,
            "questions": json.dumps(list(questions)),
            "sessions": json.dumps(sorted(sessions)) if sessions is not None else None,
            **more,
        }
        return [dict(r) for r in self.conn.execute(f"WITH {reports}{select}", params)]

    def alignment_by_action_type(
        self, codebook: str, questions: Sequence[str], sessions: Iterable[str] | None = None
    ) -> list[dict[str, Any]]:
        """Per question and action type: ``actions`` with two or more self-reports on the
        question and how many of them are ``aligned``."""
        return self._alignment(
            " SELECT r.question, a.action_type AS grp, count(*) AS actions,"
            " sum(r.answers = 1) AS aligned"
            " FROM reports r JOIN actions a ON a.id = r.action_id"
            " GROUP BY r.question, a.action_type ORDER BY r.question, a.action_type",
            codebook,
            questions,
            None if sessions is None else list(sessions),
        )

    def alignment_by_code(
        self,
        codebook: str,
        questions: Sequence[str],
        act_codebook: str,
        act_question: str,
        act_coders: Sequence[str],
        sessions: Iterable[str] | None = None,
    ) -> list[dict[str, Any]]:
        """As :meth:`alignment_by_action_type`, grouped by each action's code on
        ``act_codebook`` ``act_question``: the first of ``act_coders`` who answered it."""
        return self._alignment(
            ", prio AS (SELECT value AS coder, key AS rank FROM json_each(:coders)),"
            " act AS (SELECT action_id, value FROM ("
            "  SELECT l.action_id, l.value,"
            "  row_number() OVER (PARTITION BY l.action_id ORDER BY p.rank) AS rn"
            "  FROM labels l JOIN prio p ON p.coder = l.coder"
            "  WHERE l.codebook = :act_codebook AND l.question = :act_question"
            "  AND l.value IS NOT NULL"
            "  AND l.action_id IN (SELECT action_id FROM reports)) WHERE rn = 1)"
            " SELECT r.question, act.value AS grp, count(*) AS actions,"
            " sum(r.answers = 1) AS aligned"
            " FROM reports r JOIN act ON act.action_id = r.action_id"
            " GROUP BY r.question, act.value ORDER BY r.question, act.value",
            codebook,
            questions,
            None if sessions is None else list(sessions),
            coders=json.dumps(list(act_coders)),
            act_codebook=act_codebook,
            act_question=act_question,
        )

    def alignment_by_progress(
        self,
        codebook: str,
        questions: Sequence[str],
        bins: int,
        sessions: Iterable[str] | None = None,
    ) -> list[dict[str, Any]]:
        """As :meth:`alignment_by_action_type`, grouped by the action's place in its
        session: bin floor(bins * position / session length), position 0 .. length - 1
        over all the session's actions (in ``seq`` order)."""
        return self._alignment(
            ", pos AS (SELECT id,"
            " (row_number() OVER (PARTITION BY session ORDER BY seq, id) - 1) * :bins"
            " / count(*) OVER (PARTITION BY session) AS grp"
            " FROM actions WHERE session IN (SELECT a.session FROM reports r"
            " JOIN actions a ON a.id = r.action_id))"
            " SELECT r.question, pos.grp, count(*) AS actions, sum(r.answers = 1) AS aligned"
            " FROM reports r JOIN pos ON pos.id = r.action_id"
            " GROUP BY r.question, pos.grp ORDER BY r.question, pos.grp",
            codebook,
            questions,
            None if sessions is None else list(sessions),
            bins=int(bins),
        )
