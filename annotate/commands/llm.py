"""`annotate split`, `annotate llm-label`: let a validated LLM code the rest."""

from __future__ import annotations

import json
import os
from contextlib import suppress
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichProgress
from rich.table import Table

from annotate.codebook import find_codebook
from annotate.commands.common import DEFAULT_DB_PATH, DbOption, console, err_console, open_store
from annotate.errors import StoreError, UsageError
from annotate.render import cell
from llm_coder.client import config_from_env
from llm_coder.cost import Price, format_cost
from llm_coder.prompt import DEFAULT_CONTEXT
from llm_coder.workflow import (
    GateFailed,
    JobOptions,
    LabelJob,
    PhaseResult,
    Progress,
    make_split,
)

if TYPE_CHECKING:
    from llm_coder.validate import ValidationReport

# -- split ------------------------------------------------------------------------------


def split_command(
    codebook: Annotated[str, typer.Option(help="Codebook name or YAML file.")],
    shots: Annotated[int, typer.Option(help="How many gold items become few-shot examples.")] = 8,
    seed: Annotated[int, typer.Option(help="Random seed: the same seed gives the same split.")] = 7,
    gold: Annotated[
        str, typer.Option(help="Coder whose labels are the gold standard (e.g. an expert's).")
    ] = "gold",
    sample: Annotated[
        str | None, typer.Option(help="Only gold items of this sample (default: all).")
    ] = None,
    name: Annotated[
        str | None, typer.Option(help="Store the split under this name (default: the codebook's).")
    ] = None,
    replace: Annotated[bool, typer.Option(help="Overwrite a split of the same name.")] = False,
    db: DbOption = DEFAULT_DB_PATH,
) -> None:
    """Split gold items into few-shot examples and a held-out validation set.

    The few-shot set covers as many distinct labels as --shots allows (the most frequent
    labels first, then in proportion to frequency); every other gold item is held out to
    validate the LLM on. The same seed gives the same split.
    """
    loaded = find_codebook(codebook)
    with open_store(db) as store:
        result = make_split(
            store,
            loaded,
            shots=shots,
            seed=seed,
            gold=gold,
            sample=sample,
            name=name,
            replace=replace,
        )
    covered = ", ".join(f"{label} {n}" for label, n in sorted(result.shot_labels.items()))
    console.print(
        f"split '{result.name}': {len(result.shots)} shots covering "
        f"{len(result.shot_labels)} of {result.labels_total} labels ({covered}); "
        f"{len(result.heldout)} held out for validation (gold: '{gold}', seed {seed}).",
        markup=False,
    )


# -- llm-label --------------------------------------------------------------------------


def _progress_bar() -> RichProgress:
    return RichProgress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[tokens]}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=False,
    )


def _run_phase(job: LabelJob, phase: str, ids: list[str]) -> PhaseResult:
    price = job.options.price
    with _progress_bar() as bar:
        task = bar.add_task(phase, total=len(ids), tokens="")

        def update(p: Progress) -> None:
            parts = [f"{p.tokens_in:,}+{p.tokens_out:,} tokens"]
            if price.known:
                parts.append(format_cost(p.cost))
            parts += [f"{n} {what}" for n, what in _counts(p) if n]
            bar.update(task, completed=p.done, tokens=", ".join(parts))

        return job.run_phase(phase, ids, update)


def _counts(p: Progress) -> list[tuple[int, str]]:
    return [(p.cached, "cached"), (p.invalid, "invalid"), (p.failed, "failed")]


def _phase_line(job: LabelJob, result: PhaseResult) -> str:
    money = f", cost {format_cost(result.cost)}" if job.options.price.known else ""
    changes = "".join(f"\n  response_format {change}" for change in result.format_changes)
    return (
        f"{result.phase}: {result.items} items ({result.valid} valid, {result.invalid} invalid, "
        f"{result.failed} failed); {result.sent} requests sent, {result.cached} from cache, "
        f"{result.retries} retries; {result.tokens_in:,} tokens in, {result.tokens_out:,} out"
        f"{money}; {result.seconds:.1f}s; response_format {result.response_format}{changes}"
    )


def _render_report(report: ValidationReport, min_kappa: float) -> None:
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


def llm_label_command(
    codebook: Annotated[str, typer.Option(help="Codebook name or YAML file.")],
    model: Annotated[
        str, typer.Option(help="Model name at the endpoint; the LLM codes as 'llm:MODEL'.")
    ],
    shots: Annotated[
        int | None, typer.Option(help="Use the split's first N shots (default: all of them).")
    ] = None,
    split: Annotated[
        str | None, typer.Option(help="Split made by `annotate split` (default: the codebook's).")
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            help="OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 "
            "(default: OPENAI_BASE_URL). The key is read from OPENAI_API_KEY.",
        ),
    ] = None,
    target: Annotated[
        str, typer.Option(help="What to label after validation: a sample name, or 'all'.")
    ] = "all",
    min_kappa: Annotated[
        float, typer.Option(help="Label the rest only if Fleiss' kappa vs gold reaches this.")
    ] = 0.6,
    validate_only: Annotated[
        bool, typer.Option("--validate-only", help="Stop after the validation report.")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Label the rest even below --min-kappa (recorded).")
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Show one item's exact messages and an estimate; no network."
        ),
    ] = False,
    context: Annotated[
        int,
        typer.Option(help="Preceding actions shown with each item (as `annotate code --context`)."),
    ] = DEFAULT_CONTEXT,
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 0.0,
    votes: Annotated[
        int, typer.Option(help="Ask K times; the majority wins, its share is the confidence.")
    ] = 1,
    uncertain_sample: Annotated[
        str | None,
        typer.Option(help="Put labelled items with confidence below --below in this new sample."),
    ] = None,
    below: Annotated[
        float, typer.Option(help="Confidence threshold for --uncertain-sample.")
    ] = 0.8,
    response_format: Annotated[
        str | None,
        typer.Option(
            "--response-format",
            metavar="MODE",
            help="Force one of json_schema, json_object_schema, json_object, none (default: "
            "the mode this endpoint and model last answered in, else json_schema, stepping "
            "down when the endpoint refuses one).",
        ),
    ] = None,
    concurrency: Annotated[int, typer.Option(help="Requests in flight at once.")] = 8,
    timeout: Annotated[float, typer.Option(help="Seconds before one request is retried.")] = 60.0,
    max_retries: Annotated[
        int, typer.Option(help="Retries per request on 429, 5xx, timeouts (with backoff).")
    ] = 5,
    price_in: Annotated[float, typer.Option(help="US$ per million prompt tokens.")] = 0.0,
    price_out: Annotated[float, typer.Option(help="US$ per million completion tokens.")] = 0.0,
    db: DbOption = DEFAULT_DB_PATH,
) -> None:
    """Validate an LLM coder on the held-out gold items, then let it label the rest.

    Every request and reply is kept in the database: running the same command again sends
    nothing already answered, and a run that was stopped resumes where it was.
    """
    if uncertain_sample and votes < 2:
        raise UsageError(
            "--uncertain-sample needs --votes 2 or more (confidence is the vote share)"
        )
    if context < 0:
        raise UsageError("--context must be 0 or more")
    if not 0 < below <= 1:
        raise UsageError("--below must be a share between 0 and 1")
    config = None if dry_run else config_from_env(model, base_url, timeout_s=timeout)
    loaded = find_codebook(codebook)
    price = Price(price_in, price_out)
    options = JobOptions(
        model=model,
        split=split or loaded.codebook.name,
        shots=shots,
        temperature=temperature,
        votes=votes,
        concurrency=concurrency,
        timeout_s=timeout,
        max_retries=max_retries,
        min_kappa=min_kappa,
        force=force,
        validate_only=validate_only,
        target=target,
        price=price,
        context=context,
        uncertain_sample=uncertain_sample,
        below=below,
        response_format=response_format,  # type: ignore[arg-type]  # checked by LabelJob
    )
    with open_store(db) as store:
        dry_url = base_url or os.environ.get("OPENAI_BASE_URL")
        if dry_run and dry_url:
            config = _dry_config(model, dry_url, timeout)
        job = LabelJob(store, loaded, options, config)
        if dry_run:
            _render_dry_run(job, price)
            return
        if votes > 1 and temperature == 0:
            err_console.print(
                "note: --votes at temperature 0 will mostly agree with themselves; "
                "consider --temperature 0.7",
                markup=False,
            )
        run_id = job.start()
        console.print(
            f"run {run_id}: {job.coder} at {job.endpoint_host}, split '{job.split.name}' "
            f"({len(job.shot_ids)} shots), prompt {job.builder.prompt_hash[:12]}, "
            f"codebook {loaded.codebook.name} {loaded.codebook.version_hash}, "
            f"response_format {job.fallback.mode}"
            + (" (forced)" if job.fallback.forced else ""),
            markup=False,
        )
        try:
            validated = _run_phase(job, "validate", job.heldout_ids)
            console.print(_phase_line(job, validated), markup=False, soft_wrap=True)
            if validated.failed:
                job.finish("incomplete")
                raise UsageError(
                    f"{validated.failed} held-out items could not be coded "
                    f"({validated.failures[0]})",
                    hint="run the same command again: answered items are not sent twice",
                )
            from llm_coder.validate import validation_report  # numpy/pandas: load when needed

            report = validation_report(store, job, validated.results)
            _render_report(report, min_kappa)
            passed = report.passes(min_kappa)
            gate = "pass" if passed else ("forced" if force else "fail")
            job.store.update_llm_run(run_id, gate=gate, kappa=report.kappa, report=report.to_dict())
            if validate_only:
                job.finish("validated")
                console.print("--validate-only: the rest is not labelled.", markup=False)
                return
            if not passed and not force:
                job.finish("gate_failed")
                raise GateFailed(
                    f"Fleiss' kappa {cell(report.kappa)} is below --min-kappa {min_kappa}: "
                    "the rest is not labelled",
                    hint="improve the codebook or the shots, or pass --force (it is recorded)",
                )
            if not passed:
                console.print(
                    f"--force: labelling the rest although kappa {cell(report.kappa)} < "
                    f"{min_kappa} (recorded in run {run_id}).",
                    markup=False,
                )
            rest = job.rest_ids()
            labelled = _run_phase(job, "label", rest)
            console.print(_phase_line(job, labelled), markup=False, soft_wrap=True)
            uncertain = job.make_uncertain_sample(labelled.results)
            if uncertain_sample:
                console.print(
                    f"sample '{uncertain_sample}': {len(uncertain)} items with confidence below "
                    f"{below} for human coding."
                    if uncertain
                    else f"no item has confidence below {below}: no sample made.",
                    markup=False,
                )
            job.finish("done" if not labelled.failed else "incomplete")
        except KeyboardInterrupt:
            job.finish("interrupted")
            raise
        except Exception:
            with suppress(StoreError):  # a full disk: the first error is the one to tell
                job.finish("failed", only_if_running=True)
            raise
        _render_summary(job, validated, labelled, price)
        if labelled.failed:
            raise UsageError(
                f"{labelled.failed} items could not be coded ({labelled.failures[0]})",
                hint="run the same command again: answered items are not sent twice",
            )


def _dry_config(model: str, base_url: str, timeout: float):
    """Endpoint settings without a key: only used to look requests up in the cache."""
    from llm_coder.client import LLMConfig

    return LLMConfig(model=model, base_url=base_url.rstrip("/"), api_key="", timeout_s=timeout)


def _render_dry_run(job: LabelJob, price: Price) -> None:
    dry = job.dry_run()
    console.print(f"Messages for item {dry.item_id} (the prefix is shared by every request):")
    for m in dry.messages:
        console.rule(m["role"], style="dim")
        console.print(m["content"], markup=False, highlight=False, soft_wrap=True)
    console.rule("response_format", style="dim")
    console.print(json.dumps(dry.response_format), markup=False, soft_wrap=True)
    e = dry.estimate
    money = f", about {format_cost(e.cost)}" if price.known else ""
    cached = f" ({e.cached} already cached)" if e.cached else ""
    console.print(
        f"Estimate: {dry.validate_items} held-out + {dry.label_items} to label = "
        f"{e.requests} requests{cached}, about {e.tokens_in:,} tokens in and "
        f"{e.tokens_out:,} out{money}. Nothing was sent.",
        markup=False,
    )


def _render_summary(
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


def register(app: typer.Typer) -> None:
    app.command("split")(split_command)
    app.command("llm-label")(llm_label_command)
