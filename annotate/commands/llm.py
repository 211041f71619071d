"""`annotate split`, `annotate llm-label`: let a validated LLM code the rest."""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from annotate.codebook import find_codebook
from annotate.commands.common import DEFAULT_DB_PATH, DbOption, console, err_console, open_store
from annotate.errors import StoreError, UsageError
from annotate.render.llm import (
    phase_counts,
    phase_line,
    progress_bar,
    render_dry_run,
    render_summary,
    render_validation,
)
from annotate.render.rows import cell
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


def _run_phase(job: LabelJob, phase: str, ids: list[str]) -> PhaseResult:
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


def gate(job: LabelJob, results: Sequence[ItemResult]) -> bool:
    """Report on the held-out items, record the gate; True when the rest is to be labelled.

    Raises :class:`GateFailed` below ``--min-kappa`` (unless ``--force``)."""
    from llm_coder.validate import validation_report  # numpy/pandas: load when needed

    o, run_id = job.options, job.run_id
    assert run_id is not None
    report = validation_report(job.store, job, results)
    render_validation(report, o.min_kappa)
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
            render_dry_run(job, price, batch_discount if batch or offline else None)
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
            console.print(phase_line(job, validated), markup=False, soft_wrap=True)
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
            console.print(phase_line(job, labelled), markup=False, soft_wrap=True)
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
        render_summary(job, validated, labelled, price)
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


def register(app: typer.Typer) -> None:
    app.command("split")(split_command)
    app.command("llm-label")(llm_label_command)
