"""`annotate agree` (inter-coder agreement report) and `annotate adjudicate` (gold)."""

from __future__ import annotations

import getpass
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from annotate.coding.seeds import check_seed
from annotate.commands.common import (
    DEFAULT_DB_PATH,
    ComparedCodersOption,
    DbOption,
    FormatOption,
    console,
    err_console,
    open_store,
    rerun,
    split_list,
)
from annotate.errors import UsageError
from annotate.reliability.settings import DEFAULT_CI, DEFAULT_N_BOOT
from annotate.reliability.settings import DEFAULT_CI_METHOD as DEFAULT_METHOD
from annotate.render.agree.disagreements import render_disagreements
from annotate.render.agree.measured import measured_dict, render_measured
from annotate.render.agree.results import print_defaults, render_results, run_line
from annotate.render.agree.runs import print_runs
from annotate.render.agree.verification import render_verification
from annotate.render.rows import OutputFormat

if TYPE_CHECKING:
    from annotate.reliability.number_agreement import NumberQuestionResult
    from annotate.reliability.selection import Selection
    from annotate.reliability.text_agreement import TextQuestionResult
    from annotate.store import Store

CodebookOption = Annotated[
    str | None,
    typer.Option(
        help="Codebook name (default: the only labelled one, else the one on which two or "
        "more coders answered the same items; when several or none are, the error lists "
        "them and the command to run)."
    ),
]
SampleOption = Annotated[
    str | None,
    typer.Option(
        help="Sample name, or 'all' for every labelled item (default: 'main' if it exists "
        "and two or more coders answered in it, else every labelled item, with a note)."
    ),
]
QuestionOption = Annotated[
    str | None, typer.Option(help="Only this question (default: every question).")
]


class CiMethod(StrEnum):
    """Bootstrap interval of Fleiss' kappa."""

    bca = "bca"
    percentile = "percentile"


DEFAULT_CI_METHOD = CiMethod(DEFAULT_METHOD)


# -- the commands -----------------------------------------------------------------------------


def agree_command(
    codebook: CodebookOption = None,
    sample: SampleOption = None,
    coders: ComparedCodersOption = None,
    question: QuestionOption = None,
    fmt: FormatOption = OutputFormat.table,
    ci: Annotated[float, typer.Option(help="Confidence level of the intervals.")] = DEFAULT_CI,
    n_boot: Annotated[
        int, typer.Option(help="Bootstrap resamples for the CI of Fleiss' kappa.")
    ] = DEFAULT_N_BOOT,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap.")] = 0,
    ci_method: Annotated[
        CiMethod,
        typer.Option(
            "--ci-method",
            help="Bootstrap interval of Fleiss' kappa: bca (bias-corrected and accelerated, "
            "jackknife over items) or percentile.",
        ),
    ] = DEFAULT_CI_METHOD,
    disagreements: Annotated[
        bool,
        typer.Option(
            "--disagreements",
            help="Instead of the figures, list every item where the coders differ, with the "
            "turns before it (--context), its text, each coder's label ('(skipped)' or '(not "
            "coded)' where none), and the coders' notes and flags (no run is stored).",
        ),
    ] = False,
    verify_figures: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Recompute every figure a reference library computes from the same matrix "
            "(statsmodels: Fleiss' and Cohen's kappa, weighted at ordered levels; krippendorff: "
            "alpha at each level), print each library's version and the largest difference "
            "(exit 1 when they differ); the Markdown methods text then says so.",
        ),
    ] = False,
    context: Annotated[
        int,
        typer.Option(
            "--context",
            min=0,
            help="With --disagreements: the turns before each item shown with it.",
        ),
    ] = 2,
    run: Annotated[
        int | None,
        typer.Option(
            help="Show a stored run again, and how many of its labels were added, deleted "
            "or changed since."
        ),
    ] = None,
    runs: Annotated[bool, typer.Option("--runs", help="List the stored runs.")] = False,
    embeddings_url: Annotated[
        str | None,
        typer.Option(
            help="Free-text questions: embed with this OpenAI-compatible endpoint (base URL, "
            "e.g. http://127.0.0.1:8080/v1; key from OPENAI_API_KEY if needed) instead of "
            "the local all-MiniLM-L6-v2.",
        ),
    ] = None,
    embeddings_model: Annotated[
        str, typer.Option(help="Model name sent to --embeddings-url.")
    ] = "all-MiniLM-L6-v2",
    db: DbOption = DEFAULT_DB_PATH,
) -> None:
    """Inter-coder agreement per question, with intervals and the items left out.

    Fleiss' kappa with a bootstrap CI and the Landis & Koch band; beside it Gwet's
    generalized Fleiss' kappa for missing ratings (every item, with Gwet's SE and interval);
    Krippendorff's alpha, Gwet's AC1 (with its SE and interval), percent agreement,
    per-category and pairwise Cohen's kappas, and the items left out with the reason.

    Yes/no questions with reasons (mental_model Q4) also get the reasons' MASI alpha and a
    kappa per reason. Free-text questions get the mean pairwise similarity of the coders'
    texts per item, averaged over items with a bootstrap CI: SBERT cosine (all-MiniLM-L6-v2,
    vectors cached in the project file) and ROUGE-L F1. Number questions get Krippendorff's
    alpha (interval, or ratio if declared) and the ICC (two-way, absolute agreement, single
    and average measures, with McGraw & Wong's interval).

    Every run of coded questions is stored with the ids and a hash of the exact labels used;
    its id is printed. The same labels with the same settings again store nothing new: the
    output says "same as run N". On a file that can only be read (its permissions, its
    folder's, a read-only file system) the figures are printed and the run is not stored.
    """
    from annotate.memory import fixed_mmap_threshold
    from annotate.reliability.agreement_run import run_agreement
    from annotate.reliability.disagreements import list_disagreements
    from annotate.reliability.selection import select
    from annotate.reliability.stored_runs import stored_run

    fixed_mmap_threshold()  # the labels are read in chunks: give each back when done

    with open_store(db) as store:
        if runs:
            print_runs(store.agreement.agreement_runs(), fmt)
            return
        if run is not None:
            stored = stored_run(store, run)
            render_results(stored.results, fmt)
            run_line(
                f"run {run} ({stored.run['created_at']}): {stored.run['n_labels']} labels, "
                f"{stored.summary()}.",
                fmt,
            )
            return
        check_seed(seed)
        command = rerun(
            "annotate agree",
            db,
            sample=sample,
            coders=coders,
            question=question,
            format=fmt.value if fmt is not OutputFormat.table else None,
            ci=ci if ci != DEFAULT_CI else None,
            n_boot=n_boot if n_boot != DEFAULT_N_BOOT else None,
            seed=seed or None,
            ci_method=ci_method.value if ci_method is not DEFAULT_CI_METHOD else None,
            disagreements=disagreements,
            context=context if context != 2 else None,
            verify=verify_figures,
        )
        if disagreements:
            selection = select(
                store, codebook=codebook, sample=sample, coders=split_list(coders) or None,
                question=question, command=command,
            )  # fmt: skip
            if not selection.questions:
                raise UsageError(
                    "--disagreements lists differing codes; free-text answers have none",
                    hint="`annotate agree` gives their similarity; `annotate export` the texts",
                )
            print_defaults(selection.defaults, fmt)
            render_disagreements(list_disagreements(store, selection, context), fmt)
            return
        selection = select(
            store, codebook=codebook, sample=sample, coders=split_list(coders) or None,
            question=question, command=command,
        )  # fmt: skip
        print_defaults(selection.defaults, fmt)
        texts = _text_agreement(
            store, selection, embeddings_url, embeddings_model, ci, n_boot, seed, ci_method
        )
        numbers = _number_agreement(store, selection, ci)
        if not selection.questions:
            render_measured(texts, numbers, fmt)
            return
        unstored = store.agreement.why_runs_cannot_be_stored()  # report, do not store
        result = run_agreement(
            store, selection, ci=ci, n_boot=n_boot, seed=seed, save=unstored is None,
            ci_method=ci_method.value,
        )  # fmt: skip
        results = result.to_dict()
        if verify_figures:
            from annotate.reliability.verify import verify

            results["verified"] = verify(result).to_dict()
        if fmt is OutputFormat.json:
            results |= measured_dict(texts, numbers)
        render_results(results, fmt)
        if verify_figures:
            render_verification(results["verified"], fmt)
        if fmt is not OutputFormat.json:
            render_measured(texts, numbers, fmt)
    if result.run_id is None:
        run_line(
            f"run not stored ({unstored}): {result.n_labels} labels, sha256 "
            f"{result.labels_hash[:12]}.",
            fmt,
        )
        if verify_figures and not results["verified"]["ok"]:
            raise typer.Exit(1)
        return
    done = (
        f"same as run {result.run_id}, nothing new stored"
        if result.same_as_stored
        else f"run {result.run_id} stored"
    )
    run_line(
        f"{done}: {result.n_labels} labels, sha256 {result.labels_hash[:12]} "
        f"(`annotate agree --run {result.run_id}` shows it).",
        fmt,
    )
    if verify_figures and not results["verified"]["ok"]:
        raise typer.Exit(1)


def adjudicate_command(
    codebook: CodebookOption = None,
    sample: SampleOption = None,
    coders: ComparedCodersOption = None,
    question: QuestionOption = None,
    adjudicator: Annotated[
        str | None,
        typer.Option(help="Who adjudicates (stored with every gold label; default: your login)."),
    ] = None,
    majority_only: Annotated[
        bool,
        typer.Option(
            "--majority-only",
            help="Write the majority gold and stop: no screen (prints how many cases remain).",
        ),
    ] = False,
    db: DbOption = DEFAULT_DB_PATH,
) -> None:
    """Make gold labels: majority vote, then a screen for ties and flagged items.

    A strict majority of the selected coders decides (more than half of them on every item,
    whoever answered it; the first line says how many votes that is, the next how many coders
    answered each item, then the cases short of votes with the --coders that would decide
    them, and a warning names a coder with far fewer labels than the others). Ties, cases
    short of votes and flagged items go to a screen that shows the item in its context,
    every coder's answer and note, and takes one key (the codebook's shortcuts) for the
    final label; on a free-text or number question, 1-9 picks a coder's answer and t types
    the gold.

    Gold is stored as coder 'gold', with who adjudicated and how (majority or decided).
    """
    from annotate.memory import fixed_mmap_threshold
    from annotate.reliability.majority_pass import adjudicate_majority
    from annotate.reliability.majority_rule import majority_rule
    from annotate.reliability.selection import select

    fixed_mmap_threshold()  # the labels are read in chunks: give each back when done
    name = adjudicator or _login()
    with open_store(db) as store:
        selection = select(
            store,
            codebook=codebook,
            sample=sample,
            coders=split_list(coders) or None,
            question=question,
            purpose="adjudication",
            counted_ids=True,  # the pass's SQL reads the sample where it lies
            command=rerun(
                "annotate adjudicate",
                db,
                sample=sample,
                coders=coders,
                question=question,
                adjudicator=adjudicator,
                majority_only=majority_only,
            ),
        )
        # one pass decides and writes the majority gold; the screen reads what is left
        plan, written = adjudicate_majority(store, selection, name, read_cases=not majority_only)
        rule = majority_rule(plan)
        console.print(rule.line(), markup=False, soft_wrap=True)
        console.print(rule.coverage(), markup=False, soft_wrap=True)
        if short := rule.short_line():
            console.print(short, markup=False, soft_wrap=True)
        if warning := rule.warning():
            err_console.print(warning, markup=False, soft_wrap=True)
        undecided = plan.n_undecided
        where = f"{plan.codebook.name}" + (f", sample '{plan.sample}'" if plan.sample else "")
        console.print(
            f"{where}, coders {', '.join(plan.coders)}: majority gold for {written} "
            f"(item, question) cases; {undecided} to decide (ties and flagged"
            + (f", {rule.short_of_votes} short of votes" if rule.short_of_votes else "")
            + ")"
            + (f"; {len(plan.kept)} already decided, kept" if plan.kept else "")
            + (
                f"; {len(plan.stale)} majority gold retracted (no majority any more)"
                if plan.stale
                else ""
            )
            + (
                f"; {plan.too_few} answered by only one coder, left for later"
                if plan.too_few
                else ""
            )
            + ".",
            markup=False,
            soft_wrap=True,
        )
        if majority_only or not undecided:
            if undecided:
                console.print(
                    f"{undecided} cases remain undecided: run `annotate adjudicate` "
                    "without --majority-only to decide them.",
                    markup=False,
                )
            return
        from annotate.tui.screens.adjudicate import run_adjudication

        decided = run_adjudication(store, plan, name)
        left = len(plan.undecided)
        console.print(
            f"{decided} decided by {name}; "
            + (f"{left} still undecided (run the command again)." if left else "all decided."),
            markup=False,
        )


def _text_agreement(
    store: Store, selection: Selection, url: str | None, model: str, ci: float, n_boot: int,
    seed: int, ci_method: CiMethod,
) -> list[TextQuestionResult]:
    if not selection.text_questions:
        return []
    from annotate.reliability.text_agreement import text_agreement

    embedder = None
    if url:
        import os

        from annotate.embeddings import EndpointEmbedder

        embedder = EndpointEmbedder(url.rstrip("/"), model, os.environ.get("OPENAI_API_KEY", ""))
    return text_agreement(
        store, selection, selection.text_questions, embedder,
        ci=ci, n_boot=n_boot, seed=seed, ci_method=ci_method.value,
    )  # fmt: skip


def _number_agreement(
    store: Store, selection: Selection, ci: float
) -> list[NumberQuestionResult]:
    if not selection.number_questions:
        return []
    from annotate.reliability.number_agreement import number_agreement

    return number_agreement(store, selection, selection.number_questions, ci=ci)


def _login() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name in some containers
        raise UsageError("who adjudicates? pass --adjudicator NAME") from None


def register(app: typer.Typer) -> None:
    app.command("agree")(agree_command)
    app.command("adjudicate")(adjudicate_command)
