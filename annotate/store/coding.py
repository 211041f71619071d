"""Queries the coding screen needs beyond the store's repositories.

A small helper over the store's :class:`~annotate.store.base.Database`. All SQL of the
coding session lives here or in the repositories it calls.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from annotate.store.base import Database
from annotate.store.migrations import SCREENSHOT_WORD


@dataclass(frozen=True)
class CoderVersion:
    """One codebook version a coder has labels under."""

    version_hash: str
    version: str | None
    labels: int
    first_at: str


class CodingQueries:
    def __init__(self, db: Database):
        self.db = db
        self._session_start: dict[str, datetime | None] = {}

    def coder_versions(self, codebook: str, coder: str) -> list[CoderVersion]:
        """The codebook versions this coder's answers were made under, oldest first (a
        coder who codes, never ``gold``: it reads the coders' table)."""
        rows = self.db.conn.execute(
            "SELECT l.codebook_hash AS h, c.version AS version, "
            "sum(l.value IS NOT NULL OR l.codes IS NOT NULL) AS n, min(l.created_at) AS first_at "
            "FROM coder_labels l LEFT JOIN codebooks c "
            "ON c.name = l.codebook AND c.version_hash = l.codebook_hash "
            "WHERE l.codebook = ? AND l.coder = ? GROUP BY l.codebook_hash ORDER BY first_at",
            (codebook, coder),
        ).fetchall()
        return [CoderVersion(r["h"], r["version"], r["n"] or 0, r["first_at"]) for r in rows]

    def answered_under_another_version(self, codebook: str, coder: str, version_hash: str) -> bool:
        """Whether this coder answered under another version of the codebook: read from the
        index ``labels_progress`` alone (:meth:`coder_versions` reads every label's row)."""
        return (
            self.db.conn.execute(
                "SELECT 1 FROM coder_labels WHERE codebook = ? AND coder = ? "
                "AND codebook_hash != ? AND (value IS NOT NULL OR codes IS NOT NULL) LIMIT 1",
                (codebook, coder, version_hash),
            ).fetchone()
            is not None
        )

    def session_start(self, session: str) -> datetime | None:
        """When the session's first action happened (None if it has no timestamps)."""
        if session not in self._session_start:
            row = self.db.conn.execute(
                "SELECT timestamp FROM actions WHERE session = ? AND timestamp IS NOT NULL "
                "ORDER BY seq LIMIT 1",
                (session,),
            ).fetchone()
            self._session_start[session] = parse_time(row[0]) if row else None
        return self._session_start[session]

    def sample_item_ids(self, sample: str) -> list[str]:
        return [
            r[0]
            for r in self.db.conn.execute(
                "SELECT action_id FROM sample_items WHERE sample = ? ORDER BY position", (sample,)
            )
        ]

    def sample_item_types(self, sample: str) -> list[tuple[str, str]]:
        """(action id, action type) of every item of the sample, in the sample's order: all
        a coding session holds for its items (the actions themselves are read a page at a
        time, see :class:`~annotate.coding.items.ItemActions`)."""
        return self.db.conn.execute(
            "SELECT s.action_id, a.action_type FROM sample_items s "
            "JOIN actions a ON a.id = s.action_id WHERE s.sample = ? ORDER BY s.position",
            (sample,),
        ).fetchall()

    def coder_progress(self, codebook: str, coder: str) -> list[tuple[Any, ...]]:
        """This coder's label rows (and nobody else's: coding is blind): action id,
        question, value, codes (JSON), other text, flagged, skipped, note, seconds. The
        caller keeps the rows of its sample's items (a join on the sample costs a lookup
        per row; the coder's rows are read in one index range)."""
        return self.db.conn.execute(
            "SELECT action_id, question, value, codes, other_text, flagged, skipped, note, "
            "seconds FROM coder_labels WHERE coder = ? AND codebook = ?",
            (coder, codebook),
        ).fetchall()

    def sample_metas_naming_screenshots(self, sample: str) -> Iterator[str]:
        """The meta (JSON text) of the sample's items that mention a screenshot (a superset
        of those that name one), found in the partial index ``actions_screenshot``: a
        lookup per item in an index that holds only such actions, never the actions."""
        yield from (
            r[0]
            for r in self.db.conn.execute(
                "SELECT a.meta FROM sample_items s "
                "JOIN actions a INDEXED BY actions_screenshot ON a.id = s.action_id "
                f"WHERE s.sample = ? AND instr(a.meta, '{SCREENSHOT_WORD}') > 0",
                (sample,),
            )
        )

    def sample_exists(self, name: str) -> bool:
        return (
            self.db.conn.execute("SELECT 1 FROM samples WHERE name = ?", (name,)).fetchone()
            is not None
        )

    def sample_names(self) -> list[str]:
        return [r[0] for r in self.db.conn.execute("SELECT name FROM samples ORDER BY name")]

    def stored_codebook_names(self) -> list[str]:
        return [
            r[0] for r in self.db.conn.execute("SELECT DISTINCT name FROM codebooks ORDER BY 1")
        ]


def parse_time(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
