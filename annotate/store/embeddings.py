"""Cached text embeddings: one float32 vector per (model, sha256 of the text)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from annotate.store.base import Database

if TYPE_CHECKING:  # NumPy loads when vectors are first read: `annotate status` needs none
    import numpy as np

_CHUNK = 500  # hashes per SELECT (SQLite's variable limit is 32766; keep statements small)


class Embeddings:
    def __init__(self, db: Database) -> None:
        self.db = db

    def cached_embeddings(self, model: str, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """The stored vectors of ``model`` among ``hashes``, by hash."""
        import numpy as np

        wanted = list(dict.fromkeys(hashes))
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(wanted), _CHUNK):
            chunk = wanted[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self.db.conn.execute(
                f"SELECT text_sha256, vector FROM embeddings "
                f"WHERE model = ? AND text_sha256 IN ({marks})",
                (model, *chunk),
            )
            for digest, blob in rows:
                found[digest] = np.frombuffer(blob, dtype="<f4")
        return found

    def store_embeddings(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        """Keep ``vectors`` (by text hash) for ``model``; a hash already stored is kept."""
        import numpy as np

        with self.db.transaction() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO embeddings (model, text_sha256, dim, vector) "
                "VALUES (?, ?, ?, ?)",
                (
                    (model, digest, int(v.shape[0]), np.asarray(v, dtype="<f4").tobytes())
                    for digest, v in vectors.items()
                ),
            )

    def count_embeddings(self, model: str) -> int:
        row = self.db.conn.execute("SELECT COUNT(*) FROM embeddings WHERE model = ?", (model,))
        return int(row.fetchone()[0])
