"""`annotate stats`, `annotate report`, `annotate split-sessions`, `annotate merge`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from annotate.analysis import MAX_EXHAUSTIVE
from annotate.analysis.merge import Prefer, merge_files
from annotate.coding.seeds import check_seed
from annotate.commands.common import (
    DEFAULT_DB_PATH,
    DbOption,
    FormatOption,
    PreferredCodersOption,
    console,
    open_store,
    split_list,
)
from annotate.render.rows import Col, OutputFormat, print_rows, to_json
from annotate.render.stats import stats_columns, stats_table, stats_wide

if TYPE_CHECKING:
    from annotate.analysis.report_model import Report
    from annotate.analysis.session_split import SessionSplitResult

SplitOption = Annotated[
    str | None,
    typer.Option(help="A stored session split (annotate split-sessions): rows per part."),
]
CONFLICTS_SHOWN = 30


def stats_command(
    split: SplitOption = None,
    fmt: FormatOption = OutputFormat.table,
    db: DbOption = DEFAULT_DB_PATH,
) -> None:
    """Describe the dataset: sessions, actions and per-session means and SDs.

    One row per condition (and split part) and role: sessions, actions, and the mean and
    sample SD per session of actions, messages, draws, erases, undos and resets. In a
    terminal too narrow for that table, a measure with the same value in every row is
    given once above it; if that is not enough, a row per measure with the roles as
    columns.
    """
    from annotate.analysis.stats import stat_columns, stats  # pandas: when needed

    with open_store(db) as store:
        rows = stats(store, split)
    keys = [*(["split"] if split else []), "condition", "role", "sessions", "actions"]
    if fmt in (OutputFormat.csv, OutputFormat.json):  # machine-readable: always the same columns
        print_rows(console, rows, ["split", *keys[-4:], *stat_columns()], fmt)
        return
    title = "Per session: mean (SD)" + (f"; split '{split}'" if split else "")
    if fmt is OutputFormat.markdown:
        print_rows(console, stats_wide(rows, keys), stats_columns(keys, rows), fmt, title=title)
        return
    console.print(stats_table(rows, keys, console.width, title))


def report_command(
    codebook: Annotated[str, typer.Option(help="The codebook whose codes the report shows.")],
    by: Annotated[
        str,
        typer.Option(
            help="Group the code distribution (and TGCO's metrics) by: condition, role, "
            "action_type, session, participant, or any meta path (meta.pairing); "
            "comma-separated for several, a table each."
        ),
    ] = "condition",
    coders: PreferredCodersOption = None,
    split: Annotated[
        str | None,
        typer.Option(help="A stored session split: adds train/test rows and a by-split table."),
    ] = None,
    part: Annotated[
        str | None, typer.Option(help="With --split: report on this part only (train or test).")
    ] = None,
    source: Annotated[
        str | None,
        typer.Option(
            help="own-reports: each action's label is its own actor's report (coder "
            "self:<actor>); the default where a codebook's only labels are such reports."
        ),
    ] = None,
    progress_bins: Annotated[
        int, typer.Option(help="Bins of task progress in Figure 4 (10: deciles).")
    ] = 10,
    out: Annotated[Path, typer.Option(help="Folder to write the report into.")] = Path("report"),
    db: DbOption = DEFAULT_DB_PATH,
) -> None:
    """Write the study report as PNG charts and one self-contained HTML page.

    Code distributions by condition and role, Figure 4 (alignment by grounding act and over
    the task) and Table 8 (mental-model shares per session) from the mental-model labels,
    agreement of every codebook and the LLM validation runs; for TGCO outcomes, FollowRate,
    CommCost, ParseRate and DelayedRate with n per group and the outcome composition chart.
    Prints which labels count and
    where it wrote them.
    """
    from annotate.analysis.report import build_report, write_report

    with open_store(db) as store:
        report = build_report(
            store, codebook, by=by, coders=split_list(coders) or None, split=split, part=part,
            label_from=source, bins=progress_bins,
        )  # fmt: skip
    files = write_report(report, out)
    said = set()
    for section in report.sections:
        for line in section.paragraphs:
            if line.startswith("Acts: "):  # the report's codebook again
                continue
            if ": labels by " in line or ": each action's own report" in line:
                if line not in said:
                    console.print(line, markup=False, soft_wrap=True)
                said.add(line)
    for line in metric_lines(report):
        console.print(line, markup=False, soft_wrap=True)
    console.print(
        f"wrote {files.html} ({len(files.charts)} charts, {len(files.tables)} tables; "
        f"PNG and CSV files in {out}/) in {report.seconds + files.seconds:.1f} s",
        markup=False,
        soft_wrap=True,
    )


def metric_lines(report: Report) -> list[str]:
    """A line per TGCO metrics table: FollowRate and CommCost of each group, with n."""
    from annotate.analysis.tgco_metrics import METRICS_KEY

    lines = []
    for table in report.tables():
        if METRICS_KEY not in table.key:
            continue
        by = table.columns[0]
        groups = [
            f"{r[by]} FollowRate {_rate(r['FollowRate'])} (n = {r['N_req']}), "
            f"CommCost {_rate(r['CommCost'])}"
            for r in table.rows
        ]
        lines.append(f"{table.title}: " + "; ".join(groups))
    return lines


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}".rstrip("0").rstrip(".")


def split_sessions_command(
    test: Annotated[int, typer.Option("--test", help="Test sessions (per group with --per).")],
    per: Annotated[str | None, typer.Option(help="Split within each value of: condition.")] = None,
    seed: Annotated[
        int, typer.Option(help="Seed of the random comparison split and of the search.")
    ] = 0,
    name: Annotated[str, typer.Option(help="Name to store the split under.")] = "main",
    codebooks: Annotated[
        str | None,
        typer.Option(help="Also match the shares of these codebooks' codes (comma-separated)."),
    ] = None,
    coders: PreferredCodersOption = None,
    max_exhaustive: Annotated[
        int,
        typer.Option(help="Score every subset when a group has at most this many; else search."),
    ] = MAX_EXHAUSTIVE,
    replace: Annotated[bool, typer.Option(help="Overwrite a split of the same name.")] = False,
    small_groups: Annotated[
        str,
        typer.Option(
            help="A group with --test or fewer sessions (e.g. the sessions without a "
            "condition, '-') cannot be split: 'refuse' stops and names them; 'train' puts "
            "their sessions in train and says so."
        ),
    ] = "refuse",
    fmt: FormatOption = OutputFormat.table,
    db: DbOption = DEFAULT_DB_PATH,
) -> None:
    """Split sessions into train and test, no session in both, matched in distribution.

    Within each condition, the test sessions are those whose feature means and SDs best
    match the rest (the README gives the objective). A group whose sessions do not differ
    in any feature has nothing to match: it gets a seeded random split, and the output says
    so. Stored by name for stats, report and export.
    """
    from annotate.analysis.session_split import split_sessions  # numpy, pandas: when needed
    from annotate.render.agree.words import short_id

    check_seed(seed)
    with open_store(db) as store:
        result = split_sessions(
            store,
            n_test=test,
            per=per,
            seed=seed,
            name=name,
            codebooks=split_list(codebooks),
            coders=split_list(coders) or None,
            replace=replace,
            small_groups=small_groups,
            max_exhaustive=max_exhaustive,
        )
    if fmt is OutputFormat.json:
        console.print(to_json(result.to_dict()), markup=False, soft_wrap=True)
        return
    shown = short_id if fmt is OutputFormat.table else str
    rows = [
        g.to_dict()
        | {
            "group": g.group or "all",
            "test": ", ".join(shown(t) for t in g.test),
            "random": g.random_objective,
        }
        for g in result.groups
    ]
    columns = ["group", "sessions", "test", "method", "n_subsets", "objective"]
    print_rows(
        console,
        rows,
        [*columns, "random_objective" if fmt is OutputFormat.csv else "random"],
        fmt,
        title=f"Session split '{result.name}' ({len(result.features)} features)",
    )
    if fmt is OutputFormat.csv:
        return
    for line in split_notes(result):
        console.print(line, markup=False, soft_wrap=True)
    console.print(
        f"split '{result.name}' stored: objective {result.objective:.4f} "
        f"(a random split: {result.random_objective:.4f}; seed {result.seed}).",
        markup=False,
        soft_wrap=True,
    )


def split_notes(result: SessionSplitResult) -> list[str]:
    """What is not a matched split: groups put in train whole, groups split at random."""
    from annotate.analysis.session_split import group_name, group_size

    lines = [
        f"{group_size(u.group, len(u.sessions))}: too few for --test {result.n_test}, all "
        "in train (--small-groups train)."
        for u in result.unsplit
    ]
    lines += [f"{group_name(g.group)}: {g.note}." for g in result.groups if g.note]
    return lines


def merge_command(
    others: Annotated[
        list[Path], typer.Argument(help="Other project files to merge in.", metavar="OTHER.db")
    ],
    prefer: Annotated[
        Prefer,
        typer.Option(help="On a conflicting label: keep ours, or take the newer answer."),
    ] = Prefer.ours,
    fmt: FormatOption = OutputFormat.table,
    db: DbOption = DEFAULT_DB_PATH,
) -> None:
    """Merge coders' project files into this one.

    Actions are matched by id; codebook versions, samples, session splits and labels (with
    their coder, codebook hash, times, notes and flags) are carried over. One transaction
    per file; a differing label is a conflict and ours is kept unless --prefer newer. LLM
    runs and agreement runs stay in the other file: the command lists the ones it leaves.
    """
    with open_store(db, create=True) as store:
        results = merge_files(store, others, prefer=prefer)
    if fmt is OutputFormat.json:
        console.print(to_json([r.to_dict() for r in results]), markup=False, soft_wrap=True)
        return
    for r in results:
        extra = []
        if r.differing_actions:
            extra.append(f"{r.differing_actions} actions differ (kept ours)")
        if r.new_samples:
            extra.append("samples added: " + ", ".join(r.new_samples))
        if r.differing_samples:
            extra.append("samples differ (kept ours): " + ", ".join(r.differing_samples))
        if r.new_session_splits:
            extra.append("session splits added: " + ", ".join(r.new_session_splits))
        if r.differing_session_splits:
            extra.append(
                "session splits differ (kept ours): " + ", ".join(r.differing_session_splits)
            )
        if r.notes_carried or r.flags_carried:
            extra.append(f"{r.notes_carried} notes and {r.flags_carried} flags carried over")
        if r.note_conflicts:
            extra.append(
                f"{r.note_conflicts} notes differ ({r.replaced_notes} took the newer note)"
            )
        left = [
            f"{len(ids)} {what} (id {', '.join(map(str, ids))})"
            for what, ids in (
                ("LLM runs", r.llm_runs_left),
                ("agreement runs", r.agreement_runs_left),
            )
            if ids
        ]
        if left:
            extra.append("left in that file, not merged: " + ", ".join(left))
        console.print(
            f"{r.path}: {r.new_actions} new actions of {r.actions_in_file}, "
            f"{r.new_codebook_versions} new codebook versions, {r.new_labels} new labels, "
            f"{r.filled_labels} filled, {r.answer_conflicts} conflicts "
            f"({r.replaced_labels} took the newer answer)"
            + ("; " + "; ".join(extra) if extra else "")
            + ("" if r.changed else " - nothing changed")
            + ".",
            markup=False,
        )
        if r.conflicts:
            shown = [c.to_dict() for c in r.conflicts[:CONFLICTS_SHOWN]]
            print_rows(
                console,
                shown,
                [
                    "action_id",
                    "codebook",
                    "question",
                    "coder",
                    "what",
                    Col("ours", wrap=True),
                    Col("theirs", wrap=True),
                    Col("resolution", wrap=True),
                ],
                fmt,
                title=f"Conflicts in {r.path}",
            )
            if len(r.conflicts) > CONFLICTS_SHOWN:
                console.print(
                    f"... and {len(r.conflicts) - CONFLICTS_SHOWN} more (--format json "
                    "lists them all).",
                    markup=False,
                )


def register(app: typer.Typer) -> None:
    app.command("merge")(merge_command)
    app.command("stats")(stats_command)
    app.command("split-sessions")(split_sessions_command)
    app.command("report")(report_command)
