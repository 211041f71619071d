"""Codebook versions: every version a label was made under is kept with its full text.

A version stored before schema 7 has ``other_by_default`` = 1: it was written when a
question without ``allow_other`` offered "Other", and it is read that way still.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from annotate.errors import NotFoundError
from annotate.store.base import Database, now

if TYPE_CHECKING:  # the codebook model (pydantic) loads when a codebook is first read
    from annotate.codebook import Codebook, LoadedCodebook


class Codebooks:
    def __init__(self, db: Database) -> None:
        self.db = db

    def register_codebook(self, loaded: LoadedCodebook) -> str:
        """Store this version of the codebook (once) and return its version hash."""
        cb = loaded.codebook
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO codebooks "
                "(name, version_hash, title, version, text, source, added_at, other_by_default) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, 0)",
                (cb.name, cb.version_hash, cb.title, cb.version, loaded.text, loaded.source, now()),
            )
        return cb.version_hash

    def stored_codebook(self, name: str, version_hash: str | None = None) -> Codebook:
        """A stored version (the newest when ``version_hash`` is None)."""
        if version_hash:
            row = self.db.conn.execute(
                "SELECT text, other_by_default FROM codebooks WHERE name = ? AND version_hash = ?",
                (name, version_hash),
            ).fetchone()
        else:
            row = self.db.conn.execute(
                "SELECT text, other_by_default FROM codebooks WHERE name = ? "
                "ORDER BY added_at DESC, rowid DESC",
                (name,),
            ).fetchone()
        if row is None:
            raise NotFoundError(f"codebook '{name}' is not in this database")
        from annotate.codebook import parse_codebook

        return parse_codebook(
            row["text"], f"{name}.yaml (stored)", other_by_default=bool(row["other_by_default"])
        )

    def codebook_versions(self) -> list[dict[str, Any]]:
        return [
            dict(r)
            for r in self.db.conn.execute(
                "SELECT c.name, c.version_hash, c.title, c.version, c.added_at, "
                "(SELECT count(*) FROM coder_labels l INDEXED BY labels_progress "
                "WHERE l.codebook = c.name AND l.codebook_hash = c.version_hash "
                "AND l.value IS NOT NULL) + (SELECT count(*) FROM gold g "
                "JOIN gold_answers a ON a.id = g.answer WHERE g.codebook = c.name "
                "AND a.codebook_hash = c.version_hash AND a.value IS NOT NULL) AS labels "
                "FROM codebooks c ORDER BY c.name, c.added_at"
            )
        ]
