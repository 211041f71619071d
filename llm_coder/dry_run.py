"""`llm-label --dry-run`: one item's exact messages and an estimate of the whole run."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from annotate.codebook import Answer
from annotate.errors import UsageError
from llm_coder.calls import MemoryCache
from llm_coder.cost import Estimate, estimate_message_tokens, estimate_tokens
from llm_coder.items import Sessions, TargetIds, chunked
from llm_coder.prompt import Message, canonical_json, target_message
from llm_coder.schema import answer_to_json, response_format

if TYPE_CHECKING:
    from llm_coder.job import LabelJob

ESTIMATE_ITEMS = 5_000
"""A dry run measures the prompt of every item up to this many, of a systematic sample above."""


@dataclass(frozen=True)
class DryRun:
    messages: list[Message]
    response_format: dict[str, Any]
    item_id: str
    estimate: Estimate
    validate_items: int
    label_items: int


def dry_run(job: LabelJob) -> DryRun:
    """The exact messages of the first item, and an estimate for the whole run.

    Up to :data:`ESTIMATE_ITEMS` items every item's prompt is measured; above, every
    k-th item's (a systematic sample) and the total is scaled from their mean. Requests
    already answered are counted only when the endpoint's cache holds replies to this
    prompt, by hashing every request, a chunk at a time."""
    rest: Sequence[str] | TargetIds = [] if job.options.validate_only else job.rest_ids()
    n_items = len(job.heldout_ids) + len(rest)
    if not n_items:
        raise UsageError("nothing to label: the split's held-out set and target are empty")
    runner = job._runner(client=None, cache=MemoryCache())
    first = job.sessions.item(job.heldout_ids[0] if job.heldout_ids else next(iter(rest)))
    request = runner.first_request(first)
    prefix_tokens = estimate_message_tokens(job.builder.prefix)
    votes = job.options.votes
    reply_example = canonical_json(
        {
            q.id: answer_to_json(q, Answer(q.codes[0] if q.codes else None, ()))
            for q in job.builder.questions(first)
        }
    )
    if job.config is not None:
        job.store.llm_cache(None)  # brings in replies a full disk kept beside the file
    check_cache = job.config is not None and job.store.prompt_has_replies(
        job.builder.prompt_hash, job.options.model, job.endpoint_host
    )
    step = 1 if check_cache or n_items <= ESTIMATE_ITEMS else -(-n_items // ESTIMATE_ITEMS)
    ids = itertools.chain(job.heldout_ids[::step], rest if step == 1 else rest.every(step))
    measured = measured_tokens = cached = 0
    for chunk in chunked(ids, Sessions.CHUNK):
        items = list(job.sessions.items(chunk))
        hashes: list[list[str]] = []
        if check_cache:
            hashes = [
                [runner._request(it, job.builder.messages(it), v).hash for v in range(votes)]
                for it in items
            ]
            found = job.store.cached_hashes([h for hs in hashes for h in hs])
        for i, item in enumerate(items):
            left = votes - (sum(h in found for h in hashes[i]) if check_cache else 0)
            cached += votes - left
            measured += left
            measured_tokens += left * estimate_message_tokens([target_message(item)])
    requests = n_items * votes - cached
    if step > 1:  # scaled from the sample
        measured_tokens = round(measured_tokens * requests / max(measured, 1))
    tokens_in = requests * prefix_tokens + measured_tokens
    tokens_out = requests * estimate_tokens(reply_example)
    estimate = Estimate(
        requests, cached, tokens_in, tokens_out, job.options.price.cost(tokens_in, tokens_out)
    )
    return DryRun(
        messages=list(request.messages),
        response_format=response_format(job.fallback.mode, request.schema) or {},
        item_id=first.action.id,
        estimate=estimate,
        validate_items=len(job.heldout_ids),
        label_items=n_items - len(job.heldout_ids),
    )
