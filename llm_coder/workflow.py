"""`annotate split` and `annotate llm-label` as library calls over the store.

The store owns the SQL; this module decides what to code and in which order:

1. :func:`make_split` — gold items -> few-shot set + held-out validation set.
2. :class:`LabelJob` — loads the split and builds the prompt once; then
   :meth:`LabelJob.validate` codes the held-out items and measures agreement with gold,
   :meth:`LabelJob.gate` decides, and :meth:`LabelJob.label_rest` codes the remaining
   actions. Every phase goes through the run's request cache, so a re-run sends nothing
   that was answered before.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from annotate.codebook import Answer, Codebook, LoadedCodebook
from annotate.errors import AnnotateError, StoreError, UsageError
from annotate.models import Action
from annotate.store.base import now
from llm_coder.calls import Caller, CallStats, FormatFallback, MemoryCache, RetryPolicy
from llm_coder.client import LazyClient, LLMConfig
from llm_coder.cost import Estimate, Price, estimate_message_tokens, estimate_tokens
from llm_coder.prompt import DEFAULT_CONTEXT, Item, Message, Shot, canonical_json
from llm_coder.runner import ItemResult, PromptBuilder, Runner, Settings
from llm_coder.schema import FORMAT_MODES, FormatMode, answer_to_json, response_format
from llm_coder.split import stratified_split

if TYPE_CHECKING:
    from annotate.store import Store

LLM_PREFIX = "llm:"
FLUSH_EVERY = 64
FLUSH_SECONDS = 1.0


def llm_coder_name(model: str) -> str:
    return f"{LLM_PREFIX}{model}"


UNCERTAIN = "llm-uncertain"
"""Origin of the samples ``--uncertain-sample`` makes (followed by the run id)."""


class GateFailed(AnnotateError):
    """Agreement on the held-out set is below --min-kappa: the rest is not labelled."""


# -- split ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SplitResult:
    name: str
    gold_items: int
    shots: tuple[str, ...]
    heldout: tuple[str, ...]
    shot_labels: dict[str, int]
    labels_total: int


def stratum(codebook: Codebook, answers: dict[str, Answer]) -> str:
    """The label a split stratifies on: the answer to the first question that has one."""
    for q in codebook.questions:
        a = answers.get(q.id)
        if a is not None:
            return a.value if a.value is not None else "+".join(sorted(a.codes))
    return "?"


def complete_gold(
    store: Store, codebook: Codebook, gold: str, ids: Sequence[str] | None
) -> dict[str, dict[str, Answer]]:
    """Gold answers of the actions the codebook applies to, every applicable question answered."""
    answers = store.coder_answers(codebook, gold, ids)
    if not answers:
        return {}
    actions = {a.id: a for a in store.actions_by_ids(sorted(answers))}
    out: dict[str, dict[str, Answer]] = {}
    for aid in sorted(answers, key=lambda i: (actions[i].session, actions[i].seq)):
        action = actions[aid]
        if not codebook.applies(action.action_type):
            continue
        needed = [q.id for q in codebook.questions_for(action.action_type)]
        if needed and all(q in answers[aid] for q in needed):
            out[aid] = answers[aid]
    return out


def make_split(
    store: Store,
    loaded: LoadedCodebook,
    *,
    shots: int,
    seed: int,
    gold: str = "gold",
    sample: str | None = None,
    name: str | None = None,
    replace: bool = False,
) -> SplitResult:
    codebook = loaded.codebook
    if shots < 1:
        raise UsageError("--shots must be at least 1")
    ids = store.sample_ids(sample) if sample else None
    answers = complete_gold(store, codebook, gold, ids)
    where = f" in sample '{sample}'" if sample else ""
    if not answers:
        coders = [c for c in store.coders(codebook.name) if not c.startswith(LLM_PREFIX)]
        raise UsageError(
            f"no gold labels for codebook '{codebook.name}'{where} (coder '{gold}')",
            hint=(
                f"make gold first: `annotate agree --codebook {codebook.name}` then "
                "`annotate adjudicate`, or import expert labels with "
                f"`annotate import FILES --labels-as {gold} --codebook {codebook.name}`"
                + (
                    f"; coders with labels: {', '.join(coders)} (use --gold CODER)"
                    if coders
                    else ""
                )
            ),
        )
    if len(answers) <= shots:
        raise UsageError(
            f"only {len(answers)} gold items for codebook '{codebook.name}'{where}: "
            f"--shots {shots} would leave nothing to validate on",
            hint="adjudicate more items into gold, or ask for fewer --shots",
        )
    labels = {aid: stratum(codebook, a) for aid, a in answers.items()}
    split = stratified_split(labels, shots, seed)
    split_name = name or codebook.name
    store.register_codebook(loaded)
    store.create_split(
        split_name,
        codebook=codebook,
        gold_coder=gold,
        sample=sample,
        seed=seed,
        shots=split.shots,
        heldout=split.heldout,
        labels=labels,
        replace=replace,
    )
    shot_labels: dict[str, int] = {}
    for aid in split.shots:
        shot_labels[labels[aid]] = shot_labels.get(labels[aid], 0) + 1
    return SplitResult(
        split_name,
        len(answers),
        split.shots,
        split.heldout,
        shot_labels,
        len(set(labels.values())),
    )


# -- items with context -----------------------------------------------------------------


def action_from_row(row: dict[str, Any]) -> Action:
    meta = row.get("meta")
    return Action(**{**row, "meta": json.loads(meta) if isinstance(meta, str) else meta or {}})


class Sessions:
    """Actions of the sessions needed, loaded once, to give each item its context."""

    def __init__(self, store: Store, context: int):
        self.store = store
        self.context = context
        self._by_session: dict[str, list[Action]] = {}
        self._pos: dict[str, tuple[str, int]] = {}

    def _add(self, session: str, actions: list[Action]) -> None:
        self._by_session[session] = actions
        for i, a in enumerate(actions):
            self._pos[a.id] = (session, i)

    def preload_all(self) -> list[Action]:
        """Every action (ordered by session, seq); used for ``--target all``."""
        by_session: dict[str, list[Action]] = {}
        for row in self.store.action_rows():
            a = action_from_row(row)
            by_session.setdefault(a.session, []).append(a)
        for session, actions in by_session.items():
            self._add(session, actions)
        return [a for actions in by_session.values() for a in actions]

    def action(self, action_id: str) -> Action:
        if action_id not in self._pos:
            session = self.store.action(action_id).session
            self._add(session, self.store.session_actions(session))
        session, i = self._pos[action_id]
        return self._by_session[session][i]

    def item(self, action_id: str) -> Item:
        action = self.action(action_id)
        session, i = self._pos[action_id]
        before = self._by_session[session][max(0, i - self.context) : i]
        return Item(action, tuple(before))


# -- the labelling job ------------------------------------------------------------------


@dataclass(frozen=True)
class JobOptions:
    model: str
    split: str
    shots: int | None = None
    temperature: float = 0.0
    votes: int = 1
    concurrency: int = 8
    timeout_s: float = 60.0
    max_retries: int = 5
    min_kappa: float = 0.6
    force: bool = False
    validate_only: bool = False
    target: str = "all"
    price: Price = field(default_factory=Price)
    context: int = DEFAULT_CONTEXT
    uncertain_sample: str | None = None
    below: float = 0.8
    response_format: FormatMode | None = None
    """Forced with ``--response-format``; otherwise the mode stored for the endpoint + model,
    else ``json_schema``, stepping down on a refusal."""


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


@dataclass(frozen=True)
class DryRun:
    messages: list[Message]
    response_format: dict[str, Any]
    item_id: str
    estimate: Estimate
    validate_items: int
    label_items: int


@dataclass(frozen=True)
class LabelSummary:
    run_id: int
    coder: str
    validate: PhaseResult | None
    label: PhaseResult | None
    uncertain: tuple[str, ...] = ()
    uncertain_sample: str | None = None
    response_format: str = "json_schema"
    format_changes: tuple[str, ...] = ()
    timeouts: int = 0


OnProgress = Callable[[Progress], None]


class LabelJob:
    """One `annotate llm-label` invocation: one run row, one prompt, one response-format state."""

    def __init__(
        self,
        store: Store,
        loaded: LoadedCodebook,
        options: JobOptions,
        config: LLMConfig | None,
    ):
        self.store = store
        self.loaded = loaded
        self.codebook = loaded.codebook
        self.options = options
        self.config = config
        if options.votes < 1:
            raise UsageError("--votes must be at least 1")
        if options.concurrency < 1:
            raise UsageError("--concurrency must be at least 1")
        self.split = store.split_info(options.split)
        if self.split.codebook != self.codebook.name:
            raise UsageError(
                f"split '{self.split.name}' was made for codebook '{self.split.codebook}', "
                f"not '{self.codebook.name}'",
                hint=f"pass --codebook {self.split.codebook} or another --split",
            )
        n_shots = len(self.split.shots) if options.shots is None else options.shots
        if not 0 <= n_shots <= len(self.split.shots):
            raise UsageError(
                f"--shots {n_shots}: split '{self.split.name}' has {len(self.split.shots)} shots",
                hint=f"make a bigger split: annotate split --codebook {self.codebook.name} "
                f"--shots {n_shots} --seed {self.split.seed} --replace",
            )
        if options.target != "all":
            store.sample_ids(options.target)  # an unknown sample fails now, before any request
        origins = {s["name"]: s["origin"] or "" for s in store.samples()}
        if not origins.get(options.uncertain_sample or "", UNCERTAIN).startswith(UNCERTAIN):
            raise UsageError(
                f"a sample named '{options.uncertain_sample}' already exists (made by "
                f"{origins[options.uncertain_sample]}, not by an LLM run)",
                hint="choose another --uncertain-sample name",
            )
        self.sessions = Sessions(store, options.context)
        shot_ids = list(self.split.shots[:n_shots])
        gold = store.coder_answers(self.codebook, self.split.gold_coder, shot_ids)
        shots = []
        for aid in shot_ids:
            item = self.sessions.item(aid)
            needed = self.codebook.questions_for(item.action.action_type)
            if any(q.id not in gold.get(aid, {}) for q in needed):
                raise UsageError(
                    f"shot {aid} no longer has a complete gold answer "
                    f"(coder '{self.split.gold_coder}')",
                    hint=f"re-make the split: annotate split --codebook {self.codebook.name} "
                    "--replace",
                )
            shots.append(Shot(item, gold[aid]))
        self.shot_ids = tuple(shot_ids)
        self.builder = PromptBuilder(self.codebook, shots)
        self.coder = llm_coder_name(options.model)
        self.endpoint_host = config.endpoint_host if config else "(dry run)"
        self.settings = Settings(
            options.model, self.endpoint_host, options.temperature, options.votes
        )
        self.fallback = self._format_fallback()
        self._saved_format: str | None = None
        self.run_id: int | None = None
        self.heldout_ids = [
            aid
            for aid in self.split.heldout
            if self.codebook.applies(self.sessions.action(aid).action_type)
        ]
        self._rest: list[str] | None = None

    def _format_fallback(self) -> FormatFallback:
        forced = self.options.response_format
        if forced is not None:
            if forced not in FORMAT_MODES:
                raise UsageError(
                    f"--response-format {forced}: not a mode",
                    hint="choose one of " + ", ".join(FORMAT_MODES),
                )
            return FormatFallback(mode=forced, forced=True)
        stored = (
            self.store.endpoint_format(self.endpoint_host, self.options.model)
            if self.config
            else None
        )
        if stored in FORMAT_MODES:
            return FormatFallback(mode=stored, settled=True)
        return FormatFallback()

    def _remember_format(self, stats: CallStats) -> None:
        """Store the mode the endpoint answered in, once a request in it got a reply."""
        mode = self.fallback.mode
        if self.config is None or stats.sent == 0 or mode == self._saved_format:
            return
        reason = self.fallback.changes[-1] if self.fallback.changes else None
        self.store.save_endpoint_format(self.endpoint_host, self.options.model, mode, reason)
        self._saved_format = mode

    # -- what to code ---------------------------------------------------------------

    def rest_ids(self) -> list[str]:
        """The target actions the codebook applies to, minus every item of the split."""
        if self._rest is None:
            exclude = set(self.split.shots) | set(self.split.heldout)
            if self.options.target == "all":
                actions = self.sessions.preload_all()
                ids = [a.id for a in actions]
            else:
                ids = self.store.sample_ids(self.options.target)
            self._rest = [
                aid
                for aid in ids
                if aid not in exclude
                and self.codebook.applies(self.sessions.action(aid).action_type)
            ]
        return self._rest

    def provenance(self) -> dict[str, Any]:
        return {
            "model": self.options.model,
            "endpoint": self.endpoint_host,
            "prompt_hash": self.builder.prompt_hash,
            "codebook_hash": self.codebook.version_hash,
            "temperature": self.options.temperature,
            "votes": self.options.votes,
        }

    # -- dry run --------------------------------------------------------------------

    def dry_run(self) -> DryRun:
        """The exact messages of the first item, and an estimate for the whole run."""
        ids = self.heldout_ids + ([] if self.options.validate_only else self.rest_ids())
        if not ids:
            raise UsageError("nothing to label: the split's held-out set and target are empty")
        runner = self._runner(client=None, cache=MemoryCache())
        first = self.sessions.item(ids[0])
        request = runner.first_request(first)
        cache = self.store.llm_cache(None)
        prefix_tokens = estimate_message_tokens(self.builder.prefix)
        votes = self.options.votes
        reply_example = canonical_json(
            {
                q.id: answer_to_json(q, Answer(q.codes[0] if q.codes else None, ()))
                for q in self.builder.questions(first)
            }
        )
        requests = cached = tokens_in = 0
        for aid in ids:
            item = self.sessions.item(aid)
            for v in range(votes):
                if self.config is not None:
                    req = runner._request(item, self.builder.messages(item), v)
                    if cache.get(req.hash) is not None:
                        cached += 1
                        continue
                requests += 1
                tokens_in += prefix_tokens + estimate_message_tokens(
                    [self.builder.messages(item)[-1]]
                )
        tokens_out = requests * estimate_tokens(reply_example)
        estimate = Estimate(
            requests, cached, tokens_in, tokens_out, self.options.price.cost(tokens_in, tokens_out)
        )
        return DryRun(
            messages=list(request.messages),
            response_format=response_format(self.fallback.mode, request.schema) or {},
            item_id=first.action.id,
            estimate=estimate,
            validate_items=len(self.heldout_ids),
            label_items=len(ids) - len(self.heldout_ids),
        )

    # -- running --------------------------------------------------------------------

    def _runner(self, client: Any, cache: Any) -> Runner:
        caller = Caller(
            client,
            cache,
            concurrency=self.options.concurrency,
            policy=RetryPolicy(
                max_retries=self.options.max_retries, timeout_s=self.options.timeout_s
            ),
            fallback=self.fallback,
        )
        return Runner(caller, self.builder, self.settings)

    def start(self) -> int:
        """Record the run (before any request is sent)."""
        if self.config is None:
            raise UsageError("a dry run cannot start a run")
        self.store.register_codebook(self.loaded)
        o = self.options
        # a run of this coder still 'running' was killed: this one takes over its items
        self.store.mark_llm_runs_interrupted(self.coder, self.codebook.name)
        self.run_id = self.store.start_llm_run(
            coder=self.coder,
            model=o.model,
            endpoint_host=self.endpoint_host,
            codebook=self.codebook.name,
            codebook_hash=self.codebook.version_hash,
            split=self.split.name,
            prompt_hash=self.builder.prompt_hash,
            shot_ids=list(self.shot_ids),
            temperature=o.temperature,
            votes=o.votes,
            context=o.context,
            target=o.target,
            min_kappa=o.min_kappa,
            forced=int(o.force),
            validate_only=int(o.validate_only),
            settings={
                "concurrency": o.concurrency,
                "timeout_s": o.timeout_s,
                "max_retries": o.max_retries,
                "price_in": o.price.per_m_in,
                "price_out": o.price.per_m_out,
                "gold_coder": self.split.gold_coder,
            },
        )
        return self.run_id

    def run_phase(
        self, phase: str, ids: Sequence[str], on_progress: OnProgress | None = None
    ) -> PhaseResult:
        if self.run_id is None:
            self.start()
        return asyncio.run(self._run_phase(phase, ids, on_progress))

    async def _run_phase(
        self, phase: str, ids: Sequence[str], on_progress: OnProgress | None
    ) -> PhaseResult:
        assert self.config is not None and self.run_id is not None
        run_id = self.run_id
        client = LazyClient(self.config)  # built on the first request the cache cannot answer
        runner = self._runner(client, self.store.llm_cache(run_id))
        price = self.options.price
        progress = Progress(phase, len(ids))
        results: list[ItemResult] = []
        pending: list[ItemResult] = []
        last_flush = time.monotonic()
        provenance = {**self.provenance(), "phase": phase}
        before = self.store.llm_run(run_id)  # the run's figures before this phase

        def flush() -> None:
            # items and the run's spend move together: a killed run still shows what it paid
            nonlocal last_flush
            if pending:  # patient: a failed wait would stop the replies in flight
                with self.store.transaction(patient=True):
                    self.store.save_llm_items(
                        run_id, phase, self.codebook, self.coder, pending, provenance=provenance
                    )
                    self._record_stats(before, runner.caller.stats)
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
        changes_before = len(self.fallback.changes)
        items: Iterator[Item] = (self.sessions.item(aid) for aid in ids)
        try:
            await runner.run(items, on_result, concurrency=self.options.concurrency)
        except BaseException:
            with suppress(StoreError):  # a full disk: the first error is the one to tell
                flush()
                self._record_stats(before, runner.caller.stats)
            raise
        else:
            flush()
            self._record_stats(before, runner.caller.stats)
        finally:
            await client.close()
        stats = runner.caller.stats
        return PhaseResult(
            phase=phase,
            items=len(ids),
            valid=sum(r.valid for r in results),
            invalid=progress.invalid,
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
            response_format=self.fallback.mode,
            format_changes=tuple(self.fallback.changes[changes_before:]),
            timeouts=stats.timeouts,
        )

    def _record_stats(self, run: dict[str, Any], stats: CallStats) -> None:
        """Store the run's figures: ``run`` as it was before this phase plus ``stats``."""
        assert self.run_id is not None
        price = self.options.price
        tokens_in = run["tokens_in"] + stats.tokens_in
        tokens_out = run["tokens_out"] + stats.tokens_out
        self.store.update_llm_run(
            self.run_id,
            sent=run["sent"] + stats.sent,
            cached=run["cached"] + stats.cached,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            cost=price.cost(tokens_in, tokens_out) if price.known else None,
            response_format=self.fallback.mode,
        )
        self._remember_format(stats)

    def finish(self, status: str, *, only_if_running: bool = False, **fields: Any) -> None:
        if self.run_id is None:
            return
        if only_if_running and self.store.llm_run(self.run_id)["status"] != "running":
            return
        self.store.update_llm_run(self.run_id, status=status, finished_at=now(), **fields)

    def make_uncertain_sample(self, results: Sequence[ItemResult]) -> tuple[str, ...]:
        """Items whose vote share is below ``--below`` become a new sample for humans."""
        name = self.options.uncertain_sample
        if not name:
            return ()
        ids = tuple(
            r.action_id
            for r in results
            if r.failed is None and (r.confidence is None or r.confidence < self.options.below)
        )
        existing = {s["name"] for s in self.store.samples()}
        if ids and (name not in existing or self.store.sample_ids(name) != list(ids)):
            # a re-run with other answers remakes the sample an earlier run made
            self.store.create_sample(name, ids, origin=f"{UNCERTAIN}:{self.run_id}", replace=True)
        return ids
