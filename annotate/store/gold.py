"""Gold (coder ``gold``) in tables of its own (migration 20): one narrow row per (codebook,
action, question) in ``gold``, its answer and provenance a row of ``gold_answers`` that many
items share. ``labels`` is a view of the coders' table (``coder_labels``) and the gold, so
readers see gold as coder ``gold``; this module owns the writes of gold and the pieces of SQL
that let a reader go to the right table.

Gold has no flag, skip or time of its own: only an answer, its provenance and a note.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from annotate.coders import GOLD
from annotate.store.base import Database, codes_json, dumps, now
from annotate.store.revisions import content_revision

if TYPE_CHECKING:
    from annotate.codebook import Codebook
    from annotate.store.labels import LabelWrite

ANSWER_CONTENT = "json_array(?, ?, ?, ?, ?, ?, ?, ?)"
"""What identifies a row of ``gold_answers`` (codebook, codebook hash, question, value,
codes, Other text, source, meta), made by SQLite as migration 20 made it."""

ADD_ANSWER = (
    "INSERT OR IGNORE INTO gold_answers (codebook, codebook_hash, question, value, codes, "
    f"other_text, source, meta, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, {ANSWER_CONTENT})"
)
"""A row of ``gold_answers`` unless the same is there (its 8 columns, then them again)."""

VIEW_COLUMNS = (
    "id", "action_id", "codebook", "codebook_hash", "question", "coder", "value", "codes",
    "other_text", "note", "flagged", "skipped", "seconds", "source", "meta", "created_at",
    "updated_at", "revision",
)  # fmt: skip
"""The columns of the view ``labels``, in its order (the table's before migration 20)."""

GOLD_AS_LABELS = (
    "SELECT g.id AS id, g.action_id AS action_id, g.codebook AS codebook, "
    "a.codebook_hash AS codebook_hash, g.question AS question, 'gold' AS coder, "
    "a.value AS value, a.codes AS codes, a.other_text AS other_text, g.note AS note, "
    "0 AS flagged, 0 AS skipped, NULL AS seconds, a.source AS source, a.meta AS meta, "
    "g.created_at AS created_at, g.updated_at AS updated_at, g.revision AS revision "
    "FROM gold g JOIN gold_answers a ON a.id = g.answer"
)
"""The gold as rows of ``labels`` (the view's second half)."""


def has_gold(coders: Sequence[str] | None) -> bool:
    """Whether a reader of these coders (None: every coder) must read the gold too."""
    return coders is None or GOLD in coders


def labels_from(coders: Sequence[str] | None, index: str | None = None, alias: str = "l") -> str:
    """The ``FROM`` of a reader of these coders' labels: the coders' table through ``index``
    when the gold is not wanted, else the view ``labels`` (the gold with them)."""
    if has_gold(coders):
        return f"labels {alias}"
    hint = f" INDEXED BY {index}" if index else ""
    return f"coder_labels {alias}{hint}"


class Gold:
    def __init__(self, db: Database) -> None:
        self.db = db

    def gold_answer_id(
        self,
        codebook: str,
        codebook_hash: str,
        question: str,
        value: str | None,
        codes: str | None,
        other_text: str | None,
        source: str,
        meta: str,
    ) -> int:
        """The id of this answer and provenance in ``gold_answers`` (added if new)."""
        content = (codebook, codebook_hash, question, value, codes, other_text, source, meta)
        self.db.conn.execute(ADD_ANSWER, (*content, *content))
        return self.db.conn.execute(
            f"SELECT id FROM gold_answers WHERE content = {ANSWER_CONTENT}", content
        ).fetchone()[0]

    def gold_answer_ids(self, answers: Sequence[Sequence[Any]]) -> list[int]:
        """:meth:`gold_answer_id` of many answers (each its arguments) in three statements,
        not two per answer (an "Other" majority with its text is one per item)."""
        if len(answers) < 8:
            return [self.gold_answer_id(*a) for a in answers]
        self.db.conn.executemany(ADD_ANSWER, ((*a, *a) for a in answers))
        self.db.conn.execute("DROP TABLE IF EXISTS temp._answers_wanted")
        self.db.conn.execute(
            "CREATE TEMP TABLE _answers_wanted (i INTEGER PRIMARY KEY, content TEXT NOT NULL)"
        )
        self.db.conn.executemany(
            f"INSERT INTO temp._answers_wanted VALUES (?, {ANSWER_CONTENT})",
            ((i, *a) for i, a in enumerate(answers)),
        )
        return [
            r[0]
            for r in self.db.conn.execute(
                "SELECT a.id FROM temp._answers_wanted w JOIN gold_answers a "
                "ON a.content = w.content ORDER BY w.i"
            )
        ]

    def save_writes(
        self, codebook: Codebook, writes: Sequence[LabelWrite], provenance: bool, stamp: str
    ) -> int:
        """:meth:`~annotate.store.labels.Labels.save_answers` for gold (inside its
        transaction): the same upsert as the coders' labels get, row by row (gold is written
        in bulk by :meth:`~annotate.store.gold_votes.GoldVotes.write_staged_majority`)."""
        changed = 0
        version = codebook.version_hash
        for w in writes:
            a = w.answer
            codes = codes_json(a)
            kind = self.gold_answer_id(
                codebook.name, version, w.question, a.value, codes, a.other_text, w.source,
                dumps(w.meta or {}),
            )  # fmt: skip
            revision = content_revision(
                w.action_id, w.question, GOLD, a.value, sorted(a.codes), a.other_text, version
            )
            row = self.db.conn.execute(
                "SELECT g.id, g.answer, g.note, a.value, a.codes, a.other_text, a.codebook_hash "
                "FROM gold g JOIN gold_answers a ON a.id = g.answer "
                "WHERE g.codebook = ? AND g.action_id = ? AND g.question = ?",
                (codebook.name, w.action_id, w.question),
            ).fetchone()
            if row is None:
                self.db.conn.execute(
                    "INSERT INTO gold (codebook, action_id, question, answer, revision, note, "
                    "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (codebook.name, w.action_id, w.question, kind, revision, w.note, stamp, stamp),
                )
                changed += 1
                continue
            gold_id, stored_kind, note, value, stored_codes, other_text, stored_version = row
            differs = (value, stored_codes, other_text, stored_version) != (
                a.value, codes, a.other_text, version
            )  # fmt: skip
            new_note = w.note is not None and w.note != note
            refresh = provenance and stored_kind != kind
            if not (differs or new_note or refresh):
                continue
            unanswered = value is None and stored_codes is None
            self.db.conn.execute(  # the same answer keeps its revision (what a run compares)
                "UPDATE gold SET answer = ?, revision = CASE WHEN ? THEN ? ELSE revision END, "
                "note = coalesce(?, note), created_at = CASE WHEN ? THEN ? ELSE created_at END, "
                "updated_at = ? WHERE id = ?",
                (kind, differs, revision, w.note, unanswered, stamp, stamp, gold_id),
            )
            changed += 1
        return changed

    def clear_cells(self, codebook: str, cells: Sequence[tuple[str, str]]) -> None:
        """Undo the gold of these (action id, question): the row goes, or keeps its note
        with no answer (inside the caller's transaction)."""
        stamp = now()
        for action_id, question in cells:
            row = self.db.conn.execute(
                "SELECT g.id, g.note, a.codebook_hash, a.source, a.meta FROM gold g "
                "JOIN gold_answers a ON a.id = g.answer "
                "WHERE g.codebook = ? AND g.action_id = ? AND g.question = ?",
                (codebook, action_id, question),
            ).fetchone()
            if row is None:
                continue
            gold_id, note, version, source, meta = row
            if note is None:
                self.db.conn.execute("DELETE FROM gold WHERE id = ?", (gold_id,))
                continue
            empty = self.gold_answer_id(codebook, version, question, None, None, None, source, meta)
            revision = content_revision(action_id, question, GOLD, None, (), None, version)
            self.db.conn.execute(
                "UPDATE gold SET answer = ?, revision = ?, updated_at = ? WHERE id = ?",
                (empty, revision, stamp, gold_id),
            )

    def gold_codebooks(self) -> list[str]:
        """The codebooks with a gold row."""
        return [
            r[0]
            for r in self.db.conn.execute(
                "WITH RECURSIVE c(codebook) AS (SELECT min(codebook) FROM gold UNION ALL "
                "SELECT (SELECT min(codebook) FROM gold WHERE codebook > c.codebook) FROM c "
                "WHERE c.codebook IS NOT NULL) SELECT codebook FROM c WHERE codebook IS NOT NULL"
            )
        ]

    def rows_exist(self, codebook: str | None, answered: bool = False) -> bool:
        """Whether there is a gold row (of ``codebook``; ``answered``: with an answer)."""
        sql = "SELECT 1 FROM gold g"
        if answered:
            sql += " JOIN gold_answers a ON a.id = g.answer"
        sql += " WHERE 1"
        params: list[Any] = []
        if codebook is not None:
            sql += " AND g.codebook = ?"
            params.append(codebook)
        if answered:
            sql += " AND (a.value IS NOT NULL OR a.codes IS NOT NULL)"
        return self.db.conn.execute(sql + " LIMIT 1", params).fetchone() is not None


def label_sources(
    coders: Sequence[str] | None, index: str | None = None, alias: str = "l"
) -> list[str]:
    """The ``FROM`` of each half of a reader of these coders' labels (None: every coder),
    to be read one after the other (or joined by ``UNION ALL``): the coders' table through
    ``index`` when a coder other than gold is wanted, and the gold as label rows when gold
    is. Each half is planned alone, through its own index; the view ``labels`` in a join
    would be copied whole first."""
    out = []
    if coders is None or any(c != GOLD for c in coders):
        out.append(f"coder_labels {alias}" + (f" INDEXED BY {index}" if index else ""))
    if has_gold(coders):
        out.append(f"({GOLD_AS_LABELS}) {alias}")
    return out


def union_all(sql: str, params: Sequence[Any], sources: Sequence[str]) -> tuple[str, list[Any]]:
    """``sql`` (its ``FROM`` as ``{labels}``) over each source, joined by ``UNION ALL``, and
    its parameters once per source."""
    return (
        " UNION ALL ".join(sql.format(labels=s) for s in sources),
        [p for _ in sources for p in params],
    )
