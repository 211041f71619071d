"""`annotate split`, `annotate llm-label`: let a validated LLM code the rest."""

from __future__ import annotations

import os
from typing import Annotated

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
from annotate.errors import UsageError
from annotate.llm_store import llm_store
from annotate.render.llm import ConsoleReporter, render_dry_run
from llm_coder.client import config_from_env, default_model
from llm_coder.cost import Price
from llm_coder.job import JobOptions, LabelJob
from llm_coder.split import (
    DEFAULT_SEED,
    DEFAULT_SHOTS,
    SplitResult,
    gold_codebook,
    make_split,
    split_exists,
)
from llm_coder.workflow import label_online

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


def llm_label_command(
    codebook: o.LabelCodebookOption = None,
    model: o.ModelOption = None,
    shots: o.ShotsOption = None,
    split: o.SplitOption = None,
    base_url: o.BaseUrlOption = None,
    target: o.TargetOption = o.DEFAULTS.target,
    min_kappa: o.MinKappaOption = o.DEFAULTS.min_kappa,
    validate_only: o.ValidateOnlyOption = False,
    by: o.ByOption = None,
    force: o.ForceOption = False,
    dry_run: o.DryRunOption = False,
    context: o.ContextOption = o.DEFAULTS.context,
    lookahead: o.LookaheadOption = o.DEFAULTS.lookahead,
    show: o.ShowOption = None,
    temperature: o.TemperatureOption = o.DEFAULTS.temperature,
    votes: o.VotesOption = o.DEFAULTS.votes,
    uncertain_sample: o.UncertainSampleOption = None,
    below: o.BelowOption = o.DEFAULTS.below,
    response_format: o.ResponseFormatOption = None,
    concurrency: o.ConcurrencyOption = None,
    timeout: o.TimeoutOption = o.DEFAULTS.timeout_s,
    max_retries: o.MaxRetriesOption = o.DEFAULTS.max_retries,
    price_in: o.PriceInOption = o.DEFAULTS.price.per_m_in,
    price_out: o.PriceOutOption = o.DEFAULTS.price.per_m_out,
    batch: o.BatchOption = False,
    batch_cancel: o.BatchCancelOption = False,
    batch_export: o.BatchExportOption = None,
    batch_discount: o.BatchDiscountOption = o.DEFAULTS.batch_discount,
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
                    options,
                    codebook=codebook,
                    split=split,
                    base_url=base_url,
                    db=db,
                    export=batch_export,
                ),
            ).run()
            return
        if votes > 1 and temperature == 0:
            err_console.print(
                "note: --votes at temperature 0 will mostly agree with themselves; "
                "consider --temperature 0.7",
                markup=False,
            )
        label_online(job, ConsoleReporter(price))


def register(app: typer.Typer) -> None:
    app.command("split")(split_command)
    app.command("llm-label")(llm_label_command)
