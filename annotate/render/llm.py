"""`annotate llm-label` rendered: the progress bar, a phase's line, the validation report,
the dry run and the closing summary; together, the workflow's reporter on the console."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress

from annotate.render.console import console, err_console
from annotate.render.tables import Col, cell, fit_rows
from llm_coder.cost import Price, format_cost

if TYPE_CHECKING:
    from llm_coder.job import LabelJob
    from llm_coder.phases import PhaseResult, Progress
    from llm_coder.validate import QuestionReport, ValidationReport


def progress_bar() -> RichProgress:
    return RichProgress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[tokens]}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=False,
    )


def phase_counts(p: Progress) -> list[tuple[int, str]]:
    return [(p.cached, "cached"), (p.invalid, "invalid"), (p.failed, "failed")]


def run_phase(job: LabelJob, phase: str, ids: Sequence[str]) -> PhaseResult:
    """Run one phase of ``job`` under a progress bar on stderr (tokens, cost, counts)."""
    price = job.options.price
    with progress_bar() as bar:
        task = bar.add_task(phase, total=len(ids), tokens="")

        def update(p: Progress) -> None:
            parts = [f"{p.tokens_in:,}+{p.tokens_out:,} tokens"]
            if price.known:
                parts.append(format_cost(p.cost))
            parts += [f"{n} {what}" for n, what in phase_counts(p) if n]
            bar.update(task, completed=p.done, tokens=", ".join(parts))

        return job.run_phase(phase, ids, update)


def run_line(job: LabelJob, run_id: int) -> str:
    """What a run is: coder, endpoint, split, prompt, codebook and response format."""
    codebook = job.codebook
    return (
        f"run {run_id}: {job.coder} at {job.endpoint_host}, split '{job.split.name}' "
        f"({len(job.shot_ids)} shots), prompt {job.builder.prompt_hash[:12]}, "
        f"codebook {codebook.name} {codebook.version_hash}, "
        f"response_format {job.fallback.mode}" + (" (forced)" if job.fallback.forced else "")
    )


def phase_line(job: LabelJob, result: PhaseResult) -> str:
    money = f", cost {format_cost(result.cost)}" if job.options.price.known else ""
    changes = "".join(f"\n  response_format {change}" for change in result.format_changes)
    changes += "".join(f"\n  concurrency {change}" for change in result.concurrency_changes)
    timed_out = (
        f" ({result.timeouts} requests timed out after --timeout {job.options.timeout_s:g} s: "
        "the server answered more slowly than that; see --concurrency)"
        if result.timeouts
        else ""
    )
    return (
        f"{result.phase}: {result.items} items ({result.valid} valid, {result.invalid} invalid, "
        f"{result.failed} failed); {result.sent} requests sent, {result.cached} from cache, "
        f"{result.retries} retries{timed_out}; concurrency {result.concurrency}; "
        f"{result.tokens_in:,} tokens in, "
        f"{result.tokens_out:,} out"
        f"{money}; {result.seconds:.1f}s; response_format {result.response_format}{changes}"
    )


def validation_tables(q: QuestionReport) -> list[tuple[str, list[dict[str, Any]], list[Col]]]:
    """One question's validation as (title, rows, columns): the measures, each label's
    precision and recall, and the confusion matrix (rows gold, columns LLM)."""
    humans = ", ".join(q.humans) or "none"
    summary = [
        {"measure": name, "value": value, "ci": _ci(ci), "n": n}
        for name, value, ci, n in (
            ("Fleiss' kappa, LLM + gold", q.fleiss, q.fleiss_ci, q.n_items),
            *(
                [
                    (
                        "Fleiss' kappa, valid replies only (as agree)",
                        q.fleiss_valid,
                        q.fleiss_valid_ci,
                        q.n_valid,
                    )
                ]
                if q.n_invalid
                else []
            ),
            ("Cohen's kappa, LLM vs gold", q.cohen, q.cohen_ci, q.n_items),
            ("accuracy", q.accuracy, None, q.n_items),
            (f"Fleiss' kappa, humans ({humans})", q.fleiss_humans, None, q.n_items_humans),
            ("Fleiss' kappa, humans + LLM", q.fleiss_humans_llm, None, q.n_items_humans),
        )
    ]
    per_label = [
        {"label": s.label, "precision": s.precision, "recall": s.recall, "f1": s.f1,
         "support": s.support, "predicted": s.predicted}
        for s in q.per_label
    ]  # fmt: skip
    numbers = [str(i + 1) for i in range(len(q.confusion_labels))]
    confusion = [
        {"gold": f"{i + 1} {label}"}
        | {n: str(c) if c else "." for n, c in zip(numbers, counts, strict=True)}
        for i, (label, counts) in enumerate(zip(q.confusion_labels, q.confusion, strict=True))
    ]
    return [
        (f"Question {q.question}", summary,
         [Col("measure", wrap=True), Col("value"), Col("ci", "95% CI"), Col("n")]),
        (f"Per label ({q.question})", per_label,
         [Col("label"), Col("precision"), Col("recall"), Col("f1", "F1"),
          Col("support", "gold n"), Col("predicted", "LLM n")]),
        (f"Confusion ({q.question}): rows gold, columns LLM (numbered as the rows)", confusion,
         [Col("gold"), *(Col(n, justify="right") for n in numbers)]),
    ]  # fmt: skip


def _ci(ci: tuple[float | None, float | None] | None) -> str:
    """As `agree` prints an interval ("0.501 to 0.661")."""
    return f"{cell(ci[0])} to {cell(ci[1])}" if ci and ci[0] is not None else "-"


def render_validation(report: ValidationReport, min_kappa: float) -> None:
    console.print(
        f"Validation on {report.n_items} held-out items: LLM '{report.llm_coder}' vs gold "
        f"'{report.gold_coder}'",
        markup=False,
        style="bold",
    )
    for q in report.questions:
        for i, (title, rows, columns) in enumerate(validation_tables(q)):
            console.print(fit_rows(rows, columns, console.width, title))
            if i == 0:
                for note in q.notes:
                    console.print(f"  note: {note}", markup=False)
    if report.by:
        render_cells(report)
    verdict = "passes" if report.passes(min_kappa) else "is below"
    unanimous = report.unanimous_questions
    console.print(
        f"Gate: Fleiss' kappa {cell(report.kappa)} {verdict} --min-kappa {min_kappa}"
        + (
            f" ({', '.join(unanimous)} left out: LLM and gold gave one code to every item, "
            "so kappa is undefined while agreement is perfect)."
            if unanimous
            else "."
        ),
        markup=False,
    )


def render_cells(report: ValidationReport) -> None:
    """Accuracy and kappa per cell of ``--by``, one table per question."""
    from llm_coder.validate import MIN_CELL  # loaded already: the report was built with it

    by = " x ".join(report.by)
    for question in dict.fromkeys(c.question for c in report.cells):
        rows = [
            {**dict(zip(report.by, c.group, strict=True)), "n": c.n_items,
             "accuracy": c.accuracy, "kappa": c.fleiss, "note": c.note}
            for c in report.cells if c.question == question
        ]  # fmt: skip
        columns = [*(Col(b) for b in report.by), Col("n"), Col("accuracy"),
                   Col("kappa", "Fleiss' kappa"), Col("note", wrap=True)]  # fmt: skip
        title = f"Question {question} by {by} (LLM vs gold; no figure below {MIN_CELL} items)"
        console.print(fit_rows(rows, columns, console.width, title))


def render_dry_run(job: LabelJob, price: Price, batch_discount: float | None = None) -> None:
    """``batch_discount``: price the estimate at the batch rate (``--dry-run --batch``)."""
    if batch_discount is not None:
        price = Price(price.per_m_in * batch_discount, price.per_m_out * batch_discount)
    dry = job.dry_run()
    console.print(f"Messages for item {dry.item_id} (the prefix is shared by every request):")
    for m in dry.messages:
        console.rule(m["role"], style="dim")
        console.print(m["content"], markup=False, highlight=False, soft_wrap=True)
    console.rule("response_format", style="dim")
    console.print(json.dumps(dry.response_format), markup=False, soft_wrap=True)
    e = dry.estimate
    money = f", about {format_cost(price.cost(e.tokens_in, e.tokens_out))}" if price.known else ""
    if batch_discount is not None and price.known:
        money += f" at the batch rate ({batch_discount:g} of --price-in/--price-out)"
    cached = f" ({e.cached} already cached)" if e.cached else ""
    console.print(
        f"Estimate: {dry.validate_items} held-out + {dry.label_items} to label = "
        f"{e.requests} requests{cached}, about {e.tokens_in:,} tokens in and "
        f"{e.tokens_out:,} out{money}. Nothing was sent.",
        markup=False,
    )


def render_summary(
    job: LabelJob, validated: PhaseResult, labelled: PhaseResult, price: Price
) -> None:
    run = job.store.llm_run(job.run_id or 0)
    money = f", cost {format_cost(run['cost'] or 0.0)}" if price.known else ""
    changes = "; ".join(job.fallback.changes)
    console.print(
        f"Done: run {run['id']} ({run['status']}), {job.coder} labelled "
        f"{validated.valid + labelled.valid} items ({validated.valid} held-out, "
        f"{labelled.valid} rest), {validated.invalid + labelled.invalid} invalid. "
        f"{run['sent']} requests sent, {run['cached']} from cache; {run['tokens_in']:,} tokens "
        f"in, {run['tokens_out']:,} out{money}. response_format: {run['response_format']}"
        + (f" ({changes})" if changes else "")
        + ".",
        markup=False,
    )


class ConsoleReporter:
    """The workflow's :class:`~llm_coder.workflow.Reporter` on the console."""

    def __init__(self, price: Price):
        self.price = price

    def note(self, text: str) -> None:
        console.print(text, markup=False, soft_wrap=True)

    def validation(self, report: ValidationReport, min_kappa: float) -> None:
        render_validation(report, min_kappa)

    def run_phase(self, job: LabelJob, phase: str, ids: Sequence[str]) -> PhaseResult:
        return run_phase(job, phase, ids)

    def started(self, job: LabelJob, run_id: int) -> None:
        console.print(run_line(job, run_id), markup=False)

    def phase_done(self, job: LabelJob, result: PhaseResult) -> None:
        console.print(phase_line(job, result), markup=False, soft_wrap=True)

    def summary(self, job: LabelJob, validated: PhaseResult, labelled: PhaseResult) -> None:
        render_summary(job, validated, labelled, self.price)
