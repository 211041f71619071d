"""Batches of LLM requests: handed to a batch API, or written to a file for an offline runner.

``llm_batches`` holds one row per input file (its state at the provider, its counts and
spend); ``llm_batch_items`` the items each batch codes (with every vote's request hash);
``llm_batch_requests`` the request of each line, keyed by ``custom_id`` (= the request
hash), so that a result line is matched to its request, run and item without the job that
built it. Replies themselves go to the request cache (``llm_requests``) like online ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from annotate.errors import NotFoundError
from annotate.store.base import Database, dumps, now

if TYPE_CHECKING:
    from llm_coder.records import Reply

OPEN_STATES = ("writing", "written", "uploaded", "creating", "validating", "in_progress",
               "finalizing", "cancelling", "exported")  # fmt: skip
"""States of a batch whose results are still to come (or to be collected)."""
IN = 500  # ids per ``IN (...)`` query


def _chunks(values: Sequence[str], size: int = IN) -> Iterator[Sequence[str]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


class LLMBatches:
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- batches ------------------------------------------------------------------------

    def create_llm_batch(self, **fields: Any) -> int:
        stamp = now()
        fields = {"created_at": stamp, "updated_at": stamp, **fields}
        columns = ", ".join(fields)
        marks = ", ".join("?" * len(fields))
        with self.db.transaction() as conn:
            cur = conn.execute(
                f"INSERT INTO llm_batches ({columns}) VALUES ({marks})", tuple(fields.values())
            )
        return int(cur.lastrowid or 0)

    def update_llm_batch(self, batch_id: int, **fields: Any) -> None:
        fields = {**fields, "updated_at": now()}
        sets = ", ".join(f"{k} = ?" for k in fields)
        with self.db.transaction() as conn:
            conn.execute(
                f"UPDATE llm_batches SET {sets} WHERE id = ?", (*fields.values(), batch_id)
            )

    def add_llm_batch_counts(
        self, batch_id: int, *, done: int, errors: int, tokens_in: int, tokens_out: int
    ) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE llm_batches SET n_done = n_done + ?, n_errors = n_errors + ?, "
                "tokens_in = tokens_in + ?, tokens_out = tokens_out + ?, updated_at = ? "
                "WHERE id = ?",
                (done, errors, tokens_in, tokens_out, now(), batch_id),
            )

    def delete_llm_batch(self, batch_id: int) -> None:
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM llm_batches WHERE id = ?", (batch_id,))

    def llm_batch(self, batch_id: int) -> dict[str, Any]:
        row = self.db.conn.execute("SELECT * FROM llm_batches WHERE id = ?", (batch_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no LLM batch {batch_id}")
        return dict(row)

    def llm_batches(self, run_id: int | None = None, *, open_only: bool = False) -> list[dict]:
        sql = "SELECT * FROM llm_batches WHERE 1"
        params: list[Any] = []
        if run_id is not None:
            sql += " AND run_id = ?"
            params.append(run_id)
        if open_only:
            sql += f" AND status IN ({', '.join('?' * len(OPEN_STATES))})"
            params += OPEN_STATES
        return [dict(r) for r in self.db.conn.execute(sql + " ORDER BY id", params)]

    def open_batch_run(
        self, *, coder: str, codebook: str, prompt_hash: str, **same: Any
    ) -> int | None:
        """The run of these settings still coding through batches (status ``batch``)."""
        sql = (
            "SELECT id FROM llm_runs WHERE status = 'batch' AND coder = ? AND codebook = ? "
            "AND prompt_hash = ?"
        )
        params: list[Any] = [coder, codebook, prompt_hash]
        for key, value in same.items():
            sql += f" AND {key} IS ?"
            params.append(value)
        row = self.db.conn.execute(sql + " ORDER BY id DESC LIMIT 1", params).fetchone()
        return int(row[0]) if row else None

    # -- lines and items ----------------------------------------------------------------

    def save_llm_prompt(self, prompt_hash: str, messages: Sequence[Any]) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO llm_prompts (prompt_hash, messages, created_at) "
                "VALUES (?, ?, ?)",
                (prompt_hash, dumps(list(messages)), now()),
            )

    def llm_prompt_messages(self, prompt_hash: str) -> list[Any]:
        row = self.db.conn.execute(
            "SELECT messages FROM llm_prompts WHERE prompt_hash = ?", (prompt_hash,)
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no stored prompt {prompt_hash[:12]}")
        return json.loads(row[0])

    def add_llm_batch_lines(
        self,
        batch_id: int,
        items: Iterable[tuple[str, Sequence[str]]],
        requests: Iterable[tuple[str, str, int, str, str, str]],
    ) -> None:
        """``items``: (action_id, request hashes of every vote); ``requests``: (custom_id,
        action_id, vote, tail JSON, schema JSON, response_format) of each line."""
        with self.db.transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO llm_batch_items (batch_id, action_id, request_hashes) "
                "VALUES (?, ?, ?)",
                ((batch_id, aid, json.dumps(list(hashes))) for aid, hashes in items),
            )
            conn.executemany(
                "INSERT OR REPLACE INTO llm_batch_requests (custom_id, batch_id, action_id, "
                "vote, tail, schema, response_format) VALUES (?, ?, ?, ?, ?, ?, ?)",
                ((c, batch_id, a, v, t, s, f) for c, a, v, t, s, f in requests),
            )

    def llm_batch_lines(self, custom_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The request behind each custom_id (of its newest batch), with the batch's run."""
        out: dict[str, dict[str, Any]] = {}
        for part in _chunks(custom_ids):
            rows = self.db.conn.execute(
                "SELECT r.*, b.run_id, b.phase FROM llm_batch_requests r "
                "JOIN llm_batches b ON b.id = r.batch_id "
                f"WHERE r.custom_id IN ({', '.join('?' * len(part))}) ORDER BY r.batch_id",
                tuple(part),
            )
            for r in rows:
                out[r["custom_id"]] = dict(r)  # the newest batch wins
        return out

    def set_llm_batch_line_errors(self, errors: Sequence[tuple[int, str, str]]) -> None:
        """(batch_id, custom_id, error) of lines that came back without a reply."""
        with self.db.transaction() as conn:
            conn.executemany(
                "UPDATE llm_batch_requests SET error = ? WHERE batch_id = ? AND custom_id = ?",
                ((e, b, c) for b, c, e in errors),
            )

    def llm_batch_items_of(self, batch_ids: Sequence[int], action_ids: Sequence[str]) -> list:
        """(batch_id, action_id, request_hashes) of these items in these batches."""
        out = []
        marks = ", ".join("?" * len(batch_ids))
        for part in _chunks(action_ids):
            out += [
                (r[0], r[1], json.loads(r[2]))
                for r in self.db.conn.execute(
                    "SELECT batch_id, action_id, request_hashes FROM llm_batch_items "
                    f"WHERE batch_id IN ({marks}) AND action_id IN ({', '.join('?' * len(part))})",
                    (*batch_ids, *part),
                )
            ]
        return out

    def llm_batch_line_ids(self, batch_id: int) -> Iterator[str]:
        cur = self.db.conn.execute(
            "SELECT custom_id FROM llm_batch_requests WHERE batch_id = ?", (batch_id,)
        )
        while rows := cur.fetchmany(1000):
            yield from (r[0] for r in rows)

    def llm_batch_line_errors(self, batch_id: int, limit: int = 5) -> tuple[int, list[str]]:
        n = self.db.conn.execute(
            "SELECT count(*) FROM llm_batch_requests WHERE batch_id = ? AND error IS NOT NULL",
            (batch_id,),
        ).fetchone()[0]
        rows = self.db.conn.execute(
            "SELECT error FROM llm_batch_requests WHERE batch_id = ? AND error IS NOT NULL LIMIT ?",
            (batch_id, limit),
        )
        return n, [r[0] for r in rows]

    def llm_item_ids(self, run_id: int, phase: str) -> set[str]:
        """The items a run has stored results for in a phase (ids only: runs are large)."""
        return {
            r[0]
            for r in self.db.conn.execute(
                "SELECT action_id FROM llm_items WHERE run_id = ? AND phase = ?", (run_id, phase)
            )
        }

    def llm_item_counts(self, run_id: int, phase: str | None = None) -> tuple[int, int]:
        """(items, valid items) a run has stored (in one phase, if given)."""
        sql = "SELECT count(*), coalesce(sum(valid), 0) FROM llm_items WHERE run_id = ?"
        params: tuple[Any, ...] = (run_id,)
        if phase is not None:
            sql += " AND phase = ?"
            params = (run_id, phase)
        row = self.db.conn.execute(sql, params).fetchone()
        return int(row[0]), int(row[1])

    # -- the request cache, in bulk -----------------------------------------------------

    def save_batch_replies(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Cache rows for replies that came back in a batch, in one statement.

        The row ``save_call`` writes for an online reply, built from the batch line's stored
        request (prompt hash, tail and schema already as JSON): (request_hash, prompt_hash,
        tail, model, endpoint_host, temperature, vote, schema, response_format, reply,
        tokens_in, tokens_out, run_id). Latency 0 (unknown in a batch), 1 attempt."""
        stamp = now()
        with self.db.transaction() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO llm_requests (request_hash, prompt_hash, tail, model, "
                "endpoint_host, temperature, vote, schema, response_format, reply, tokens_in, "
                "tokens_out, latency_s, attempts, run_id, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0.0, 1, ?, ?)",
                ((*row, stamp) for row in rows),
            )

    def cached_hashes(self, hashes: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for part in _chunks(hashes):
            found.update(
                r[0]
                for r in self.db.conn.execute(
                    "SELECT request_hash FROM llm_requests "
                    f"WHERE request_hash IN ({', '.join('?' * len(part))})",
                    tuple(part),
                )
            )
        return found

    def cached_replies(self, hashes: Sequence[str]) -> dict[str, Reply]:
        # the LLM coder's records: loaded when the LLM is used, not by every command
        from llm_coder.records import Reply

        out: dict[str, Reply] = {}
        for part in _chunks(hashes):
            for r in self.db.conn.execute(
                "SELECT request_hash, reply, tokens_in, tokens_out, latency_s, response_format, "
                f"attempts FROM llm_requests WHERE request_hash IN ({', '.join('?' * len(part))})",
                tuple(part),
            ):
                out[r[0]] = Reply(r[1], r[2], r[3], r[4], r[5], r[6], cached=True)
        return out

    def action_types(self, action_ids: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for part in _chunks(action_ids):
            out.update(
                (r[0], r[1])
                for r in self.db.conn.execute(
                    "SELECT id, action_type FROM actions "
                    f"WHERE id IN ({', '.join('?' * len(part))})",
                    tuple(part),
                )
            )
        return out
