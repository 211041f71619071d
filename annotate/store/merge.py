"""Merging another project file into this one (read through ``ATTACH DATABASE``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotate.coders import GOLD
from annotate.errors import StoreError
from annotate.store.base import Database, now
from annotate.store.migrations import GOLD_IDS
from annotate.store.revisions import refresh_revisions, stored_revision

if TYPE_CHECKING:
    from annotate.store.gold import Gold

MERGE_ALIAS = "other"
LABEL_COPY_COLUMNS = (
    "action_id, codebook, codebook_hash, question, coder, value, codes, other_text, note, "
    "flagged, skipped, seconds, source, meta, created_at, updated_at"
)
ACTION_COPY_COLUMNS = (
    "id, session, participant, role, seq, timestamp, elapsed_s, action_type, content, "
    "condition, meta"
)


class Merge:
    def __init__(self, db: Database, gold: Gold) -> None:
        self.db = db
        self.gold = gold

    @contextmanager
    def attached(self, path: Path) -> Iterator[str]:
        """Attach another project file as schema ``other`` (outside any transaction)."""
        if self.db.in_write:
            raise StoreError("cannot attach a database inside a transaction")
        self.db.conn.execute(f"ATTACH DATABASE ? AS {MERGE_ALIAS}", (str(path),))
        try:
            yield MERGE_ALIAS
        finally:
            self.db.conn.execute(f"DETACH DATABASE {MERGE_ALIAS}")

    def merge_actions(self, import_id: int) -> tuple[int, int]:
        """Insert the attached file's actions missing here; return (new, differing).

        Differing: same id, but another session, type or content (ours are kept).
        """
        before = self.db.conn.total_changes
        self.db.conn.execute(
            f"INSERT OR IGNORE INTO main.actions ({ACTION_COPY_COLUMNS}, import_id) "
            f"SELECT {ACTION_COPY_COLUMNS}, ? FROM {MERGE_ALIAS}.actions ORDER BY session, seq",
            (import_id,),
        )
        new = self.db.conn.total_changes - before
        differing = self.db.conn.execute(
            f"SELECT count(*) FROM {MERGE_ALIAS}.actions o JOIN main.actions m ON m.id = o.id "
            "WHERE o.session IS NOT m.session OR o.action_type IS NOT m.action_type "
            "OR o.content IS NOT m.content"
        ).fetchone()[0]
        return new, differing

    def attached_action_count(self) -> int:
        return self.db.conn.execute(f"SELECT count(*) FROM {MERGE_ALIAS}.actions").fetchone()[0]

    def attached_codebooks(self) -> list[dict[str, Any]]:
        """Every codebook version of the attached file, with its text (to be verified)."""
        return [
            dict(r)
            for r in self.db.conn.execute(
                "SELECT name, version_hash, title, version, text, other_by_default "
                f"FROM {MERGE_ALIAS}.codebooks ORDER BY name, version_hash"
            )
        ]

    def merge_codebooks(self) -> int:
        """Copy codebook versions missing here; return how many. A time in the future
        becomes now: no version can stay the newest by its date alone."""
        before = self.db.conn.total_changes
        self.db.conn.execute(
            "INSERT OR IGNORE INTO main.codebooks "
            "(name, version_hash, title, version, text, source, added_at, other_by_default) "
            "SELECT name, version_hash, title, version, text, source, min(added_at, ?), "
            f"other_by_default FROM {MERGE_ALIAS}.codebooks",
            (now(),),
        )
        return self.db.conn.total_changes - before

    def merge_missing_labels(self) -> int:
        """Copy the attached file's labels whose (action, codebook, question, coder) is absent
        (with the revision of their content, whatever the other file's schema): the coders'
        in one statement, the gold row by row (a row of ``gold_answers`` each)."""
        last = self.db.conn.execute(
            "SELECT coalesce(max(id), 0) FROM main.coder_labels"
        ).fetchone()[0]
        copied = self.db.conn.execute(
            f"INSERT INTO main.coder_labels ({LABEL_COPY_COLUMNS}) "
            f"SELECT {LABEL_COPY_COLUMNS} FROM {MERGE_ALIAS}.labels o WHERE o.coder <> ? "
            "AND NOT EXISTS (SELECT 1 FROM main.coder_labels m WHERE m.action_id = o.action_id"
            " AND m.codebook = o.codebook AND m.question = o.question AND m.coder = o.coder)"
            " ORDER BY o.id",
            (GOLD,),
        ).rowcount
        refresh_revisions(self.db.conn, "id > ?", (last,))
        gold = self.db.conn.execute(
            "SELECT action_id, codebook, codebook_hash, question, value, codes, other_text, "
            f"source, meta, note, created_at, updated_at FROM {MERGE_ALIAS}.labels o "
            "WHERE o.coder = ? AND NOT EXISTS (SELECT 1 FROM main.gold m "
            "WHERE m.codebook = o.codebook AND m.action_id = o.action_id "
            "AND m.question = o.question) ORDER BY o.id",
            (GOLD,),
        ).fetchall()
        for r in gold:
            answer = self._their_gold_answer(r)
            self.db.conn.execute(
                "INSERT INTO main.gold (codebook, action_id, question, answer, revision, note, "
                "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (r["codebook"], r["action_id"], r["question"], *answer, r["note"],
                 r["created_at"], r["updated_at"]),
            )  # fmt: skip
        return copied + len(gold)

    def _their_gold_answer(self, r: Mapping[str, Any]) -> tuple[int, int]:
        """(gold answer id, revision) here of the attached file's gold row ``r``."""
        answer = self.gold.gold_answer_id(
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
            for r in self.db.conn.execute(
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
            theirs = self.db.conn.execute(
                "SELECT action_id, codebook, codebook_hash, question, value, codes, "
                f"other_text, source, meta, created_at, updated_at FROM {MERGE_ALIAS}.labels o "
                f"WHERE {where}",
                params,
            ).fetchone()
            self.db.conn.execute(
                "UPDATE main.gold SET answer = ?, revision = ?, created_at = ?, updated_at = ? "
                "WHERE id = ?",
                (*self._their_gold_answer(theirs), theirs["created_at"], theirs["updated_at"],
                 our_id),
            )  # fmt: skip
            return
        self.db.conn.execute(
            "UPDATE main.coder_labels SET (codebook_hash, value, codes, other_text, skipped, "
            "seconds, source, meta, created_at, updated_at) = ("
            " SELECT codebook_hash, value, codes, other_text, skipped, seconds,"
            f" source, meta, created_at, updated_at FROM {MERGE_ALIAS}.labels o"
            f" WHERE {where}) WHERE id = ?",
            (*params, our_id),
        )
        refresh_revisions(self.db.conn, "id = ?", (our_id,))

    def set_label_note_flag(self, our_id: int, note: str | None, flagged: bool) -> None:
        """Set the note and flag of our label row ``our_id`` (its times are kept; gold has
        a note and no flag)."""
        if our_id > GOLD_IDS:
            self.db.conn.execute("UPDATE main.gold SET note = ? WHERE id = ?", (note, our_id))
            return
        self.db.conn.execute(
            "UPDATE main.coder_labels SET note = ?, flagged = ? WHERE id = ?",
            (note, int(flagged), our_id),
        )

    def merge_samples(self) -> tuple[list[str], list[str]]:
        """Copy samples absent here; return (copied names, names that differ from ours)."""
        theirs = [
            r[0] for r in self.db.conn.execute(f"SELECT name FROM {MERGE_ALIAS}.samples ORDER BY 1")
        ]
        copied, differing = [], []
        for name in theirs:
            if self.db.conn.execute(
                "SELECT 1 FROM main.samples WHERE name = ?", (name,)
            ).fetchone():
                ours = self.db.conn.execute(
                    "SELECT action_id FROM main.sample_items WHERE sample = ? ORDER BY position",
                    (name,),
                ).fetchall()
                other = self.db.conn.execute(
                    f"SELECT action_id FROM {MERGE_ALIAS}.sample_items WHERE sample = ? "
                    "ORDER BY position",
                    (name,),
                ).fetchall()
                if [r[0] for r in ours] != [r[0] for r in other]:
                    differing.append(name)
                continue
            self.db.conn.execute(
                "INSERT INTO main.samples (name, seed, n, stratify, where_clause, origin, "
                "created_at) SELECT name, seed, n, stratify, where_clause, origin, created_at "
                f"FROM {MERGE_ALIAS}.samples WHERE name = ?",
                (name,),
            )
            self.db.conn.execute(
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
        if not self.db.has_table("session_splits", MERGE_ALIAS):
            return [], []
        names = [
            r[0]
            for r in self.db.conn.execute(
                f"SELECT name FROM {MERGE_ALIAS}.session_splits WHERE name NOT IN "
                "(SELECT name FROM main.session_splits) ORDER BY 1"
            )
        ]
        differing = [
            r[0]
            for r in self.db.conn.execute(
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
            self.db.conn.execute(
                "INSERT INTO main.session_splits SELECT * FROM "
                f"{MERGE_ALIAS}.session_splits WHERE name = ?",
                (name,),
            )
            self.db.conn.execute(
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
        if not self.db.has_table(table, MERGE_ALIAS):
            return []
        unmatched = ""
        if self.db.has_table(table):
            same = " AND ".join(f"m.{c} = o.{c}" for c in key)
            unmatched = f" WHERE NOT EXISTS (SELECT 1 FROM main.{table} m WHERE {same})"
        return [
            r[0]
            for r in self.db.conn.execute(
                f"SELECT o.id FROM {MERGE_ALIAS}.{table} o{unmatched} ORDER BY o.id"
            )
        ]
