"""Participants' own reports (coders ``self:NAME``): what their import checks against the
actions, and partner alignment counted in SQL (`annotate report`).

Partner alignment of one question at one action: two or more self-reporters answered it
there, and they all gave the same answer. The answer compared is ``value`` (a single
choice, including "other" whatever its text; the yes or no of a yes/no question, not its
reasons) or, for a multi-select question, the set of codes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from annotate.store.base import Database

_KEY = "coalesce(l.value, l.codes)"
_FILL = (
    # per action and question with two or more reports: are they all the same answer?
    "INSERT INTO _alignment (action_id, question, aligned)"
    f" SELECT l.action_id, l.question, min({_KEY}) = max({_KEY}) FROM coder_labels l"
    " WHERE l.codebook = :codebook AND l.coder GLOB 'self:*'"
    " AND (l.value IS NOT NULL OR l.codes IS NOT NULL)"
    " AND l.question IN (SELECT value FROM json_each(:questions)) {sessions}"
    " GROUP BY l.action_id, l.question HAVING count(*) >= 2"
)
_IN_SESSIONS = (
    "AND l.action_id IN (SELECT id FROM actions WHERE session IN "
    "(SELECT value FROM json_each(:sessions)))"
)
_BY_TYPE = (
    "SELECT r.question, a.action_type AS grp, count(*) AS actions, sum(r.aligned) AS aligned"
    " FROM _alignment r JOIN actions a ON a.id = r.action_id"
    " GROUP BY r.question, a.action_type ORDER BY r.question, a.action_type"
)
_BY_PROGRESS = (
    # all the actions of the sessions in play, in order; each one's rows by primary key
    "SELECT r.question, p.grp, count(*) AS actions, sum(r.aligned) AS aligned FROM ("
    " SELECT id, (row_number() OVER (PARTITION BY session ORDER BY seq, id) - 1) * :bins"
    " / count(*) OVER (PARTITION BY session) AS grp FROM actions WHERE session IN ("
    " SELECT DISTINCT a.session FROM _alignment r JOIN actions a ON a.id = r.action_id)) p"
    " CROSS JOIN _alignment r ON r.action_id = p.id"
    " GROUP BY r.question, p.grp ORDER BY r.question, p.grp"
)
_BY_CODE = (
    # each action's act once: the first of the coders in order who answered it
    # (the coders' labels and the gold each read through their own index)
    "WITH act AS (SELECT action_id, (SELECT value FROM ("
    " SELECT l.value, p.key FROM coder_labels l JOIN json_each(:coders) p ON p.value = l.coder"
    " WHERE l.action_id = r.action_id AND l.codebook = :act_codebook"
    " AND l.question = :act_question AND l.value IS NOT NULL"
    " UNION ALL SELECT a.value, p.key FROM gold g JOIN gold_answers a ON a.id = g.answer"
    " JOIN json_each(:coders) p ON p.value = 'gold' WHERE g.codebook = :act_codebook"
    " AND g.action_id = r.action_id AND g.question = :act_question AND a.value IS NOT NULL"
    ") ORDER BY key LIMIT 1) AS grp"
    " FROM (SELECT DISTINCT action_id FROM _alignment) r)"
    " SELECT r.question, act.grp, count(*) AS actions, sum(r.aligned) AS aligned"
    " FROM act CROSS JOIN _alignment r ON r.action_id = act.action_id"
    " WHERE act.grp IS NOT NULL GROUP BY r.question, act.grp ORDER BY r.question, act.grp"
)


@dataclass(frozen=True)
class AlignmentCounts:
    """Rows ``{question, grp, actions, aligned}``: the actions with two or more
    self-reports on the question in each group, and how many of them agree."""

    by_type: list[dict[str, Any]]
    by_progress: list[dict[str, Any]]
    by_code: list[dict[str, Any]]


class SelfReports:
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- what an import checks ----------------------------------------------------------

    def action_sessions(self, ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """``{action id: (session, action type)}`` for the ids that are stored."""
        found: dict[str, tuple[str, str]] = {}
        sql = (
            "SELECT id, session, action_type FROM actions "
            "WHERE id IN (SELECT value FROM json_each(?))"
        )
        for r in self.db.conn.execute(sql, (json.dumps(list(dict.fromkeys(ids))),)):
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
        return {(r[0], r[1]): r[2] for r in self.db.conn.execute(sql, (wanted,))}

    def session_participants(self, sessions: Iterable[str]) -> dict[str, list[str]]:
        """The participants with an action in each of ``sessions``."""
        out: dict[str, list[str]] = {}
        sql = (
            "SELECT DISTINCT session, participant FROM actions "
            "WHERE session IN (SELECT value FROM json_each(?)) AND participant IS NOT NULL "
            "ORDER BY session, participant"
        )
        for session, participant in self.db.conn.execute(sql, (json.dumps(sorted(set(sessions))),)):
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
        return [r[0] for r in self.db.conn.execute(sql)]

    def partner_alignment_counts(
        self,
        codebook: str,
        questions: Sequence[str],
        *,
        bins: int,
        sessions: Iterable[str] | None = None,
        act: tuple[str, str, Sequence[str]] | None = None,
    ) -> AlignmentCounts:
        """Partner alignment on ``questions`` by action type, by progress bin (floor(bins *
        position / session length), position 0 .. length - 1 over all the session's
        actions in ``seq`` order) and, with ``act`` = (codebook, question, coders), by each
        action's code there (the first of the coders who answered it). Over ``sessions``
        only, when given.

        The per-action comparison is done once, into a temporary table the three
        groupings read by primary key."""
        conn = self.db.conn
        conn.execute(
            "CREATE TEMP TABLE IF NOT EXISTS _alignment (action_id TEXT, question TEXT, "
            "aligned INTEGER, PRIMARY KEY (action_id, question)) WITHOUT ROWID"
        )
        try:
            conn.execute(
                _FILL.format(sessions=_IN_SESSIONS if sessions is not None else ""),
                {
                    "codebook": codebook,
                    "questions": json.dumps(list(questions)),
                    "sessions": json.dumps(sorted(sessions)) if sessions is not None else None,
                },
            )
            by_type = [dict(r) for r in conn.execute(_BY_TYPE)]
            by_progress = [dict(r) for r in conn.execute(_BY_PROGRESS, {"bins": int(bins)})]
            by_code: list[dict[str, Any]] = []
            if act is not None:
                params = {"act_codebook": act[0], "act_question": act[1]}
                params["coders"] = json.dumps(list(act[2]))
                by_code = [dict(r) for r in conn.execute(_BY_CODE, params)]
        finally:
            conn.execute("DELETE FROM _alignment")
        return AlignmentCounts(by_type, by_progress, by_code)

    def self_answers(self, codebook: str, question: str) -> Iterator[tuple[Any, ...]]:
        """The participants' own answers to one question with where they stand: (session,
        turn, seq, coder, value, action id), by session and turn. The turn is the action's
        ``meta.turn`` (a probe log's), else its place in the session."""
        yield from self.db.conn.execute(
            "SELECT a.session, COALESCE(json_extract(a.meta, '$.turn'), a.seq) AS turn, a.seq, "
            "l.coder, l.value, a.id "
            "FROM labels l JOIN actions a ON a.id = l.action_id "
            "WHERE l.codebook = ? AND l.question = ? AND l.coder LIKE 'self:%' "
            "AND l.value IS NOT NULL ORDER BY a.session, turn, a.seq",
            (codebook, question),
        )

    def self_answer_meta_keys(self, codebook: str) -> list[str]:
        """The top-level ``meta`` keys holding a plain value (text, number, true/false) on the
        actions that carry participants' own answers of ``codebook``, sorted."""
        return [
            r[0]
            for r in self.db.conn.execute(
                "SELECT DISTINCT m.key FROM actions a, json_each(a.meta) m "
                "WHERE a.id IN (SELECT action_id FROM labels WHERE codebook = ? "
                "AND coder LIKE 'self:%') "
                "AND m.type IN ('text', 'integer', 'real', 'true', 'false') ORDER BY m.key",
                (codebook,),
            )
        ]
