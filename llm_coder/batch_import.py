"""Storing a batch results file: every reply exactly as an online reply.

Lines are read in chunks (memory does not grow with the file). Each line is matched to its
request by ``custom_id`` (the request hash) through the store's batch tables, which hold
the request as it was written (prompt hash, tail, schema, vote). A reply becomes the cache
row an online reply would (``llm_requests``, keyed by the same hash); an item whose every
vote has a reply becomes an item result, ``llm:MODEL`` labels and provenance (with the
batch), checked against the codebook like an online reply: a reply that is not JSON or
uses a code outside the codebook is stored as invalid with its raw text. A line with an
error leaves its item open for the next batch. A line already stored is skipped, so
importing a file twice adds nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING, Any

from annotate.codebook import Codebook
from llm_coder.batch import BadLine, ResultLine, parse_result_line
from llm_coder.calls import ChatRequest, Reply
from llm_coder.cost import Price
from llm_coder.prompt import Message
from llm_coder.runner import ItemResult, VoteResult, majority
from llm_coder.schema import parse_reply

if TYPE_CHECKING:
    from llm_coder.ports import LLMStore

CHUNK = 2000
DEFAULT_DISCOUNT = 0.5


def batch_price(settings: Mapping[str, Any]) -> Price:
    """The run's price per million tokens at the batch rate."""
    discount = settings.get("batch_discount", DEFAULT_DISCOUNT)
    return Price(
        (settings.get("price_in") or 0.0) * discount, (settings.get("price_out") or 0.0) * discount
    )


def item_from_replies(
    action_id: str,
    codebook: Codebook,
    action_type: str,
    hashes: Sequence[str],
    replies: Mapping[str, Reply],
    *,
    cached: bool = False,
) -> ItemResult | None:
    """The item's result from one reply per vote (None while a vote has no reply)."""
    if not all(h in replies for h in hashes):
        return None
    questions = codebook.questions_for(action_type)
    votes = []
    for h in hashes:
        reply = replies[h]
        parsed = parse_reply(reply.text, questions)
        votes.append(
            VoteResult(
                parsed.answers,
                parsed.error,
                (reply.text,),
                (h,),
                reply.tokens_in,
                reply.tokens_out,
                reply.latency_s,
                cached,
            )
        )
    answers, confidence = majority([v.answers for v in votes], questions)
    error = None if answers is not None else votes[0].error
    return ItemResult(action_id, answers, error, confidence, tuple(votes))


@dataclass
class RunContext:
    """What a run's requests share: rebuilt from the stored run, not from the command line."""

    run: dict[str, Any]
    codebook: Codebook
    prefix: tuple[Message, ...]

    @classmethod
    def load(cls, store: LLMStore, run_id: int) -> RunContext:
        run = store.llm_run(run_id)
        codebook = store.stored_codebook(run["codebook"], run["codebook_hash"])
        prefix = tuple(store.llm_prompt_messages(run["prompt_hash"]))
        return cls(run, codebook, prefix)

    def request(self, line: Mapping[str, Any]) -> ChatRequest:
        """The request of a stored batch line, as the online path builds it."""
        run = self.run
        return ChatRequest(
            model=run["model"],
            endpoint_host=run["endpoint_host"],
            messages=self.prefix + tuple(json.loads(line["tail"])),
            prefix_len=len(self.prefix),
            temperature=run["temperature"],
            schema=json.loads(line["schema"]),
            vote=line["vote"],
            send_seed=run["votes"] > 1,
            prefix_hash=run["prompt_hash"],
        )

    def cache_row(self, line: Mapping[str, Any], result: ResultLine) -> tuple[Any, ...]:
        run = self.run
        return (
            line["custom_id"], run["prompt_hash"], line["tail"], run["model"],
            run["endpoint_host"], run["temperature"], line["vote"], line["schema"],
            line["response_format"], result.text or "", result.tokens_in, result.tokens_out,
            run["id"],
        )  # fmt: skip

    def provenance(self, phase: str, batch: dict[str, Any]) -> dict[str, Any]:
        run = self.run
        return {
            "model": run["model"],
            "endpoint": run["endpoint_host"],
            "prompt_hash": run["prompt_hash"],
            "codebook_hash": run["codebook_hash"],
            "temperature": run["temperature"],
            "votes": run["votes"],
            "phase": phase,
            "batch": batch["provider_id"] or batch["path"] or batch["id"],
        }


@dataclass
class ImportResult:
    lines: int = 0
    stored: int = 0
    already: int = 0
    errors: int = 0
    unknown: int = 0
    bad: int = 0
    items: int = 0
    valid: int = 0
    invalid: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    runs: set[int] = field(default_factory=set)
    batches: set[int] = field(default_factory=set)
    error_examples: list[str] = field(default_factory=list)


def _chunks(lines: Iterable[str], size: int) -> Iterator[list[str]]:
    it = iter(lines)
    while chunk := list(islice(it, size)):
        yield chunk


class Importer:
    """Stores result lines into one project file; one transaction per chunk of lines."""

    def __init__(self, store: LLMStore, *, chunk: int = CHUNK):
        self.store = store
        self.chunk = chunk
        self.result = ImportResult()
        self._runs: dict[int, RunContext] = {}
        self._batches: dict[int, dict[str, Any]] = {}

    def context(self, run_id: int) -> RunContext:
        if run_id not in self._runs:
            self._runs[run_id] = RunContext.load(self.store, run_id)
        return self._runs[run_id]

    def batch(self, batch_id: int) -> dict[str, Any]:
        if batch_id not in self._batches:
            self._batches[batch_id] = self.store.llm_batch(batch_id)
        return self._batches[batch_id]

    def add(self, lines: Iterable[str]) -> ImportResult:
        for chunk in _chunks(lines, self.chunk):
            self._add_chunk(chunk)
        return self.result

    def _parse(self, lines: list[str]) -> list[ResultLine]:
        out = []
        for line in lines:
            if not line.strip():
                continue
            self.result.lines += 1
            try:
                out.append(parse_result_line(line))
            except BadLine:
                self.result.bad += 1
        return out

    def _add_chunk(self, lines: list[str]) -> None:
        res, store = self.result, self.store
        parsed = self._parse(lines)
        rows = store.llm_batch_lines([p.custom_id for p in parsed])
        cached = store.cached_hashes([p.custom_id for p in parsed if p.ok])
        cache_rows: list[tuple[Any, ...]] = []
        replies: dict[str, Reply] = {}
        errors: list[tuple[int, str, str]] = []
        touched: dict[int, set[str]] = {}
        per_batch: dict[int, list[int]] = {}
        for p in parsed:
            row = rows.get(p.custom_id)
            if row is None:
                res.unknown += 1
                continue
            batch_id = row["batch_id"]
            counts = per_batch.setdefault(batch_id, [0, 0, 0, 0])
            if not p.ok:
                res.errors += 1
                counts[1] += 1
                if len(res.error_examples) < 5:
                    res.error_examples.append(f"{row['action_id']}: {p.error}")
                errors.append((batch_id, p.custom_id, p.error or "no reply"))
                continue
            if p.custom_id in cached:
                res.already += 1
                res.batches.add(batch_id)
                continue
            cache_rows.append(self.context(row["run_id"]).cache_row(row, p))
            replies[p.custom_id] = Reply(
                p.text or "", p.tokens_in, p.tokens_out, 0.0, row["response_format"]
            )
            cached.add(p.custom_id)
            touched.setdefault(batch_id, set()).add(row["action_id"])
            res.stored += 1
            res.tokens_in += p.tokens_in
            res.tokens_out += p.tokens_out
            counts[0] += 1
            counts[2] += p.tokens_in
            counts[3] += p.tokens_out
        with store.transaction():
            if cache_rows:
                store.save_batch_replies(cache_rows)
            if errors:
                store.set_llm_batch_line_errors(errors)
            for batch_id, action_ids in touched.items():
                self._save_items(batch_id, sorted(action_ids), replies)
            for batch_id, (done, errs, t_in, t_out) in per_batch.items():
                store.add_llm_batch_counts(
                    batch_id, done=done, errors=errs, tokens_in=t_in, tokens_out=t_out
                )
                self._add_to_run(batch_id, done, t_in, t_out)
                res.batches.add(batch_id)

    def _save_items(self, batch_id: int, action_ids: list[str], fresh: dict[str, Reply]) -> None:
        store, res = self.store, self.result
        batch = self.batch(batch_id)
        ctx = self.context(batch["run_id"])
        rows = store.llm_batch_items_of([batch_id], action_ids)
        others = [h for _, _, hashes in rows for h in hashes if h not in fresh]
        replies = {**store.cached_replies(others), **fresh} if others else fresh
        types = store.action_types(action_ids)
        results = []
        for _, action_id, hashes in rows:
            item = item_from_replies(action_id, ctx.codebook, types[action_id], hashes, replies)
            if item is not None:
                results.append(item)
                res.items += 1
                res.valid += item.valid
                res.invalid += not item.valid
        if results:
            store.save_llm_items(
                batch["run_id"],
                batch["phase"],
                ctx.codebook,
                ctx.run["coder"],
                results,
                provenance=ctx.provenance(batch["phase"], batch),
            )

    def _add_to_run(self, batch_id: int, done: int, tokens_in: int, tokens_out: int) -> None:
        batch = self.batch(batch_id)
        run_id = batch["run_id"]
        self.result.runs.add(run_id)
        if not done:
            return
        run = self.store.llm_run(run_id)
        price = batch_price(run["settings"] or {})
        cost = price.cost(tokens_in, tokens_out)
        self.result.cost += cost
        total_in, total_out = run["tokens_in"] + tokens_in, run["tokens_out"] + tokens_out
        self.store.update_llm_run(
            run_id,
            sent=run["sent"] + done,
            tokens_in=total_in,
            tokens_out=total_out,
            cost=(run["cost"] or 0.0) + cost if price.known else None,
        )
        self.store.update_llm_batch(
            batch_id, cost=(self.store.llm_batch(batch_id)["cost"] or 0.0) + cost
        )

    def finish(self) -> ImportResult:
        """Mark exported files whose every line now has a reply or an error as imported."""
        for batch_id in sorted(self.result.batches):
            batch = self.store.llm_batch(batch_id)
            if batch["kind"] != "file" or batch["status"] != "exported":
                continue
            lines = list(self.store.llm_batch_line_ids(batch_id))
            answered = len(self.store.cached_hashes(lines))
            errors, _ = self.store.llm_batch_line_errors(batch_id)
            if answered + errors >= batch["n_requests"]:
                self.store.update_llm_batch(
                    batch_id, status="imported", collected_at=self.store.timestamp()
                )
        return self.result


def import_file(store: LLMStore, path: Any) -> ImportResult:
    importer = Importer(store)
    importer.add(result_lines(path))
    return importer.finish()


def result_lines(path: Any) -> Iterator[str]:
    """The lines of a results file as text; a line that is not UTF-8 becomes one that fails
    as not JSON, so the others are still collected."""
    with open(path, "rb") as f:
        for raw in f:
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError:
                yield "not UTF-8"
