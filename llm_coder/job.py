"""One `annotate llm-label` invocation as a library object: the split and prompt loaded once,
the run recorded, what each phase codes, resuming a stopped run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from annotate.codebook import LoadedCodebook
from annotate.coders import LLM_PREFIX
from annotate.errors import UsageError
from llm_coder.calls import Caller, CallStats, FormatFallback, RetryPolicy
from llm_coder.client import LLMConfig
from llm_coder.concurrency import DEFAULT_CONCURRENCY, server_slots
from llm_coder.cost import Price
from llm_coder.dry_run import DryRun, dry_run
from llm_coder.items import Sessions, TargetIds
from llm_coder.phases import OnProgress, PhaseResult, run_phase
from llm_coder.prompt import DEFAULT_CONTEXT, Shot
from llm_coder.runner import ItemResult, PromptBuilder, Runner, Settings
from llm_coder.schema import FORMAT_MODES, FormatMode

if TYPE_CHECKING:
    from llm_coder.ports import LLMStore


def llm_coder_name(model: str) -> str:
    return f"{LLM_PREFIX}{model}"


UNCERTAIN = "llm-uncertain"
"""Origin of the samples ``--uncertain-sample`` makes (followed by the run id)."""


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


@dataclass(frozen=True)
class Resumed:
    """A run that never finished, taken up by the same command: ``left`` of its ``total``
    items have no stored result."""

    run_id: int
    left: int
    total: int


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

    def remember_format(self, stats: CallStats) -> None:
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
        """The exact messages of the first item, and an estimate for the whole run."""
        return dry_run(self)

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
        return run_phase(self, phase, ids, on_progress)

    def continue_at(self, concurrency: int, adapt: bool) -> None:
        """The concurrency the next phase starts at (where the last one ended)."""
        self._concurrency = (concurrency, adapt)

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
            self.store.create_sample(name, ids, origin=f"{UNCERTAIN}:{self.run_id}", replace=True)
        return ids
