"""Few-shot splits and the LLM coder's runs, cached requests and per-item results.

The request cache is keyed by the hash of the canonical request (see
:class:`llm_coder.calls.ChatRequest`). A request's stable prefix (codebook + shots) is kept
once in ``llm_prompts``; each request row holds only the messages after it. The API key is
never part of anything stored here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from annotate.errors import NotFoundError, StoreError, UsageError
from annotate.store import unsaved
from annotate.store.base import Database, dumps, now
from annotate.store.labels import LabelWrite

if TYPE_CHECKING:
    from annotate.codebook import Answer, Codebook
    from annotate.store.labels import Labels
    from llm_coder.records import CallRecord, ItemResult, Reply, SplitInfo

LLM_SOURCE = "llm"


def answer_json(answer: Answer) -> dict[str, Any]:
    return {"value": answer.value, "codes": list(answer.codes), "other_text": answer.other_text}


def answer_from_json(data: Mapping[str, Any]) -> Answer:
    from annotate.codebook import Answer

    return Answer(data.get("value"), tuple(data.get("codes") or ()), data.get("other_text"))


_NOT_STORED_BY_RUN = (
    " AND NOT EXISTS (SELECT 1 FROM llm_items r WHERE r.run_id = ? AND r.action_id = a.id)"
)


class StoreCache:
    """The :class:`llm_coder.calls.Cache` of one run, backed by ``llm_requests``."""

    def __init__(self, llm: LLM, run_id: int | None):
        self.llm = llm
        self.run_id = run_id
        self._prompts: set[str] = set()
        unsaved.restore(llm)  # replies a full disk kept out of the file last time

    def get(self, request_hash: str) -> Reply | None:
        return self.llm.cached_reply(request_hash)

    def put(self, record: CallRecord) -> None:
        """Store a paid reply; if the file cannot take it, keep it beside and stop."""
        try:
            self.llm.save_call(record, self.run_id, known_prompts=self._prompts)
        except StoreError as exc:
            raise unsaved.keep(self.llm.db.path, record, self.run_id, exc) from exc


class LLM:
    def __init__(self, db: Database, labels: Labels) -> None:
        self.db = db
        self.labels = labels

    # -- splits -------------------------------------------------------------------------

    def create_split(
        self,
        name: str,
        *,
        codebook: Codebook,
        gold_coder: str,
        sample: str | None,
        seed: int,
        shots: Sequence[str],
        heldout: Sequence[str],
        labels: Mapping[str, str],
        replace: bool = False,
        strategy: str = "cover",
    ) -> None:
        with self.db.transaction() as conn:
            exists = conn.execute("SELECT 1 FROM llm_splits WHERE name = ?", (name,)).fetchone()
            if exists and not replace:
                raise UsageError(
                    f"a split named '{name}' already exists",
                    hint="choose another --name, or pass --replace",
                )
            if exists:
                conn.execute("DELETE FROM llm_split_items WHERE split = ?", (name,))
                conn.execute("DELETE FROM llm_splits WHERE name = ?", (name,))
            conn.execute(
                "INSERT INTO llm_splits (name, codebook, codebook_hash, gold_coder, sample, seed, "
                "n_shots, n_heldout, created_at, strategy) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    name,
                    codebook.name,
                    codebook.version_hash,
                    gold_coder,
                    sample,
                    seed,
                    len(shots),
                    len(heldout),
                    now(),
                    strategy,
                ),
            )
            conn.executemany(
                "INSERT INTO llm_split_items (split, action_id, role, position, label) "
                "VALUES (?, ?, ?, ?, ?)",
                [(name, a, "shot", i, labels.get(a)) for i, a in enumerate(shots)]
                + [(name, a, "heldout", i, labels.get(a)) for i, a in enumerate(heldout)],
            )

    def split_info(self, name: str) -> SplitInfo:
        row = self.db.conn.execute("SELECT * FROM llm_splits WHERE name = ?", (name,)).fetchone()
        if row is None:
            names = [r[0] for r in self.db.conn.execute("SELECT name FROM llm_splits ORDER BY 1")]
            raise NotFoundError(
                f"no split named '{name}'",
                hint=(
                    "splits: " + ", ".join(names)
                    if names
                    else "make one with `annotate split --codebook NAME --shots 8 --seed 7`"
                ),
            )
        items: dict[str, list[str]] = {"shot": [], "heldout": []}
        for r in self.db.conn.execute(
            "SELECT action_id, role FROM llm_split_items WHERE split = ? ORDER BY role, position",
            (name,),
        ):
            items[r["role"]].append(r["action_id"])
        # the LLM coder's records: loaded when the LLM is used, not by every command
        from llm_coder.records import SplitInfo

        return SplitInfo(
            name=row["name"],
            codebook=row["codebook"],
            codebook_hash=row["codebook_hash"],
            gold_coder=row["gold_coder"],
            sample=row["sample"],
            seed=row["seed"],
            shots=tuple(items["shot"]),
            heldout=tuple(items["heldout"]),
            created_at=row["created_at"],
            strategy=row["strategy"],
        )

    # -- targets: the actions a run codes, paged by SQL ---------------------------------

    def _target_sql(
        self,
        split: str,
        sample: str | None,
        types: Sequence[str] | None,
        *,
        keys: bool = True,
        left_of_run: int | None = None,
    ) -> tuple[str, list[Any]]:
        """The actions of the target (every action, or a sample's items) of these types,
        minus every item of the split (an anti-join on its primary key): their ids, and with
        ``keys`` the columns they are paged by."""
        params: list[Any] = []
        if sample is None:
            sql = f"SELECT a.id{', a.session, a.seq' if keys else ''} FROM actions a WHERE 1"
        else:
            sql = (
                f"SELECT a.id{', s.position' if keys else ''} FROM sample_items s "
                "JOIN actions a ON a.id = s.action_id WHERE s.sample = ?"
            )
            params.append(sample)
        if types is not None:
            sql += f" AND a.action_type IN ({','.join('?' * len(types))})"
            params += list(types)
        sql += (
            " AND NOT EXISTS (SELECT 1 FROM llm_split_items i WHERE i.split = ? "
            "AND i.action_id = a.id)"
        )
        params.append(split)
        if left_of_run is not None:  # a resumed run: only the items it has not stored
            sql += _NOT_STORED_BY_RUN
            params.append(left_of_run)
        return sql, params

    def count_targets(
        self,
        split: str,
        sample: str | None,
        types: Sequence[str] | None,
        left_of_run: int | None = None,
    ) -> int:
        sql, params = self._target_sql(split, sample, types, keys=False, left_of_run=left_of_run)
        return self.db.conn.execute(f"SELECT count(*) FROM ({sql})", params).fetchone()[0]

    def target_page(
        self,
        split: str,
        sample: str | None,
        types: Sequence[str] | None,
        after: tuple[Any, ...] | None,
        limit: int,
        left_of_run: int | None = None,
    ) -> list[tuple[Any, ...]]:
        """The next ``limit`` targets after the key ``after`` (keyset paging: each page is
        one index range, however far in): rows of (id, *key), the key being (session, seq)
        for every action, the position for a sample's items."""
        sql, params = self._target_sql(split, sample, types, left_of_run=left_of_run)
        if after is not None:
            sql += " AND (a.session, a.seq) > (?, ?)" if sample is None else " AND s.position > ?"
            params += list(after)
        sql += " ORDER BY a.session, a.seq" if sample is None else " ORDER BY s.position"
        return self.db.conn.execute(f"{sql} LIMIT ?", [*params, limit]).fetchall()

    def target_ids_unordered(
        self, split: str, sample: str | None, types: Sequence[str] | None
    ) -> Iterator[str]:
        """Every target id in whatever order reads fastest (a covering index of ids, not
        the table): for a sample of the targets (``llm-label --dry-run``), not for coding."""
        sql, params = self._target_sql(split, sample, types, keys=False)
        for row in self.db.conn.execute(sql + " ORDER BY a.id", params):
            yield row[0]

    def heldout_targets(
        self, split: str, types: Sequence[str] | None, left_of_run: int | None = None
    ) -> list[str]:
        """The split's held-out items of these types, in the split's order (with
        ``left_of_run``: only those that run has not stored)."""
        sql = (
            "SELECT i.action_id FROM llm_split_items i JOIN actions a ON a.id = i.action_id "
            "WHERE i.split = ? AND i.role = 'heldout'"
        )
        params: list[Any] = [split]
        if types is not None:
            sql += f" AND a.action_type IN ({','.join('?' * len(types))})"
            params += list(types)
        if left_of_run is not None:
            sql += _NOT_STORED_BY_RUN
            params.append(left_of_run)
        return [r[0] for r in self.db.conn.execute(sql + " ORDER BY i.position", params)]

    def split_items(self, name: str) -> list[dict[str, Any]]:
        return [
            dict(r)
            for r in self.db.conn.execute(
                "SELECT action_id, role, position, label FROM llm_split_items WHERE split = ? "
                "ORDER BY role DESC, position",
                (name,),
            )
        ]

    def splits(self) -> list[dict[str, Any]]:
        return [
            dict(r) for r in self.db.conn.execute("SELECT * FROM llm_splits ORDER BY created_at")
        ]

    def coder_answers(
        self, codebook: Codebook, coder: str, action_ids: Sequence[str] | None = None
    ) -> dict[str, dict[str, Answer]]:
        """``{action_id: {question: Answer}}`` of one coder's answered labels."""
        rows = self.labels.label_rows(
            codebook.name, coders=[coder], action_ids=action_ids, answered_only=True
        )
        from annotate.codebook import Answer

        out: dict[str, dict[str, Answer]] = {}
        for r in rows:
            out.setdefault(r["action_id"], {})[r["question"]] = Answer(
                r["value"], tuple(r["codes"]), r["other_text"]
            )
        return out

    # -- runs ---------------------------------------------------------------------------

    def start_llm_run(self, **fields: Any) -> int:
        fields = {"started_at": now(), **fields}
        for key in ("shot_ids", "settings"):
            if key in fields and not isinstance(fields[key], str):
                fields[key] = dumps(fields[key])
        columns = ", ".join(fields)
        marks = ", ".join("?" * len(fields))
        with self.db.transaction() as conn:
            cur = conn.execute(
                f"INSERT INTO llm_runs ({columns}) VALUES ({marks})", tuple(fields.values())
            )
        return int(cur.lastrowid or 0)

    def resumable_llm_run(self, **same: Any) -> int | None:
        """The latest run that never finished (killed: still 'running'; stopped:
        'interrupted') whose columns ``same`` all equal these values, or None."""
        return self._latest_llm_run("status IN ('running', 'interrupted')", (), same)

    def finished_llm_run(self, status: str, **same: Any) -> int | None:
        """The latest online run (no batch of it) that finished with ``status`` whose
        columns ``same`` all equal these values, or None."""
        online = "status = ? AND id NOT IN (SELECT run_id FROM llm_batches)"
        return self._latest_llm_run(online, (status,), same)

    def _latest_llm_run(
        self, where: str, params: tuple[Any, ...], same: dict[str, Any]
    ) -> int | None:
        for key in ("shot_ids", "settings"):
            if key in same and not isinstance(same[key], str):
                same[key] = dumps(same[key])
        equal = " AND ".join(f"{column} IS ?" for column in same)
        row = self.db.conn.execute(
            f"SELECT id FROM llm_runs WHERE {where} AND {equal} ORDER BY id DESC LIMIT 1",
            (*params, *same.values()),
        ).fetchone()
        return None if row is None else int(row[0])

    def resume_llm_run(self, run_id: int, **fields: Any) -> None:
        """Take up a run that never finished: running again, with these options."""
        self.update_llm_run(run_id, status="running", finished_at=None, **fields)

    def llm_item_answers(
        self, run_id: int, phase: str
    ) -> Iterator[tuple[str, dict[str, Answer] | None, str | None, float | None]]:
        """(action id, answers, error, confidence) of a phase's stored items, in the order
        they were stored."""
        for row in self.db.conn.execute(
            "SELECT action_id, answer, error, confidence FROM llm_items WHERE run_id = ? "
            "AND phase = ? ORDER BY rowid",
            (run_id, phase),
        ):
            answer = json.loads(row[1]) if row[1] else None
            answers = (
                {q: answer_from_json(a) for q, a in answer.items()} if answer is not None else None
            )
            yield row[0], answers, row[2], row[3]

    def mark_llm_runs_interrupted(self, coder: str, codebook: str) -> int:
        with self.db.transaction() as conn:
            cur = conn.execute(
                "UPDATE llm_runs SET status = 'interrupted', finished_at = ? "
                "WHERE status = 'running' AND coder = ? AND codebook = ?",
                (now(), coder, codebook),
            )
        return cur.rowcount

    def update_llm_run(self, run_id: int, **fields: Any) -> None:
        if "report" in fields and fields["report"] is not None:
            fields["report"] = dumps(fields["report"])
        sets = ", ".join(f"{k} = ?" for k in fields)
        with self.db.transaction() as conn:
            conn.execute(f"UPDATE llm_runs SET {sets} WHERE id = ?", (*fields.values(), run_id))

    def llm_run(self, run_id: int) -> dict[str, Any]:
        row = self.db.conn.execute("SELECT * FROM llm_runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no LLM run with id {run_id}")
        out = dict(row)
        for key in ("shot_ids", "settings", "report"):
            out[key] = json.loads(out[key]) if out[key] else None
        return out

    def llm_runs(self) -> list[dict[str, Any]]:
        return [
            dict(r)
            for r in self.db.conn.execute(
                "SELECT id, started_at, status, coder, endpoint_host, codebook, split, gate, "
                "kappa, forced, response_format, sent, cached, tokens_in, tokens_out, cost "
                "FROM llm_runs "
                "ORDER BY id"
            )
        ]

    # -- response format per endpoint ---------------------------------------------------

    def endpoint_format(self, endpoint_host: str, model: str) -> str | None:
        row = self.db.conn.execute(
            "SELECT response_format FROM llm_endpoint_formats "
            "WHERE endpoint_host = ? AND model = ?",
            (endpoint_host, model),
        ).fetchone()
        return row[0] if row else None

    def save_endpoint_format(
        self, endpoint_host: str, model: str, response_format: str, reason: str | None
    ) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO llm_endpoint_formats "
                "(endpoint_host, model, response_format, reason, updated_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (endpoint_host, model) DO UPDATE SET "
                "response_format = excluded.response_format, reason = excluded.reason, "
                "updated_at = excluded.updated_at",
                (endpoint_host, model, response_format, reason, now()),
            )

    # -- request cache ------------------------------------------------------------------

    def llm_cache(self, run_id: int | None) -> StoreCache:
        return StoreCache(self, run_id)

    def prompt_has_replies(self, prompt_hash: str, model: str, endpoint_host: str) -> bool:
        """Whether any reply to a request with this prompt prefix is stored for this model
        and endpoint (by index on ``llm_requests(prompt_hash)``)."""
        return (
            self.db.conn.execute(
                "SELECT 1 FROM llm_requests WHERE prompt_hash = ? AND model = ? "
                "AND endpoint_host = ? LIMIT 1",
                (prompt_hash, model, endpoint_host),
            ).fetchone()
            is not None
        )

    def cached_reply(self, request_hash: str) -> Reply | None:
        row = self.db.conn.execute(
            "SELECT reply, tokens_in, tokens_out, latency_s, response_format, attempts "
            "FROM llm_requests WHERE request_hash = ?",
            (request_hash,),
        ).fetchone()
        if row is None:
            return None
        # the LLM coder's records: loaded when the LLM is used, not by every command
        from llm_coder.records import Reply

        return Reply(
            text=row[0],
            tokens_in=row[1],
            tokens_out=row[2],
            latency_s=row[3],
            response_format=row[4],
            attempts=row[5],
            cached=True,
        )

    def save_call(
        self, record: CallRecord, run_id: int | None, *, known_prompts: set[str] | None = None
    ) -> None:
        """Store a request and its reply at once (a killed run must not pay for it again).

        A reply is paid for: another process writing is waited for without a time limit."""
        req, reply = record.request, record.reply
        prompt = req.prompt_hash
        with self.db.transaction(patient=True) as conn:
            if known_prompts is None or prompt not in known_prompts:
                conn.execute(
                    "INSERT OR IGNORE INTO llm_prompts (prompt_hash, messages, created_at) "
                    "VALUES (?, ?, ?)",
                    (prompt, dumps(list(req.messages[: req.prefix_len])), now()),
                )
                if known_prompts is not None:
                    known_prompts.add(prompt)
            conn.execute(
                "INSERT OR IGNORE INTO llm_requests (request_hash, prompt_hash, tail, model, "
                "endpoint_host, temperature, vote, schema, response_format, reply, tokens_in, "
                "tokens_out, latency_s, attempts, run_id, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    req.hash,
                    prompt,
                    dumps(list(req.messages[req.prefix_len :])),
                    req.model,
                    req.endpoint_host,
                    req.temperature,
                    req.vote,
                    dumps(req.schema),
                    reply.response_format,
                    reply.text,
                    reply.tokens_in,
                    reply.tokens_out,
                    reply.latency_s,
                    reply.attempts,
                    run_id,
                    now(),
                ),
            )

    def llm_request(self, request_hash: str) -> dict[str, Any]:
        """A stored request with its full messages (prefix + tail) and reply."""
        row = self.db.conn.execute(
            "SELECT r.*, p.messages AS prefix FROM llm_requests r "
            "JOIN llm_prompts p USING (prompt_hash) WHERE r.request_hash = ?",
            (request_hash,),
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no stored request {request_hash[:12]}")
        out = dict(row)
        out["messages"] = json.loads(out.pop("prefix")) + json.loads(out.pop("tail"))
        out["schema"] = json.loads(out["schema"])
        return out

    def count_llm_requests(self) -> int:
        return self.db.conn.execute("SELECT count(*) FROM llm_requests").fetchone()[0]

    # -- results ------------------------------------------------------------------------

    def save_llm_items(
        self,
        run_id: int,
        phase: str,
        codebook: Codebook,
        coder: str,
        results: Sequence[ItemResult],
        *,
        provenance: Mapping[str, Any],
    ) -> None:
        """Store finished items of a run, and their valid answers as ``coder``'s labels.

        One transaction per batch. Items that failed (network) are not stored: the next run
        retries them. Invalid replies are stored here with their raw text, not as labels.
        """
        stamp = now()
        done = [r for r in results if r.failed is None]
        writes: list[LabelWrite] = []
        for r in done:
            if r.answers is None:
                continue
            meta = {
                **provenance,
                "run_id": run_id,
                "request_hash": r.request_hashes[-1] if r.request_hashes else None,
                "confidence": r.confidence,
            }
            writes.extend(
                LabelWrite(r.action_id, qid, coder, answer, LLM_SOURCE, meta)
                for qid, answer in r.answers.items()
            )
        with self.db.transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO llm_items (run_id, action_id, phase, valid, answer, "
                "error, confidence, request_hashes, raw_replies, tokens_in, tokens_out, "
                "latency_s, cached, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        run_id,
                        r.action_id,
                        phase,
                        int(r.valid),
                        dumps({q: answer_json(a) for q, a in r.answers.items()})
                        if r.answers
                        else None,
                        r.error,
                        r.confidence,
                        dumps(r.request_hashes),
                        dumps(r.raw_replies),
                        r.tokens_in,
                        r.tokens_out,
                        r.latency_s,
                        int(r.cached),
                        stamp,
                    )
                    for r in done
                ],
            )
            if writes:
                self.labels.save_answers(codebook, writes, provenance=True)

    def llm_items(self, run_id: int, phase: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT * FROM llm_items WHERE run_id = ?"
        params: tuple[Any, ...] = (run_id,)
        if phase:
            sql += " AND phase = ?"
            params += (phase,)
        out = []
        for r in self.db.conn.execute(sql + " ORDER BY created_at, action_id", params):
            d = dict(r)
            d["answer"] = (
                {q: answer_from_json(a) for q, a in json.loads(d["answer"]).items()}
                if d["answer"]
                else None
            )
            d["request_hashes"] = json.loads(d["request_hashes"])
            d["raw_replies"] = json.loads(d["raw_replies"])
            out.append(d)
        return out

    def llm_item_rows(self, codebook: str | None = None) -> list[dict[str, Any]]:
        """Every coded item of every run with the run's provenance (the ``llm`` export).

        A run that took an item's replies from the cache of an earlier run's requests (the
        same command run again, or validation repeated before labelling) did not label it
        again: that copy is left out, and the earlier run's row stands for it.
        """
        sql = (
            "SELECT i.run_id, r.coder, r.model, r.endpoint_host, r.codebook, r.codebook_hash, "
            "r.prompt_hash, r.shot_ids, r.temperature, r.votes, i.phase, i.action_id, "
            "i.valid, i.answer, i.error, i.confidence, i.raw_replies, i.tokens_in, "
            "i.tokens_out, i.latency_s, i.cached, i.created_at "
            "FROM llm_items i JOIN llm_runs r ON r.id = i.run_id "
            "WHERE NOT (i.cached AND EXISTS (SELECT 1 FROM llm_items e WHERE "
            "e.action_id = i.action_id AND e.request_hashes = i.request_hashes "
            "AND e.run_id < i.run_id))"
        )
        params: tuple[Any, ...] = ()
        if codebook:
            sql += " AND r.codebook = ?"
            params = (codebook,)
        rows = self.db.conn.execute(sql + " ORDER BY i.run_id, i.phase, i.action_id", params)
        return [dict(r) for r in rows]
