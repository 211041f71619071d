"""`annotate split`, `annotate llm-label`: let a validated LLM code the rest."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
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
    from llm_coder.runner import ItemResult
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


def gate(job: LabelJob, results: Sequence[ItemResult]) -> bool:
    """Report on the held-out items, record the gate; True when the rest is to be labelled.

    Raises :class:`GateFailed` below ``--min-kappa`` (unless ``--force``)."""
    from llm_coder.validate import validation_report  # numpy/pandas: load when needed

    o, run_id = job.options, job.run_id
    assert run_id is not None
    report = validation_report(job.store, job, results)
    _render_report(report, o.min_kappa)
    passed = report.passes(o.min_kappa)
    verdict = "pass" if passed else ("forced" if o.force else "fail")
    job.store.update_llm_run(run_id, gate=verdict, kappa=report.kappa, report=report.to_dict())
    if o.validate_only:
        job.finish("validated")
        console.print("--validate-only: the rest is not labelled.", markup=False)
        return False
    if not passed and not o.force:
        job.finish("gate_failed")
        raise GateFailed(
            f"Fleiss' kappa {cell(report.kappa)} is below --min-kappa {o.min_kappa}: "
            "the rest is not labelled",
            hint="improve the codebook or the shots, or pass --force (it is recorded)",
        )
    if not passed:
        console.print(
            f"--force: labelling the rest although kappa {cell(report.kappa)} < "
            f"{o.min_kappa} (recorded in run {run_id}).",
            markup=False,
        )
    return True


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
    batch: Annotated[
        bool,
        typer.Option(
            "--batch",
            help="Hand the requests to the endpoint's Batch API (/v1/files, /v1/batches) and "
            "return at once; run the same command again to poll and collect. The held-out "
            "items go first, in their own batch; the rest after the gate.",
        ),
    ] = False,
    batch_cancel: Annotated[
        bool, typer.Option("--batch-cancel", help="Cancel this run's open batches.")
    ] = False,
    batch_export: Annotated[
        Path | None,
        typer.Option(
            "--batch-export",
            metavar="FILE",
            help="Write the requests as a batch file (OpenAI's JSONL, which vLLM's run_batch "
            "reads) without sending anything; store the results with `annotate llm-import`.",
        ),
    ] = None,
    batch_discount: Annotated[
        float,
        typer.Option(help="Share of --price-in/--price-out a batch costs (dry run, summaries)."),
    ] = 0.5,
    batch_max_requests: Annotated[
        int, typer.Option(help="Requests per batch file; more are split into several batches.")
    ] = 50_000,
    batch_max_mb: Annotated[
        float, typer.Option(help="Megabytes per batch file; larger ones are split.")
    ] = 200.0,
    db: DbOption = DEFAULT_DB_PATH,
) -> None:
    """Validate an LLM coder on the held-out gold items, then let it label the rest.

    Every request and reply is kept in the database: running the same command again sends
    nothing already answered, and a run that was stopped resumes where it was. With
    --batch (or --batch-export FILE) the same requests go through a batch API (or a file),
    at the batch price, over several invocations of the same command.
    """
    if batch and batch_export is not None:
        raise UsageError("--batch and --batch-export are two ways to do one thing: choose one")
    if batch_cancel and not (batch or batch_export is not None):
        raise UsageError("--batch-cancel goes with --batch (or --batch-export FILE)")
    if not 0 < batch_discount <= 1:
        raise UsageError("--batch-discount must be a share between 0 and 1")
    if uncertain_sample and votes < 2:
        raise UsageError(
            "--uncertain-sample needs --votes 2 or more (confidence is the vote share)"
        )
    if context < 0:
        raise UsageError("--context must be 0 or more")
    if not 0 < below <= 1:
        raise UsageError("--below must be a share between 0 and 1")
    offline = batch_export is not None
    config = None if dry_run or offline else config_from_env(model, base_url, timeout_s=timeout)
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
        batch_discount=batch_discount,
    )
    with open_store(db) as store:
        dry_url = base_url or os.environ.get("OPENAI_BASE_URL")
        if (dry_run or offline) and dry_url:
            config = _dry_config(model, dry_url, timeout)
        elif offline:
            config = _dry_config(model, OFFLINE_URL, timeout)
        job = LabelJob(store, loaded, options, config)
        if dry_run:
            _render_dry_run(job, price, batch_discount if batch or offline else None)
            return
        if batch or offline:
            from annotate.commands.llm_batch import BatchCommand

            BatchCommand(
                job,
                export=batch_export,
                cancel=batch_cancel,
                max_requests=batch_max_requests,
                max_bytes=int(batch_max_mb * 1024 * 1024),
                command=_batch_command(
                    codebook,
                    model,
                    split,
                    shots,
                    target,
                    context,
                    temperature,
                    votes,
                    base_url,
                    response_format,
                    force,
                    validate_only,
                    min_kappa,
                    db,
                    batch_export,
                ),
                gate=gate,
            ).run()
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
            f"response_format {job.fallback.mode}" + (" (forced)" if job.fallback.forced else ""),
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
            if not gate(job, validated.results):
                return
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


OFFLINE_URL = "http://offline"
"""The endpoint of --batch-export without --base-url/OPENAI_BASE_URL: requests are
identified with the host ``offline`` (results come from a file, not an endpoint)."""


def _batch_command(
    codebook: str, model: str, split: str | None, shots: int | None, target: str,
    context: int, temperature: float, votes: int, base_url: str | None,
    response_format: str | None, force: bool, validate_only: bool, min_kappa: float, db: Path,
    export: Path | None,
) -> str:  # fmt: skip
    """The `llm-label --batch` command that continues this cycle (status shows it)."""
    parts = ["annotate llm-label", f"--codebook {codebook}", f"--model {model}"]
    for flag, value, default in (
        ("--split", split, None),
        ("--shots", shots, None),
        ("--target", target, "all"),
        ("--context", context, DEFAULT_CONTEXT),
        ("--temperature", temperature, 0.0),
        ("--votes", votes, 1),
        ("--base-url", base_url, None),
        ("--response-format", response_format, None),
        ("--min-kappa", min_kappa, 0.6),
    ):
        if value != default:
            parts.append(f"{flag} {value}")
    parts += [flag for flag, on in (("--force", force), ("--validate-only", validate_only)) if on]
    parts.append(f"--batch-export {export}" if export is not None else "--batch")
    if str(db) != str(DEFAULT_DB_PATH):
        parts.append(f"--db {db}")
    return " ".join(parts)


def _dry_config(model: str, base_url: str, timeout: float):
    """Endpoint settings without a key: only used to look requests up in the cache."""
    from llm_coder.client import LLMConfig

    return LLMConfig(model=model, base_url=base_url.rstrip("/"), api_key="", timeout_s=timeout)


def _render_dry_run(job: LabelJob, price: Price, batch_discount: float | None = None) -> None:
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
