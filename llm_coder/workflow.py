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
import itertools
import json
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from annotate.codebook import Answer, Codebook, LoadedCodebook
from annotate.errors import AnnotateError, NotFoundError, StoreError, UsageError
from annotate.models import Action
from llm_coder.calls import Caller, CallStats, FormatFallback, MemoryCache, RetryPolicy
from llm_coder.client import LazyClient, LLMConfig
from llm_coder.concurrency import DEFAULT_CONCURRENCY, server_slots
from llm_coder.cost import Estimate, Price, estimate_message_tokens, estimate_tokens
from llm_coder.prompt import (
    DEFAULT_CONTEXT,
    Item,
    Message,
    Shot,
    canonical_json,
    target_message,
)
from llm_coder.runner import ItemResult, PromptBuilder, Runner, Settings
from llm_coder.schema import FORMAT_MODES, FormatMode, answer_to_json, response_format
from llm_coder.split import random_split, stratified_split

if TYPE_CHECKING:
    from llm_coder.ports import LLMStore

T = TypeVar("T")

LLM_PREFIX = "llm:"
ESTIMATE_ITEMS = 5_000
"""A dry run measures the prompt of every item up to this many, of a systematic sample above."""
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
    strategy: str = "random"


def stratum(codebook: Codebook, answers: dict[str, Answer]) -> str:
    """The label a split stratifies on: the answer to the first question that has one."""
    for q in codebook.questions:
        a = answers.get(q.id)
        if a is not None:
            return a.value if a.value is not None else "+".join(sorted(a.codes))
    return "?"


def complete_gold(
    store: LLMStore, codebook: Codebook, gold: str, ids: Sequence[str] | None
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


DEFAULT_SHOTS = 8
DEFAULT_SEED = 7


def gold_codebook(store: LLMStore) -> str:
    """The one codebook with gold (`llm-label` without ``--codebook``)."""
    names = store.gold_codebooks()
    if len(names) == 1:
        return names[0]
    if not names:
        raise UsageError(
            "no codebook has gold labels to validate an LLM on: pass --codebook NAME",
            hint="make gold first: `annotate agree` then `annotate adjudicate`, or import "
            "expert labels with `annotate import-labels FILE --codebook NAME` (coder gold)",
        )
    raise UsageError(
        f"{len(names)} codebooks have gold ({', '.join(names)}): pass --codebook NAME",
    )


def split_exists(store: LLMStore, name: str) -> bool:
    try:
        store.split_info(name)
    except NotFoundError:
        return False
    return True


STRATEGIES = ("random", "cover")
"""How shots are chosen: ``random`` (a plain draw, the ALMANAC paper's; the default) or
``cover`` (as many distinct labels as the shots allow)."""


def make_split(
    store: LLMStore,
    loaded: LoadedCodebook,
    *,
    shots: int,
    seed: int,
    gold: str = "gold",
    sample: str | None = None,
    name: str | None = None,
    replace: bool = False,
    strategy: str = "random",
) -> SplitResult:
    codebook = loaded.codebook
    if shots < 1:
        raise UsageError("--shots must be at least 1")
    if strategy not in STRATEGIES:
        raise UsageError(
            f"--strategy: unknown strategy '{strategy}'", hint="choices: " + ", ".join(STRATEGIES)
        )
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
    if strategy == "cover":
        split = stratified_split(labels, shots, seed)
    else:
        split = random_split(list(labels), shots, seed)
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
        strategy=strategy,
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
        strategy,
    )


# -- items with context -----------------------------------------------------------------


def action_from_row(row: dict[str, Any]) -> Action:
    meta = row.get("meta")
    return Action(**{**row, "meta": json.loads(meta) if isinstance(meta, str) else meta or {}})


class Sessions:
    """Each item's action and the actions before it in its session (its context), read by
    index when asked for. A session with many items in one chunk (``--target all`` streams
    them in session order) is read once, whole; only the last few such are held."""

    KEEP_SESSIONS = 4
    CHUNK = 500
    WHOLE_SESSION = 16
    """Items of one session in a chunk from which its actions are read in one query."""

    def __init__(
        self, store: LLMStore, context: int, lookahead: int = 0, show: Sequence[str] = ()
    ):
        self.store = store
        self.context = context
        self.lookahead = lookahead
        self.show = tuple(show)
        self._sessions: OrderedDict[str, tuple[list[Action], dict[str, int]]] = OrderedDict()

    def action(self, action_id: str) -> Action:
        return self.store.action(action_id)

    def item(self, action_id: str) -> Item:
        return self._item(self.action(action_id))

    def items(self, ids: Iterable[str]) -> Iterator[Item]:
        """The items of ``ids`` in order, their actions read a chunk at a time."""
        for chunk in chunked(ids, self.CHUNK):
            actions = self.store.actions_by_ids(chunk)
            if self.context or self.lookahead:
                per_session = Counter(a.session for a in actions)
                for session, n in per_session.items():
                    if n >= self.WHOLE_SESSION and session not in self._sessions:
                        self._hold(session)
            for action in actions:
                yield self._item(action)

    def _hold(self, session: str) -> None:
        actions = self.store.session_actions(session)
        self._sessions[session] = (actions, {a.id: i for i, a in enumerate(actions)})
        while len(self._sessions) > self.KEEP_SESSIONS:
            self._sessions.popitem(last=False)

    def _item(self, action: Action) -> Item:
        held = self._sessions.get(action.session)
        if held is None:
            around: list[Action] = []
            if self.context or self.lookahead:
                around = self.store.context(
                    action, before=self.context, after=self.lookahead
                )
            before = tuple(a for a in around if a.seq < action.seq)
            after = tuple(a for a in around if a.seq > action.seq)
            return Item(action, before, after, self.show)
        self._sessions.move_to_end(action.session)
        actions, index = held
        i = index[action.id]
        return Item(
            action,
            tuple(actions[max(0, i - self.context) : i]),
            tuple(actions[i + 1 : i + 1 + self.lookahead]),
            self.show,
        )


def chunked(values: Iterable[T], size: int) -> Iterator[list[T]]:
    chunk: list[T] = []
    for value in values:
        chunk.append(value)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class PrefetchedCache:
    """A run's request cache with the replies of the next chunk of requests read ahead in
    one query; any other request goes to the cache as usual."""

    def __init__(self, store: LLMStore, cache: Any):
        self.store = store
        self.cache = cache
        self._ready: dict[str, Any] = {}

    def prefetch(self, hashes: Iterable[str]) -> None:
        self._ready.update(self.store.cached_replies(list(hashes)))

    def get(self, request_hash: str) -> Any:
        reply = self._ready.pop(request_hash, None)
        return reply if reply is not None else self.cache.get(request_hash)

    def put(self, record: Any) -> None:
        self.cache.put(record)


class TargetIds:
    """The ids of the actions ``llm-label`` codes after validation, read from SQL a page at
    a time: never all in memory. ``len()`` is one count query."""

    PAGE = 2000

    def __init__(
        self,
        store: LLMStore,
        split: str,
        sample: str | None,
        types: list[str] | None,
        left_of_run: int | None = None,
    ):
        self.store = store
        self.split = split
        self.sample = sample
        self.types = types
        self.left_of_run = left_of_run
        """A resumed run: only the targets it has not stored (an anti-join in SQL)."""
        self._len: int | None = None

    def __len__(self) -> int:
        if self._len is None:
            self._len = self.store.count_targets(
                self.split, self.sample, self.types, self.left_of_run
            )
        return self._len

    def __iter__(self) -> Iterator[str]:
        after: tuple[Any, ...] | None = None
        while True:
            page = self.store.target_page(
                self.split, self.sample, self.types, after, self.PAGE, self.left_of_run
            )
            for row in page:
                yield row[0]
            if len(page) < self.PAGE:
                return
            after = tuple(page[-1][1:])

    def every(self, step: int) -> list[str]:
        """Every ``step``-th id in id order (ids are random, so a sample of the targets
        spread over every session), read from an index without visiting the actions."""
        ids = self.store.target_ids_unordered(self.split, self.sample, self.types)
        return list(itertools.islice(ids, 0, None, step))


# -- the labelling job ------------------------------------------------------------------


@dataclass(frozen=True)
class JobOptions:
    model: str
    split: str
    shots: int | None = None
    temperature: float = 0.0
    votes: int = 1
    concurrency: int | None = None
    """None: the server's parallel slots, else 8 stepping down (:meth:`LabelJob.concurrency`)."""
    timeout_s: float = 60.0
    max_retries: int = 5
    min_kappa: float = 0.6
    force: bool = False
    validate_only: bool = False
    target: str = "all"
    price: Price = field(default_factory=Price)
    context: int = DEFAULT_CONTEXT
    lookahead: int = 0
    """Following actions shown after each item (as `annotate code --lookahead`)."""
    show: tuple[str, ...] | None = None
    """``meta`` fields shown beside each action; None: the codebook's ``context_fields``."""
    uncertain_sample: str | None = None
    below: float = 0.8
    batch_discount: float = 0.5
    """Share of the online price a batch API charges (``--batch-discount``)."""
    response_format: FormatMode | None = None
    """Forced with ``--response-format``; otherwise the mode stored for the endpoint + model,
    else ``json_schema``, stepping down on a refusal."""
    by: tuple[str, ...] = ()
    """``--by``: the validation also per group of these action columns (role, condition,
    action_type)."""


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


@dataclass(frozen=True)
class Resumed:
    """A run that never finished, taken up by the same command: ``left`` of its ``total``
    items have no stored result."""

    run_id: int
    left: int
    total: int


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
        store: LLMStore,
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
        if options.concurrency is not None and options.concurrency < 1:
            raise UsageError("--concurrency must be at least 1")
        self._concurrency: tuple[int, bool] | None = None
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
            # an unknown sample fails now, before any request
            store.sample_ids(options.target)
        origins = {s["name"]: s["origin"] or "" for s in store.samples()}
        if not origins.get(options.uncertain_sample or "", UNCERTAIN).startswith(UNCERTAIN):
            raise UsageError(
                f"a sample named '{options.uncertain_sample}' already exists (made by "
                f"{origins[options.uncertain_sample]}, not by an LLM run)",
                hint="choose another --uncertain-sample name",
            )
        show = options.show if options.show is not None else self.codebook.context_fields
        self.sessions = Sessions(store, options.context, options.lookahead, show)
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
        self.resumed: Resumed | None = None
        self.target_types = self._target_types()
        self.heldout_ids = store.heldout_targets(self.split.name, self.target_types)
        self._rest: TargetIds | None = None

    def _target_types(self) -> list[str] | None:
        """The action types the codebook applies to (None: every type in the file)."""
        types = self.store.stored_action_types()
        applicable = [t for t in types if self.codebook.applies(t)]
        return None if len(applicable) == len(types) else applicable

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

    def rest_ids(self) -> TargetIds:
        """The target actions the codebook applies to, minus every item of the split (ids
        read from SQL in pages as they are iterated)."""
        if self._rest is None:
            sample = None if self.options.target == "all" else self.options.target
            self._rest = TargetIds(self.store, self.split.name, sample, self.target_types)
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
        """The exact messages of the first item, and an estimate for the whole run.

        Up to :data:`ESTIMATE_ITEMS` items every item's prompt is measured; above, every
        k-th item's (a systematic sample) and the total is scaled from their mean. Requests
        already answered are counted only when the endpoint's cache holds replies to this
        prompt, by hashing every request, a chunk at a time."""
        rest: Sequence[str] | TargetIds = [] if self.options.validate_only else self.rest_ids()
        n_items = len(self.heldout_ids) + len(rest)
        if not n_items:
            raise UsageError("nothing to label: the split's held-out set and target are empty")
        runner = self._runner(client=None, cache=MemoryCache())
        first = self.sessions.item(self.heldout_ids[0] if self.heldout_ids else next(iter(rest)))
        request = runner.first_request(first)
        prefix_tokens = estimate_message_tokens(self.builder.prefix)
        votes = self.options.votes
        reply_example = canonical_json(
            {
                q.id: answer_to_json(q, Answer(q.codes[0] if q.codes else None, ()))
                for q in self.builder.questions(first)
            }
        )
        if self.config is not None:
            self.store.llm_cache(None)  # brings in replies a full disk kept beside the file
        check_cache = self.config is not None and self.store.prompt_has_replies(
            self.builder.prompt_hash, self.options.model, self.endpoint_host
        )
        step = 1 if check_cache or n_items <= ESTIMATE_ITEMS else -(-n_items // ESTIMATE_ITEMS)
        ids = itertools.chain(self.heldout_ids[::step], rest if step == 1 else rest.every(step))
        measured = measured_tokens = cached = 0
        for chunk in chunked(ids, Sessions.CHUNK):
            items = list(self.sessions.items(chunk))
            hashes: list[list[str]] = []
            if check_cache:
                hashes = [
                    [runner._request(it, self.builder.messages(it), v).hash for v in range(votes)]
                    for it in items
                ]
                found = self.store.cached_hashes([h for hs in hashes for h in hs])
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
            requests, cached, tokens_in, tokens_out, self.options.price.cost(tokens_in, tokens_out)
        )
        return DryRun(
            messages=list(request.messages),
            response_format=response_format(self.fallback.mode, request.schema) or {},
            item_id=first.action.id,
            estimate=estimate,
            validate_items=len(self.heldout_ids),
            label_items=n_items - len(self.heldout_ids),
        )

    # -- running --------------------------------------------------------------------

    def concurrency(self) -> tuple[int, bool]:
        """Requests in flight at once, and whether to step down: ``--concurrency N`` as
        given; else the server's parallel slots where it says (llama.cpp ``/props``,
        ``/slots``); else 8, halved while the server answers one request at a time or times
        out (:mod:`llm_coder.concurrency`). A later phase starts where the last one ended."""
        if self._concurrency is None:
            if self.options.concurrency is not None:
                self._concurrency = (self.options.concurrency, False)
            elif self.config is None:  # a dry run: nothing is sent
                return DEFAULT_CONCURRENCY, False
            else:
                slots = server_slots(self.config.base_url, self.config.api_key)
                self._concurrency = (slots, False) if slots else (DEFAULT_CONCURRENCY, True)
        return self._concurrency

    def _runner(self, client: Any, cache: Any) -> Runner:
        concurrency, adapt = self.concurrency()
        caller = Caller(
            client,
            cache,
            concurrency=concurrency,
            adapt=adapt,
            policy=RetryPolicy(
                max_retries=self.options.max_retries, timeout_s=self.options.timeout_s
            ),
            fallback=self.fallback,
        )
        return Runner(caller, self.builder, self.settings)

    def identity(self) -> dict[str, Any]:
        """What makes two runs the same command: the same requests for the same items."""
        o = self.options
        return {
            "coder": self.coder,
            "model": o.model,
            "endpoint_host": self.endpoint_host,
            "codebook": self.codebook.name,
            "codebook_hash": self.codebook.version_hash,
            "split": self.split.name,
            "prompt_hash": self.builder.prompt_hash,
            "shot_ids": list(self.shot_ids),
            "temperature": o.temperature,
            "votes": o.votes,
            "context": o.context,
            "target": o.target,
            "validate_only": int(o.validate_only),
        }

    def start(self, *, resume: bool = False) -> int:
        """Record the run (before any request is sent). With ``resume``, a run of the same
        command (:meth:`identity`) that never finished (killed or stopped) is taken up
        instead: same run id, and only its items without a stored result are coded."""
        if self.config is None:
            raise UsageError("a dry run cannot start a run")
        self.store.register_codebook(self.loaded)
        o = self.options
        identity = self.identity()
        unfinished = self.store.resumable_llm_run(**identity) if resume else None
        # a run of this coder still 'running' was killed: this one takes over its items
        self.store.mark_llm_runs_interrupted(self.coder, self.codebook.name)
        gate_options = {
            "min_kappa": o.min_kappa,
            "forced": int(o.force),
        }
        if unfinished is not None:
            self.store.resume_llm_run(unfinished, **gate_options)
            self.run_id = unfinished
            self.resumed = self._left(unfinished)
            return unfinished
        self.run_id = self.store.start_llm_run(
            **identity,
            **gate_options,
            settings={
                "concurrency": o.concurrency if o.concurrency is not None else "auto",
                "timeout_s": o.timeout_s,
                "max_retries": o.max_retries,
                "price_in": o.price.per_m_in,
                "price_out": o.price.per_m_out,
                "batch_discount": o.batch_discount,
                "gold_coder": self.split.gold_coder,
                # what each item showed besides --context (its requests hold the text)
                "lookahead": o.lookahead,
                "show": list(self.sessions.show),
            },
        )
        return self.run_id

    def same_finished_run(self) -> int | None:
        """A finished run of this very command (:meth:`identity` and the same gate options)
        that stored every item this one would code: running it again would replay that
        run's cached replies and store a copy of it. None when there is none."""
        o = self.options
        if o.uncertain_sample:  # the run names the sample it makes
            return None
        run = self.store.finished_llm_run(
            "validated" if o.validate_only else "done",
            min_kappa=o.min_kappa,
            forced=int(o.force),
            **self.identity(),
        )
        if run is None or self.store.heldout_targets(self.split.name, self.target_types, run):
            return None
        if not o.validate_only:
            rest = self.rest_ids()
            if len(TargetIds(self.store, rest.split, rest.sample, rest.types, run)):
                return None
        return run

    def _left(self, run_id: int) -> Resumed:
        total = len(self.heldout_ids) + (0 if self.options.validate_only else len(self.rest_ids()))
        done = self.store.llm_item_counts(run_id)[0]
        return Resumed(run_id, total - done, total)

    def phase_ids(self, phase: str) -> Sequence[str]:
        """The items a phase codes: the held-out set or the rest, minus (for a resumed run)
        those the run has stored already."""
        left_of = self.resumed.run_id if self.resumed else None
        if phase == "validate":
            if left_of is None:
                return self.heldout_ids
            return self.store.heldout_targets(self.split.name, self.target_types, left_of)
        rest = self.rest_ids()
        if left_of is None:
            return rest
        return TargetIds(self.store, rest.split, rest.sample, rest.types, left_of)

    def phase_results(self, phase: str) -> list[ItemResult]:
        """Every stored item of a phase of this run (a resumed run's report covers them all)."""
        assert self.run_id is not None
        return [
            ItemResult(action_id, answers, error, confidence, ())
            for action_id, answers, error, confidence in self.store.llm_item_answers(
                self.run_id, phase
            )
        ]

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
        prefetch = PrefetchedCache(self.store, self.store.llm_cache(run_id))
        runner = self._runner(client, prefetch)
        price = self.options.price
        progress = Progress(phase, len(ids))
        results: list[ItemResult] = []
        pending: list[ItemResult] = []
        last_flush = time.monotonic()
        provenance = {**self.provenance(), "phase": phase}
        before = self.store.llm_run(run_id)  # the run's figures before this phase
        # a resumed run's
        stored, stored_valid = self.store.llm_item_counts(run_id, phase)

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
        items = self._prefetched(self.sessions.items(ids), runner, prefetch)
        try:
            await runner.run(items, on_result, concurrency=self.concurrency()[0])
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
            limit = runner.caller.limit
            self._concurrency = (limit.limit, limit.adapt)  # the next phase starts there
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
            response_format=self.fallback.mode,
            format_changes=tuple(self.fallback.changes[changes_before:]),
            timeouts=stats.timeouts,
            concurrency=runner.caller.limit.limit,
            concurrency_changes=tuple(runner.caller.limit.changes),
        )

    def _prefetched(
        self, items: Iterator[Item], runner: Runner, cache: PrefetchedCache
    ) -> Iterator[Item]:
        """The items, the cached replies to each chunk's requests read in one query first
        (a resumed run gets what it already paid for without a query per request)."""
        votes = self.options.votes
        for chunk in chunked(items, Sessions.CHUNK):
            cache.prefetch(
                runner._request(item, self.builder.messages(item), v).hash
                for item in chunk
                for v in range(votes)
            )
            yield from chunk

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
        self.store.update_llm_run(
            self.run_id, status=status, finished_at=self.store.timestamp(), **fields
        )

    def make_uncertain_sample(self, results: Sequence[ItemResult]) -> tuple[str, ...]:
        """Items whose vote share is below ``--below`` become a new sample for humans."""
        name = self.options.uncertain_sample
        if not name:
            return ()
        if self.resumed is not None:  # the items stored before the run was stopped too
            results = self.phase_results("label")
        ids = tuple(
            r.action_id
            for r in results
            if r.failed is None and (r.confidence is None or r.confidence < self.options.below)
        )
        existing = {s["name"] for s in self.store.samples()}
        if ids and (name not in existing or self.store.sample_ids(name) != list(ids)):
            # a re-run with other answers remakes the sample an earlier run made
            self.store.create_sample(
                name, ids, origin=f"{UNCERTAIN}:{self.run_id}", replace=True
            )
        return ids
