"""Named samples: an ordered list of actions to code."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from annotate.errors import NotFoundError, StoreError, UsageError
from annotate.store.base import Database, now

if TYPE_CHECKING:  # numpy loads when a sample is drawn, not with every command
    import numpy as np


# The drawn actions' (rowid -> position) as one JSON object in rowid order: the actions are
# read in file order, and the items reach sample_items (and the check of each action_id
# against actions) in action_id order, so that each index grows at a few places, not at
# random ones (CROSS JOIN: the JSON first, whatever SQLite guesses of its size).
INSERT_DRAWN_ITEMS = (
    "INSERT INTO sample_items (sample, position, action_id) "
    "SELECT :name, p.value, a.id FROM json_each(:positions) p "
    "CROSS JOIN actions a ON a.rowid = CAST(p.key AS INTEGER) ORDER BY a.id"
)


class Samples:
    def __init__(self, db: Database) -> None:
        self.db = db

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
        with self.db.transaction() as conn:
            self._new_sample(name, len(action_ids), seed, stratify, where, origin, replace)
            with self.db.larger_cache():
                conn.executemany(
                    "INSERT INTO sample_items (sample, position, action_id) VALUES (?, ?, ?)",
                    ((name, i, aid) for i, aid in enumerate(action_ids)),
                )

    def create_drawn_sample(
        self,
        name: str,
        rowids: np.ndarray,
        *,
        seed: int,
        stratify: str | None = None,
        where: str | None = None,
        replace: bool = False,
    ) -> None:
        """A random sample of the actions with these row ids (int64, distinct), in this
        order, written by SQLite in one statement (:data:`INSERT_DRAWN_ITEMS`)."""
        import numpy as np

        order = np.argsort(rowids, kind="stable")
        positions = json.dumps(dict(zip(rowids[order].tolist(), order.tolist(), strict=True)))
        with self.db.transaction() as conn:
            self._new_sample(name, len(rowids), seed, stratify, where, "random", replace)
            with self.db.larger_cache():
                written = conn.execute(
                    INSERT_DRAWN_ITEMS, {"name": name, "positions": positions}
                ).rowcount
            if written != len(rowids):  # the transaction rolls back: nothing is stored
                raise StoreError(
                    f"{len(rowids) - written} of the {len(rowids)} drawn actions are no longer "
                    "in the file",
                    hint="another program changed the actions meanwhile: run the command again",
                )

    def _new_sample(
        self,
        name: str,
        n: int,
        seed: int | None,
        stratify: str | None,
        where: str | None,
        origin: str,
        replace: bool,
    ) -> None:
        """The ``samples`` row of a new sample (inside a transaction); ``replace``: the
        sample of that name goes first, with its items."""
        conn = self.db.conn
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
            (name, seed, n, stratify, where, origin, now()),
        )

    def sample_item_ids(self, name: str, *, counted: bool = False) -> Sequence[str]:
        """The sample's action ids in order, as one string (:class:`ItemIds`) where they can
        be: no Python object per id (a sample of a million items: 44 MB instead of 93).
        ``counted``: their number now, the ids when first asked for (a :class:`Later`)."""
        from annotate.store.item_ids import ItemIds, Later

        self.sample_exists_or_fail(name)
        if counted:
            (n,) = self.db.conn.execute(
                "SELECT count(*) FROM sample_items WHERE sample = ?", (name,)
            ).fetchone()
            return Later(n, lambda: self.sample_item_ids(name))
        n, text = self.db.conn.execute(
            "SELECT count(*), group_concat(action_id, char(10)) FROM ("
            "SELECT action_id FROM sample_items WHERE sample = ? ORDER BY position)",
            (name,),
        ).fetchone()
        return ItemIds.joined(text, n) or self.sample_ids(name)

    def sample_exists_or_fail(self, name: str) -> None:
        """NotFoundError naming the samples there are, unless ``name`` is one."""
        if not self.db.conn.execute("SELECT 1 FROM samples WHERE name = ?", (name,)).fetchone():
            names = [r[0] for r in self.db.conn.execute("SELECT name FROM samples ORDER BY name")]
            raise NotFoundError(
                f"no sample named '{name}'",
                hint=(
                    "samples: " + ", ".join(names)
                    if names
                    else "make one with `annotate sample --n 180 --seed 7 --name main`"
                ),
            )

    def sample_ids(self, name: str) -> list[str]:
        self.sample_exists_or_fail(name)
        plain = self.db.conn.cursor()  # tuples, not Row objects: 1M ids in a third less time
        plain.row_factory = None
        plain.execute(
            "SELECT action_id FROM sample_items WHERE sample = ? ORDER BY position", (name,)
        )
        return [r[0] for r in plain]

    def samples(self) -> list[dict[str, Any]]:
        return [
            dict(r)
            for r in self.db.conn.execute(
                "SELECT name, n, seed, stratify, where_clause, origin, created_at "
                "FROM samples ORDER BY created_at, name"
            )
        ]
