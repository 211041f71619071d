"""Named samples: an ordered list of actions to code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from annotate.errors import NotFoundError, UsageError
from annotate.store.base import StoreBase, now


class SamplesMixin(StoreBase):
    def create_sample(
        self,
        name: str,
        action_ids: Sequence[str],
        *,
        seed: int | None = None,
        stratify: str | None = None,
        where: str | None = None,
        origin: str = "random",
        replace: bool = False,
    ) -> None:
        with self.transaction() as conn:
            exists = conn.execute("SELECT 1 FROM samples WHERE name = ?", (name,)).fetchone()
            if exists and not replace:
                raise UsageError(
                    f"a sample named '{name}' already exists",
                    hint="choose another --name, or pass --replace",
                )
            if exists:
                conn.execute("DELETE FROM sample_items WHERE sample = ?", (name,))
                conn.execute("DELETE FROM samples WHERE name = ?", (name,))
            conn.execute(
                "INSERT INTO samples (name, seed, n, stratify, where_clause, origin, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (name, seed, len(action_ids), stratify, where, origin, now()),
            )
            with self.larger_cache():
                conn.executemany(
                    "INSERT INTO sample_items (sample, position, action_id) VALUES (?, ?, ?)",
                    ((name, i, aid) for i, aid in enumerate(action_ids)),
                )

    def sample_ids(self, name: str) -> list[str]:
        if not self.conn.execute("SELECT 1 FROM samples WHERE name = ?", (name,)).fetchone():
            names = [r[0] for r in self.conn.execute("SELECT name FROM samples ORDER BY name")]
            raise NotFoundError(
                f"no sample named '{name}'",
                hint=(
                    "samples: " + ", ".join(names)
                    if names
                    else "make one with `annotate sample --n 180 --seed 7 --name main`"
                ),
            )
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT action_id FROM sample_items WHERE sample = ? ORDER BY position", (name,)
            )
        ]

    def samples(self) -> list[dict[str, Any]]:
        return [
            dict(r)
            for r in self.conn.execute(
                "SELECT name, n, seed, stratify, where_clause, origin, created_at "
                "FROM samples ORDER BY created_at, name"
            )
        ]
