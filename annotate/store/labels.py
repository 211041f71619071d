"""Labels: one row per (action, codebook, question, coder); each write is its own transaction."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from annotate.coders import GOLD
from annotate.store.base import Database, codes_json, dumps, now
from annotate.store.gold import label_sources, union_all
from annotate.store.revisions import content_revision

if TYPE_CHECKING:
    import pandas as pd

    from annotate.codebook import Answer, Codebook
    from annotate.store.gold import Gold
    from annotate.store.samples import Samples

CORPUS_SOURCE = "corpus"
"""The source of labels that came with a corpus (``annotate import --labels-as``)."""

LABEL_COLUMNS = (
    "action_id",
    "codebook",
    "codebook_hash",
    "question",
    "coder",
    "value",
    "codes",
    "other_text",
    "note",
    "flagged",
    "skipped",
    "seconds",
    "source",
    "meta",
    "created_at",
    "updated_at",
)


@dataclass(frozen=True)
class LabelWrite:
    """One answer to store (used for bulk imports)."""

    action_id: str
    question: str
    coder: str
    answer: Answer
    source: str = "import"
    meta: dict[str, Any] | None = None
    note: str | None = None
    """A note to set with the answer (None leaves a stored note as it is)."""


def decoded_label(row: Any) -> dict[str, Any]:
    """A label row as a dict, its codes a tuple and its meta a dict (when read)."""
    d = dict(row)
    if "codes" in d:
        d["codes"] = tuple(json.loads(d["codes"])) if d["codes"] else ()
    if "meta" in d:
        meta = d["meta"]
        d["meta"] = json.loads(meta) if meta and meta != "{}" else {}
    return d


RATIONALE_KEY = "text"
"""Where a label's meta keeps the rationale a participant gave beside a coded answer (a
self-report's free text)."""

RATIONALE_CHANGED = (
    f"OR (json_extract(excluded.meta, '$.{RATIONALE_KEY}') IS NOT NULL "
    f"AND json_extract(labels.meta, '$.{RATIONALE_KEY}') "
    f"IS NOT json_extract(excluded.meta, '$.{RATIONALE_KEY}')) "
)
"""An unchanged answer with another rationale is written (its meta replaced, the revision
kept: the rationale is not the answer), so that a participant's corrected words are kept;
a write without one leaves the stored one, as a write without a note does."""


KEPT_RATIONALE = (
    f"CASE WHEN json_extract(excluded.meta, '$.{RATIONALE_KEY}') IS NULL "
    f"AND json_extract(labels.meta, '$.{RATIONALE_KEY}') IS NOT NULL "
    f"THEN json_set(coalesce(excluded.meta, '{{}}'), '$.{RATIONALE_KEY}', "
    f"json_extract(labels.meta, '$.{RATIONALE_KEY}')) ELSE excluded.meta END"
)
"""The meta a write stores: its own, with the stored rationale where it brings none."""


def _upsert_sql(provenance: bool) -> str:
    refresh = (
        "OR labels.source IS NOT excluded.source OR labels.meta IS NOT excluded.meta "
        "OR labels.codebook_hash IS NOT excluded.codebook_hash"
        if provenance
        else ""
    )
    return (
        "INSERT INTO coder_labels AS labels (action_id, codebook, codebook_hash, question, "
        "coder, value, codes, other_text, skipped, seconds, source, meta, note, created_at, "
        "updated_at, revision) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (action_id, codebook, question, coder) DO UPDATE SET "
        "codebook_hash = excluded.codebook_hash, value = excluded.value, "
        "revision = excluded.revision, "
        "codes = excluded.codes, other_text = excluded.other_text, skipped = 0, "
        "seconds = coalesce(labels.seconds, 0) + coalesce(excluded.seconds, 0), "
        f"source = excluded.source, meta = {KEPT_RATIONALE}, "
        "note = coalesce(excluded.note, labels.note), "
        "created_at = CASE WHEN labels.value IS NULL AND labels.codes IS NULL "
        "  THEN excluded.created_at ELSE labels.created_at END, "
        "updated_at = excluded.updated_at "
        "WHERE labels.value IS NOT excluded.value OR labels.codes IS NOT excluded.codes "
        "OR labels.other_text IS NOT excluded.other_text OR labels.skipped = 1 "
        "OR excluded.seconds IS NOT NULL "
        f"OR (excluded.note IS NOT NULL AND labels.note IS NOT excluded.note) {RATIONALE_CHANGED}"
        f"{refresh}"
    )


def _upsert_params(
    codebook: Codebook, w: LabelWrite, seconds: float | None, stamp: str
) -> tuple[Any, ...]:
    a = w.answer
    return (
        w.action_id,
        codebook.name,
        codebook.version_hash,
        w.question,
        w.coder,
        a.value,
        codes_json(a),
        a.other_text,
        seconds,
        w.source,
        dumps(w.meta or {}),
        w.note,
        stamp,
        stamp,
        content_revision(
            w.action_id,
            w.question,
            w.coder,
            a.value,
            sorted(a.codes),
            a.other_text,
            codebook.version_hash,
        ),
    )


def clear_coder_cells(
    conn: sqlite3.Connection,
    codebook: str,
    coder: str,
    cells: Sequence[tuple[str, str]],
    keep_time: bool = False,
) -> None:
    """Undo a coder's answers to these (action id, question) (inside the caller's
    transaction): a row goes back to unanswered, with the revision of that content, or away
    if nothing else is on it (``keep_time``: nor time spent on the item)."""
    stamp = now()
    for action_id, question in cells:
        row = conn.execute(
            "SELECT id, codebook_hash FROM coder_labels WHERE action_id = ? AND codebook = ? "
            "AND question = ? AND coder = ?",
            (action_id, codebook, question, coder),
        ).fetchone()
        if row is None:
            continue
        label_id, version = row
        revision = content_revision(action_id, question, coder, None, (), None, version)
        conn.execute(
            "UPDATE coder_labels SET value = NULL, codes = NULL, other_text = NULL, "
            "revision = ?, updated_at = ? WHERE id = ?",
            (revision, stamp, label_id),
        )
        conn.execute(
            "DELETE FROM coder_labels WHERE id = ? AND flagged = 0 AND skipped = 0 "
            "AND note IS NULL" + (" AND coalesce(seconds, 0) = 0" if keep_time else ""),
            (label_id,),
        )


class Labels:
    def __init__(self, db: Database, gold: Gold, samples: Samples) -> None:
        self.db = db
        self.gold = gold
        self.samples = samples

    def save_answer(
        self,
        action_id: str,
        codebook: Codebook,
        question_id: str,
        coder: str,
        answer: Answer,
        *,
        seconds: float | None = None,
        source: str = "tui",
        meta: dict[str, Any] | None = None,
    ) -> None:
        """Store one answer in its own committed transaction.

        A changed answer keeps ``created_at`` (time of first answer) and updates
        ``updated_at``; ``seconds`` accumulates the time spent on it.
        """
        answer.check(codebook.question(question_id))
        write = LabelWrite(action_id, question_id, coder, answer, source, meta)
        with self.db.transaction():
            if coder == GOLD:
                self.gold.save_writes(codebook, [write], False, now())
            else:
                self._upsert(codebook, write, seconds)

    def save_answers(
        self, codebook: Codebook, writes: Sequence[LabelWrite], *, provenance: bool = False
    ) -> int:
        """Store many answers in one transaction (all or nothing); return how many changed.

        The one rule of a label write: an unchanged answer (value, codes, Other text) keeps
        its row and revision, but a new note, time spent, or rationale (the meta's
        :data:`RATIONALE_KEY`) is written; with ``provenance`` its source, meta and codebook
        hash are brought up to date too (gold made again, an LLM run that gave the same
        answer as an earlier run). A changed answer gets the revision of its content.
        """
        checked: set[tuple[Any, ...]] = set()  # the same answer to the same question: once
        gold = []
        for w in writes:
            key = (w.question, w.answer)
            if key not in checked:
                w.answer.check(codebook.question(w.question))
                checked.add(key)
            if w.coder == GOLD:
                gold.append(w)
        stamp = now()
        with self.db.transaction() as conn:
            before = conn.total_changes
            conn.executemany(
                _upsert_sql(provenance),
                (_upsert_params(codebook, w, None, stamp) for w in writes if w.coder != GOLD),
            )
            changed = conn.total_changes - before
            if gold:
                changed += self.gold.save_writes(codebook, gold, provenance, stamp)
            return changed

    def _upsert(
        self, codebook: Codebook, w: LabelWrite, seconds: float | None, *, provenance: bool = False
    ) -> None:
        self.db.conn.execute(_upsert_sql(provenance), _upsert_params(codebook, w, seconds, now()))

    def clear_answer(
        self,
        action_id: str,
        codebook: str,
        question_id: str,
        coder: str,
        *,
        keep_time: bool = False,
    ) -> None:
        """Undo an answer: the row goes back to unanswered (or away, if nothing else is on it).

        With ``keep_time`` a row that holds time spent on the item stays, so that the
        coder's time is not lost with the answer.
        """
        with self.db.transaction() as conn:
            if coder == GOLD:
                self.gold.clear_cells(codebook, [(action_id, question_id)])
                return
            clear_coder_cells(conn, codebook, coder, [(action_id, question_id)], keep_time)

    def _mark(
        self,
        action_id: str,
        codebook: Codebook,
        coder: str,
        questions: Iterable[str],
        column: str,
        value: Any,
        *,
        add: bool = False,
    ) -> None:
        """Set ``column`` on the coder's rows for ``questions`` (a missing row is made,
        unanswered) in one transaction. ``add``: add ``value`` to the stored one, and leave
        ``updated_at`` as it is."""
        assert column in {"flagged", "skipped", "note", "seconds"}
        if coder == GOLD:
            raise ValueError("gold has an answer and a note only: no flag, skip or time")
        update = (
            f"{column} = coalesce(labels.{column}, 0) + excluded.{column}"
            if add
            else f"{column} = excluded.{column}, updated_at = excluded.updated_at"
        )
        stamp = now()
        with self.db.transaction() as conn:
            for q in questions:
                conn.execute(
                    "INSERT INTO coder_labels AS labels (action_id, codebook, codebook_hash, "
                    f"question, coder, {column}, created_at, updated_at, revision) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    f"ON CONFLICT (action_id, codebook, question, coder) DO UPDATE SET {update}",
                    (
                        action_id,
                        codebook.name,
                        codebook.version_hash,
                        q,
                        coder,
                        value,
                        stamp,
                        stamp,
                        content_revision(
                            action_id, q, coder, None, (), None, codebook.version_hash
                        ),
                    ),
                )

    def set_flag(
        self,
        action_id: str,
        codebook: Codebook,
        coder: str,
        questions: Iterable[str],
        flagged: bool = True,
    ) -> None:
        self._mark(action_id, codebook, coder, questions, "flagged", int(flagged))

    def set_note(
        self,
        action_id: str,
        codebook: Codebook,
        coder: str,
        questions: Iterable[str],
        note: str | None,
    ) -> None:
        self._mark(action_id, codebook, coder, questions, "note", note or None)

    def set_skipped(
        self,
        action_id: str,
        codebook: Codebook,
        coder: str,
        questions: Iterable[str],
        skipped: bool = True,
    ) -> None:
        self._mark(action_id, codebook, coder, questions, "skipped", int(skipped))

    def add_item_seconds(
        self, action_id: str, codebook: Codebook, coder: str, question: str, seconds: float
    ) -> None:
        """Add time spent on an item to its row for ``question``, making an unanswered row
        (no value, not skipped) if there is none yet. One transaction."""
        self._mark(action_id, codebook, coder, [question], "seconds", seconds, add=True)

    # -- reading ------------------------------------------------------------------------

    def label_rows(
        self,
        codebook: str,
        *,
        coders: Sequence[str] | None = None,
        action_ids: Sequence[str] | None = None,
        question: str | None = None,
        answered_only: bool = False,
        sample: str | None = None,
        columns: Sequence[str] = LABEL_COLUMNS,
    ) -> list[dict[str, Any]]:
        """Label rows as dicts (codes as a tuple, meta as a dict); ``sample`` keeps the
        items of that sample (read in SQL; ``action_ids`` copies ids to a temp table);
        ``columns`` (of :data:`LABEL_COLUMNS`) keeps the dicts small at corpus scale."""
        unknown = set(columns) - set(LABEL_COLUMNS)
        assert not unknown, unknown
        order = ("action_id", "question", "coder")
        read = [*columns, *(c for c in order if c not in columns)]  # what the order needs
        sql = f"SELECT {', '.join(f'l.{c}' for c in read)} FROM {{labels}} WHERE l.codebook = ?"
        params: list[Any] = [codebook]
        if coders:
            sql += f" AND l.coder IN ({','.join('?' * len(coders))})"
            params += list(coders)
        if question:
            sql += " AND l.question = ?"
            params.append(question)
        if answered_only:
            sql += " AND (l.value IS NOT NULL OR l.codes IS NOT NULL)"
        if action_ids is not None:
            self.db.conn.execute("CREATE TEMP TABLE IF NOT EXISTS _wanted (id TEXT PRIMARY KEY)")
            self.db.conn.execute("DELETE FROM _wanted")
            self.db.conn.executemany(
                "INSERT OR IGNORE INTO _wanted VALUES (?)", ((i,) for i in action_ids)
            )
            sql += " AND l.action_id IN (SELECT id FROM _wanted)"
        if sample is not None:
            sql += " AND l.action_id IN (SELECT action_id FROM sample_items WHERE sample = ?)"
            params.append(sample)
        both, all_params = union_all(sql, params, label_sources(coders or None))
        rows = self.db.conn.execute(f"{both} ORDER BY {', '.join(order)}", all_params)
        extra = [c for c in read if c not in columns]
        out = [decoded_label(r) for r in rows]
        for d in out if extra else ():
            for c in extra:
                del d[c]
        return out

    def labels_frame(self, codebook: str, **filters: Any) -> pd.DataFrame:
        """Labels as a long table (one row per action, question and coder)."""
        import pandas as pd  # on first use: most commands never need it

        return pd.DataFrame(self.label_rows(codebook, **filters), columns=list(LABEL_COLUMNS))

    def coders(self, codebook: str | None = None) -> list[str]:
        """Coders with a label: an answer, skip, flag or note. A row that holds only the time
        spent looking at an item (a coder who browsed and quit) does not make a coder."""
        in_book = " AND l.codebook = ?" if codebook else ""
        return [
            c
            for c in self._distinct_coders(codebook)
            if c == GOLD
            or self.db.conn.execute(
                "SELECT 1 FROM coder_labels l WHERE l.coder = ?" + in_book + " AND (l.value "
                "IS NOT NULL OR l.codes IS NOT NULL OR l.skipped OR l.flagged OR l.note IS NOT "
                "NULL) LIMIT 1",
                (c, codebook) if codebook else (c,),
            ).fetchone()
        ]

    def _distinct_coders(self, codebook: str | None = None) -> list[str]:
        """Every coder with a row (of ``codebook``), sorted: one index seek per coder (a loose
        index scan on ``coder_labels(coder, codebook)`` or ``(codebook, coder)``), not a pass
        over every label; ``gold`` when it has a row."""
        book = " AND codebook = :book" if codebook else ""
        sql = (
            "WITH RECURSIVE c(coder) AS ("
            f" SELECT min(coder) FROM coder_labels WHERE 1{book}"
            f" UNION ALL SELECT (SELECT min(coder) FROM coder_labels WHERE coder > c.coder{book})"
            " FROM c WHERE c.coder IS NOT NULL"
            ") SELECT coder FROM c WHERE coder IS NOT NULL"
        )
        found = [r[0] for r in self.db.conn.execute(sql, {"book": codebook})]
        if self.gold.rows_exist(codebook):
            found = sorted({*found, GOLD})
        return found

    def corpus_coders(self) -> list[str]:
        """Coders whose every label came with a corpus (``import --labels-as``)."""
        return [
            c
            for c in self._distinct_coders()
            if c != GOLD  # gold is made here (adjudicate, import-labels), never a corpus's
            and not self.db.conn.execute(
                "SELECT 1 FROM coder_labels WHERE coder = ? AND source IS NOT ? LIMIT 1",
                (c, CORPUS_SOURCE),
            ).fetchone()
        ]

    def labelled_codebooks(self) -> list[str]:
        found = {
            r[0] for r in self.db.conn.execute("SELECT DISTINCT codebook FROM coder_labels")
        } | set(self.gold.gold_codebooks())
        return sorted(found)

    def coder_progress(self, sample: str, codebook: Codebook) -> list[dict[str, Any]]:
        """Per coder: items fully coded, skipped, flagged, of the sample's N (applicable).

        Counted in SQL, over the index ``labels_progress`` (one row per coder comes back)."""
        self.samples.sample_exists_or_fail(sample)
        n = self.db.conn.execute(
            "SELECT count(*) FROM sample_items WHERE sample = ?", (sample,)
        ).fetchone()[0]
        n_questions = len(codebook.questions)
        rows = self.db.conn.execute(
            "SELECT coder, sum(answered >= :q) AS coded, "
            "sum(answered < :q AND skipped) AS skipped, sum(flagged) AS flagged, "
            "total(seconds) AS seconds FROM ("
            " SELECT l.coder, l.action_id, sum(l.value IS NOT NULL OR l.codes IS NOT NULL)"
            " AS answered, max(l.skipped) AS skipped, max(l.flagged) AS flagged,"
            " total(l.seconds) AS seconds"
            " FROM coder_labels l JOIN sample_items s ON s.sample = :sample"
            " AND s.action_id = l.action_id WHERE l.codebook = :codebook"
            " GROUP BY l.coder, l.action_id"
            " UNION ALL SELECT 'gold', g.action_id, count(*), 0, 0, 0"
            " FROM gold g JOIN gold_answers a ON a.id = g.answer"
            " JOIN sample_items s ON s.sample = :sample AND s.action_id = g.action_id"
            " WHERE g.codebook = :codebook AND (a.value IS NOT NULL OR a.codes IS NOT NULL)"
            " GROUP BY g.action_id) "
            "GROUP BY coder ORDER BY coder",
            {"q": n_questions, "sample": sample, "codebook": codebook.name},
        )
        return [
            {
                "coder": r["coder"],
                "coded": r["coded"],
                "skipped": r["skipped"],
                "flagged": r["flagged"],
                "n": n,
                "seconds": r["seconds"],
            }
            for r in rows
        ]
