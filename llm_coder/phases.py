"""One phase of a labelling run (the held-out items, then the rest): every item coded
through the run's request cache, results and spend stored as they come."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from annotate.errors import StoreError
from llm_coder.calls import CallStats
from llm_coder.client import LazyClient
from llm_coder.items import PrefetchedCache, Sessions, chunked
from llm_coder.prompt import Item
from llm_coder.runner import ItemResult, Runner

if TYPE_CHECKING:
    from llm_coder.job import LabelJob

FLUSH_EVERY = 64
FLUSH_SECONDS = 1.0


@dataclass
class Progress:
    """Running totals of a phase, passed to the progress callback after every item."""

    phase: str
    total: int
    done: int = 0
    invalid: int = 0
    failed: int = 0
    cached: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0


@dataclass(frozen=True)
class PhaseResult:
    phase: str
    items: int
    valid: int
    invalid: int
    failed: int
    sent: int
    cached: int
    retries: int
    tokens_in: int
    tokens_out: int
    cost: float
    seconds: float
    failures: tuple[str, ...] = ()
    results: tuple[ItemResult, ...] = ()
    response_format: str = "json_schema"
    format_changes: tuple[str, ...] = ()
    timeouts: int = 0
    """Steps down the endpoint made this run take during this phase."""
    concurrency: int = 0
    """Requests in flight at the end of the phase."""
    concurrency_changes: tuple[str, ...] = ()
    """Each step down of the concurrency during the phase, with why."""


OnProgress = Callable[[Progress], None]


def run_phase(
    job: LabelJob, phase: str, ids: Sequence[str], on_progress: OnProgress | None = None
) -> PhaseResult:
    """Code ``ids`` in one phase of the job's run: through the run's request cache, results
    and the run's spend stored every :data:`FLUSH_EVERY` items or :data:`FLUSH_SECONDS`."""
    if job.run_id is None:
        job.start()
    return asyncio.run(_run_phase(job, phase, ids, on_progress))


async def _run_phase(
    job: LabelJob, phase: str, ids: Sequence[str], on_progress: OnProgress | None
) -> PhaseResult:
    assert job.config is not None and job.run_id is not None
    run_id = job.run_id
    client = LazyClient(job.config)  # built on the first request the cache cannot answer
    prefetch = PrefetchedCache(job.store, job.store.llm_cache(run_id))
    runner = job._runner(client, prefetch)
    price = job.options.price
    progress = Progress(phase, len(ids))
    results: list[ItemResult] = []
    pending: list[ItemResult] = []
    last_flush = time.monotonic()
    provenance = {**job.provenance(), "phase": phase}
    before = job.store.llm_run(run_id)  # the run's figures before this phase
    # a resumed run's
    stored, stored_valid = job.store.llm_item_counts(run_id, phase)

    def flush() -> None:
        # items and the run's spend move together: a killed run still shows what it paid
        nonlocal last_flush
        if pending:  # patient: a failed wait would stop the replies in flight
            with job.store.transaction(patient=True):
                job.store.save_llm_items(
                    run_id, phase, job.codebook, job.coder, pending, provenance=provenance
                )
                _record_stats(job, before, runner.caller.stats)
            pending.clear()
        last_flush = time.monotonic()

    def on_result(result: ItemResult) -> None:
        results.append(result)
        pending.append(result)
        progress.done += 1
        progress.invalid += result.failed is None and not result.valid
        progress.failed += result.failed is not None
        progress.cached += result.cached
        if not result.cached:
            progress.tokens_in += result.tokens_in
            progress.tokens_out += result.tokens_out
            progress.cost = price.cost(progress.tokens_in, progress.tokens_out)
        if len(pending) >= FLUSH_EVERY or time.monotonic() - last_flush > FLUSH_SECONDS:
            flush()
        if on_progress:
            on_progress(progress)

    started = time.perf_counter()
    changes_before = len(job.fallback.changes)
    items = _prefetched(job, job.sessions.items(ids), runner, prefetch)
    try:
        await runner.run(items, on_result, concurrency=job.concurrency()[0])
    except BaseException:
        with suppress(StoreError):  # a full disk: the first error is the one to tell
            flush()
            _record_stats(job, before, runner.caller.stats)
        raise
    else:
        flush()
        _record_stats(job, before, runner.caller.stats)
    finally:
        await client.close()
        limit = runner.caller.limit
        job.continue_at(limit.limit, limit.adapt)  # the next phase starts there
    stats = runner.caller.stats
    return PhaseResult(
        phase=phase,
        items=stored + len(ids),
        valid=stored_valid + sum(r.valid for r in results),
        invalid=stored - stored_valid + progress.invalid,
        failed=progress.failed,
        sent=stats.sent,
        cached=stats.cached,
        retries=stats.retries,
        tokens_in=stats.tokens_in,
        tokens_out=stats.tokens_out,
        cost=price.cost(stats.tokens_in, stats.tokens_out),
        seconds=time.perf_counter() - started,
        failures=tuple(r.failed for r in results if r.failed),
        results=tuple(results),
        response_format=job.fallback.mode,
        format_changes=tuple(job.fallback.changes[changes_before:]),
        timeouts=stats.timeouts,
        concurrency=runner.caller.limit.limit,
        concurrency_changes=tuple(runner.caller.limit.changes),
    )


def _prefetched(
    job: LabelJob, items: Iterator[Item], runner: Runner, cache: PrefetchedCache
) -> Iterator[Item]:
    """The items, the cached replies to each chunk's requests read in one query first
    (a resumed run gets what it already paid for without a query per request)."""
    votes = job.options.votes
    for chunk in chunked(items, Sessions.CHUNK):
        cache.prefetch(
            runner._request(item, job.builder.messages(item), v).hash
            for item in chunk
            for v in range(votes)
        )
        yield from chunk


def _record_stats(job: LabelJob, run: dict[str, Any], stats: CallStats) -> None:
    """Store the run's figures: ``run`` as it was before this phase plus ``stats``."""
    assert job.run_id is not None
    price = job.options.price
    tokens_in = run["tokens_in"] + stats.tokens_in
    tokens_out = run["tokens_out"] + stats.tokens_out
    job.store.update_llm_run(
        job.run_id,
        sent=run["sent"] + stats.sent,
        cached=run["cached"] + stats.cached,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost=price.cost(tokens_in, tokens_out) if price.known else None,
        response_format=job.fallback.mode,
    )
    job.remember_format(stats)
