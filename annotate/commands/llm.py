"""`annotate split`, `annotate llm-label`: let a validated LLM code the rest."""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, Annotated

import typer

from annotate.codebook import find_codebook
from annotate.coding.seeds import check_seed
from annotate.commands import llm_options as o
from annotate.commands.common import (
    DEFAULT_DB_PATH,
    DbOption,
    console,
    err_console,
    open_store,
    split_list,
)
from annotate.errors import StoreError, UsageError
from annotate.llm_store import llm_store
from annotate.render.llm import (
    phase_line,
    render_dry_run,
    render_summary,
    render_validation,
    run_line,
    run_phase,
)
from annotate.render.rows import cell
from llm_coder.client import config_from_env, default_model
from llm_coder.cost import Price
from llm_coder.prompt import DEFAULT_CONTEXT
from llm_coder.workflow import (
    DEFAULT_SEED,
    DEFAULT_SHOTS,
    GateFailed,
    JobOptions,
    LabelJob,
    SplitResult,
    gold_codebook,
    make_split,
    split_exists,
)

if TYPE_CHECKING:
    from llm_coder.runner import ItemResult

# -- split ------------------------------------------------------------------------------


def split_command(
    codebook: o.CodebookOption,
    shots: Annotated[
        int, typer.Option(help="How many gold items become few-shot examples.")
    ] = DEFAULT_SHOTS,
    seed: Annotated[
        int, typer.Option(help="Random seed: the same seed gives the same split.")
    ] = DEFAULT_SEED,
    gold: Annotated[
        str, typer.Option(help="Coder whose labels are the gold standard (e.g. an expert's).")
    ] = "gold",
    sample: Annotated[
        str | None,
        typer.Option(help="Only gold items of this sample ('all' or left out: every gold item)."),
    ] = None,
    name: Annotated[
        str | None, typer.Option(help="Store the split under this name (default: the codebook's).")
    ] = None,
    replace: Annotated[bool, typer.Option(help="Overwrite a split of the same name.")] = False,
    strategy: Annotated[
        str,
        typer.Option(
            help="random: draw the shots at random (the ALMANAC paper's procedure); cover: "
            "cover as many distinct labels as --shots allows. Stored with the split."
        ),
    ] = "random",
    db: DbOption = DEFAULT_DB_PATH,
) -> None:
    """Split gold items into few-shot examples and a held-out validation set.

    --strategy random (the default) draws the few-shot set at random from the gold items;
    --strategy cover makes it cover as many distinct labels as --shots allows (the most
    frequent labels first, then in proportion to frequency). Every other gold item is held
    out to validate the LLM on. The same seed gives the same split.
    """
    check_seed(seed)
    loaded = find_codebook(codebook)
    with open_store(db) as store:
        result = make_split(
            llm_store(store),
            loaded,
            shots=shots,
            seed=seed,
            gold=gold,
            sample=None if sample == "all" else sample,
            name=name,
            replace=replace,
            strategy=strategy,
        )
    console.print(split_line(result, gold, seed), markup=False, soft_wrap=True)


def split_line(result: SplitResult, gold: str, seed: int) -> str:
    """What a new split holds, in one line."""
    covered = ", ".join(f"{label} {n}" for label, n in sorted(result.shot_labels.items()))
    how = "covering" if result.strategy == "cover" else "drawn at random, with"
    return (
        f"split '{result.name}': {len(result.shots)} shots {how} "
        f"{len(result.shot_labels)} of {result.labels_total} labels ({covered}); "
        f"{len(result.heldout)} held out for validation (gold: '{gold}', seed {seed}, "
        f"strategy {result.strategy})."
    )


# -- llm-label --------------------------------------------------------------------------


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
    codebook: o.LabelCodebookOption = None,
    model: o.ModelOption = None,
    shots: o.ShotsOption = None,
    split: o.SplitOption = None,
    base_url: o.BaseUrlOption = None,
    target: o.TargetOption = "all",
    min_kappa: o.MinKappaOption = 0.6,
    validate_only: o.ValidateOnlyOption = False,
    by: o.ByOption = None,
    force: o.ForceOption = False,
    dry_run: o.DryRunOption = False,
    context: o.ContextOption = DEFAULT_CONTEXT,
    lookahead: o.LookaheadOption = 0,
    show: o.ShowOption = None,
    temperature: o.TemperatureOption = 0.0,
    votes: o.VotesOption = 1,
    uncertain_sample: o.UncertainSampleOption = None,
    below: o.BelowOption = 0.8,
    response_format: o.ResponseFormatOption = None,
    concurrency: o.ConcurrencyOption = None,
    timeout: o.TimeoutOption = 60.0,
    max_retries: o.MaxRetriesOption = 5,
    price_in: o.PriceInOption = 0.0,
    price_out: o.PriceOutOption = 0.0,
    batch: o.BatchOption = False,
    batch_cancel: o.BatchCancelOption = False,
    batch_export: o.BatchExportOption = None,
    batch_discount: o.BatchDiscountOption = 0.5,
    batch_max_requests: o.BatchMaxRequestsOption = 50_000,
    batch_max_mb: o.BatchMaxMbOption = 200.0,
    db: DbOption = DEFAULT_DB_PATH,
) -> None:
    """Validate an LLM coder on the held-out gold items, then let it label the rest.

    Every request and reply is kept in the database: running the same command again sends
    nothing already answered, and a run that was stopped resumes where it was. With
    --batch (or --batch-export FILE) the same requests go through a batch API (or a file),
    at the batch price, over several invocations of the same command.
    """
    o.check_options(
        batch=batch, batch_export=batch_export, batch_cancel=batch_cancel,
        batch_discount=batch_discount, uncertain_sample=uncertain_sample, votes=votes,
        context=context, below=below,
    )  # fmt: skip
    if lookahead < 0:
        raise UsageError("--lookahead must be 0 or more")
    offline = batch_export is not None
    groups = o.by_columns(by)
    if codebook is None:
        with open_store(db) as store:
            codebook = gold_codebook(llm_store(store))
        console.print(f"codebook: {codebook} (the one codebook with gold)", markup=False)
    if model is None:
        model, origin = default_model(
            base_url, ask=not (dry_run or offline), timeout_s=timeout, retries=max_retries
        )
        console.print(f"model: {model} ({origin})", markup=False)
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
        lookahead=lookahead,
        show=None if show is None else tuple(split_list(show)),
        uncertain_sample=uncertain_sample,
        below=below,
        response_format=response_format,  # type: ignore[arg-type]  # checked by LabelJob
        batch_discount=batch_discount,
        by=groups,
    )
    with open_store(db) as opened:
        store = llm_store(opened)
        if split is None and not split_exists(store, options.split):
            made = make_split(
                store, loaded, shots=shots or DEFAULT_SHOTS, seed=DEFAULT_SEED,
                name=options.split,
            )  # fmt: skip
            console.print(
                f"no split '{options.split}' yet: made one as `annotate split --codebook "
                f"{loaded.codebook.name} --shots {len(made.shots)}` would (its defaults) and "
                f"stored it. {split_line(made, 'gold', DEFAULT_SEED)}",
                markup=False,
                soft_wrap=True,
            )
        dry_url = base_url or os.environ.get("OPENAI_BASE_URL")
        if (dry_run or offline) and dry_url:
            config = o.dry_config(model, dry_url, timeout)
        elif offline:
            config = o.dry_config(model, o.OFFLINE_URL, timeout)
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
                command=o.batch_command(
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
        if _same_as_before(job):
            return
        run_id = job.start(resume=True)
        if job.resumed is not None:
            r = job.resumed
            console.print(
                f"resuming run {run_id}: {r.left:,} of {r.total:,} items left "
                "(the same command was stopped before it finished).",
                markup=False,
            )
        console.print(run_line(job, run_id), markup=False)
        try:
            validated = run_phase(job, "validate", job.phase_ids("validate"))
            console.print(phase_line(job, validated), markup=False, soft_wrap=True)
            if validated.failed:
                job.finish("incomplete")
                raise UsageError(
                    f"{validated.failed} held-out items could not be coded "
                    f"({validated.failures[0]})",
                    hint="run the same command again: answered items are not sent twice",
                )
            held_out = job.phase_results("validate") if job.resumed else validated.results
            if not gate(job, held_out):
                return
            labelled = run_phase(job, "label", job.phase_ids("label"))
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


def _same_as_before(job: LabelJob) -> bool:
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
    render_validation(report, job.options.min_kappa)
    console.print(
        f"same as run {same} ({stored['status']}, gate {stored['gate']}): the same command, "
        "and every item was answered in that run; nothing sent, nothing new stored.",
        markup=False,
        soft_wrap=True,
    )
    return True


def register(app: typer.Typer) -> None:
    app.command("split")(split_command)
    app.command("llm-label")(llm_label_command)
