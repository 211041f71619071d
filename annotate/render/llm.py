"""`annotate llm-label` rendered: the progress bar, a phase's line, the validation report,
the dry run and the closing summary."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress
from rich.table import Table

from annotate.render.console import console, err_console
from annotate.render.rows import cell
from llm_coder.cost import Price, format_cost

if TYPE_CHECKING:
    from llm_coder.validate import ValidationReport
    from llm_coder.workflow import LabelJob, PhaseResult, Progress


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


def phase_line(job: LabelJob, result: PhaseResult) -> str:
    money = f", cost {format_cost(result.cost)}" if job.options.price.known else ""
    changes = "".join(f"\n  response_format {change}" for change in result.format_changes)
    return (
        f"{result.phase}: {result.items} items ({result.valid} valid, {result.invalid} invalid, "
        f"{result.failed} failed); {result.sent} requests sent, {result.cached} from cache, "
        f"{result.retries} retries; {result.tokens_in:,} tokens in, {result.tokens_out:,} out"
        f"{money}; {result.seconds:.1f}s; response_format {result.response_format}{changes}"
    )


def render_validation(report: ValidationReport, min_kappa: float) -> None:
    console.print(
        f"Validation on {report.n_items} held-out items: LLM '{report.llm_coder}' vs gold "
        f"'{report.gold_coder}'",
        markup=False,
        style="bold",
    )
    for q in report.questions:
        summary = Table(title=f"Question {q.question}", title_justify="left")
        for col in ("measure", "value", "95% CI", "n"):
            summary.add_column(col)

        humans = ", ".join(q.humans) or "none"
        for name, value, ci, n in (
            ("Fleiss' kappa, LLM + gold", q.fleiss, q.fleiss_ci, q.n_items),
            ("Cohen's kappa, LLM vs gold", q.cohen, q.cohen_ci, q.n_items),
            ("accuracy", q.accuracy, None, q.n_items),
            (f"Fleiss' kappa, humans ({humans})", q.fleiss_humans, None, q.n_items_humans),
            ("Fleiss' kappa, humans + LLM", q.fleiss_humans_llm, None, q.n_items_humans),
        ):
            ci_text = f"{cell(ci[0])} – {cell(ci[1])}" if ci and ci[0] is not None else "-"
            summary.add_row(name, cell(value), ci_text, str(n))
        console.print(summary)
        if q.notes:
            for note in q.notes:
                console.print(f"  note: {note}", markup=False)
        labels = Table(title=f"Per label ({q.question})", title_justify="left")
        for col in ("label", "precision", "recall", "F1", "gold n", "LLM n"):
            labels.add_column(col)
        for s in q.per_label:
            labels.add_row(
                s.label,
                cell(s.precision),
                cell(s.recall),
                cell(s.f1),
                str(s.support),
                str(s.predicted),
            )
        console.print(labels)
        conf = Table(
            title=f"Confusion ({q.question}): rows gold, columns LLM (numbered as the rows)",
            title_justify="left",
        )
        conf.add_column("gold")
        for i in range(len(q.confusion_labels)):
            conf.add_column(str(i + 1), justify="right")
        for i, (label, counts) in enumerate(zip(q.confusion_labels, q.confusion, strict=True)):
            conf.add_row(f"{i + 1} {label}", *(str(c) if c else "." for c in counts))
        console.print(conf)
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
