"""`annotate llm-label` as one sequence: validate on the held-out gold items, gate, label the
rest. The online path (:func:`label_online`) and the batch cycle (:func:`label_batch`, its
file kind serving `--batch-export` + `llm-import`) step through the same sequence and the same
:func:`gate`; what each step shows goes to a :class:`Reporter` the command renders (the
library prints nothing)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Protocol

from annotate.errors import AnnotateError, StoreError, UsageError

if TYPE_CHECKING:
    from llm_coder.batch_cycle import BatchCycle, Collected
    from llm_coder.job import LabelJob
    from llm_coder.phases import PhaseResult
    from llm_coder.runner import ItemResult
    from llm_coder.validate import ValidationReport


class GateFailed(AnnotateError):
    """Agreement on the held-out set is below --min-kappa: the rest is not labelled."""


class Reporter(Protocol):
    """What the sequence shows as it goes, in order."""

    def note(self, text: str) -> None:
        """One line for the user."""
        ...

    def validation(self, report: ValidationReport, min_kappa: float) -> None: ...

    def run_phase(self, job: LabelJob, phase: str, ids: Sequence[str]) -> PhaseResult:
        """Run one phase of ``job`` (:meth:`LabelJob.run_phase`), showing its progress."""
        ...

    def started(self, job: LabelJob, run_id: int) -> None: ...

    def phase_done(self, job: LabelJob, result: PhaseResult) -> None: ...

    def summary(self, job: LabelJob, validated: PhaseResult, labelled: PhaseResult) -> None: ...


class BatchReporter(Reporter, Protocol):
    """What one invocation of the batch cycle shows besides."""

    def collected(self, run: dict[str, Any], collected: Collected) -> None: ...

    def waiting(self, batches: list[dict[str, Any]]) -> None: ...

    def submitted(self, phase: str, batches: list[dict[str, Any]]) -> None: ...

    def done(self) -> None: ...


def figure(value: float | None) -> str:
    """A gate figure as the tables print it: three places, ``-`` when there is none."""
    return "-" if value is None or math.isnan(value) else f"{value:.3f}"


def gate(job: LabelJob, results: Sequence[ItemResult], reporter: Reporter) -> bool:
    """Report on the held-out items, record the gate; True when the rest is to be labelled.

    Raises :class:`GateFailed` below ``--min-kappa`` (unless ``--force``)."""
    from llm_coder.validate import validation_report  # numpy/pandas: load when needed

    o, run_id = job.options, job.run_id
    assert run_id is not None
    report = validation_report(job.store, job, results)
    reporter.validation(report, o.min_kappa)
    passed = report.passes(o.min_kappa)
    verdict = "pass" if passed else ("forced" if o.force else "fail")
    job.store.update_llm_run(run_id, gate=verdict, kappa=report.kappa, report=report.to_dict())
    if o.validate_only:
        job.finish("validated")
        reporter.note("--validate-only: the rest is not labelled.")
        return False
    if not passed and not o.force:
        job.finish("gate_failed")
        raise GateFailed(
            f"Fleiss' kappa {figure(report.kappa)} is below --min-kappa {o.min_kappa}: "
            "the rest is not labelled",
            hint="improve the codebook or the shots, or pass --force (it is recorded)",
        )
    if not passed:
        reporter.note(
            f"--force: labelling the rest although kappa {figure(report.kappa)} < "
            f"{o.min_kappa} (recorded in run {run_id})."
        )
    return True


def same_as_before(job: LabelJob, reporter: Reporter) -> bool:
    """An identical re-run (the same command, every item answered by a finished run, the
    same gate figure): show that run's validation and store nothing, as `agree` does."""
    from llm_coder.validate import validation_report

    same = job.same_finished_run()
    if same is None:
        return False
    stored = job.store.llm_run(same)
    job.run_id = same
    report = validation_report(job.store, job, job.phase_results("validate"))
    if report.kappa != stored["kappa"]:  # gold or the human coders changed since
        job.run_id = None
        return False
    reporter.validation(report, job.options.min_kappa)
    reporter.note(
        f"same as run {same} ({stored['status']}, gate {stored['gate']}): the same command, "
        "and every item was answered in that run; nothing sent, nothing new stored."
    )
    return True


def label_online(job: LabelJob, reporter: Reporter) -> None:
    """Validate, gate and label the rest in this process, every request through the run's
    cache: a stopped run of the same command resumes, an identical finished one is shown."""
    if same_as_before(job, reporter):
        return
    run_id = job.start(resume=True)
    if job.resumed is not None:
        r = job.resumed
        reporter.note(
            f"resuming run {run_id}: {r.left:,} of {r.total:,} items left "
            "(the same command was stopped before it finished)."
        )
    reporter.started(job, run_id)
    try:
        validated = reporter.run_phase(job, "validate", job.phase_ids("validate"))
        reporter.phase_done(job, validated)
        if validated.failed:
            job.finish("incomplete")
            raise UsageError(
                f"{validated.failed} held-out items could not be coded "
                f"({validated.failures[0]})",
                hint="run the same command again: answered items are not sent twice",
            )
        held_out = job.phase_results("validate") if job.resumed else validated.results
        if not gate(job, held_out, reporter):
            return
        labelled = reporter.run_phase(job, "label", job.phase_ids("label"))
        reporter.phase_done(job, labelled)
        uncertain = job.make_uncertain_sample(labelled.results)
        o = job.options
        if o.uncertain_sample:
            reporter.note(
                f"sample '{o.uncertain_sample}': {len(uncertain)} items with confidence below "
                f"{o.below} for human coding."
                if uncertain
                else f"no item has confidence below {o.below}: no sample made."
            )
        job.finish("done" if not labelled.failed else "incomplete")
    except KeyboardInterrupt:
        job.finish("interrupted")
        raise
    except Exception:
        with suppress(StoreError):  # a full disk: the first error is the one to tell
            job.finish("failed", only_if_running=True)
        raise
    reporter.summary(job, validated, labelled)
    if labelled.failed:
        raise UsageError(
            f"{labelled.failed} items could not be coded ({labelled.failures[0]})",
            hint="run the same command again: answered items are not sent twice",
        )


def label_batch(cycle: BatchCycle, reporter: BatchReporter) -> None:
    """One step of the same sequence through batches: bring the open batches forward; with
    none open, hand over the held-out items, or gate once they are all answered and hand
    over the rest, or finish the run once the rest is answered too."""
    job = cycle.job
    run = cycle.run
    advanced = cycle.advance()
    for c in advanced.collected:
        reporter.collected(run, c)
    if advanced.open:
        reporter.waiting(advanced.open)
        return
    validated = cycle.phase_state("validate", job.heldout_ids, keep=True)
    if not validated.complete:
        reporter.submitted("validate", cycle.submit("validate", job.heldout_ids))
        return
    run = cycle.run
    reporter.note(f"validate: {validated.items} held-out items answered")
    if run["gate"] is None:
        if not gate(job, validated.results, reporter):
            return
    else:
        reporter.note(
            f"gate: {run['gate']} (Fleiss' kappa {figure(run['kappa'])}, decided when the "
            "held-out batch was collected)"
        )
    rest = job.rest_ids()
    keep = job.options.uncertain_sample is not None
    labelled = cycle.phase_state("label", rest, keep=keep)
    if not labelled.complete:
        reporter.submitted("label", cycle.submit("label", rest))
        return
    if keep:
        job.make_uncertain_sample(labelled.results)
    job.finish("done")
    reporter.done()
