"""`annotate export` (a module of its own: it needs none of the importers)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from annotate.commands.common import DEFAULT_DB_PATH, DbOption, err_console, open_store
from annotate.io.export import ExportFormat, ExportWhat, build, check_out, write


def export_command(
    what: Annotated[
        ExportWhat,
        typer.Option(
            help="Which table: actions; labels joined with their actions; gold labels; or "
            "llm, every item an LLM run coded (once per run; not again for a run that took "
            "its reply from an earlier run's cache) with its raw reply, tokens, latency and "
            "the run's model, prompt hash and shots."
        ),
    ] = ExportWhat.labels,
    fmt: Annotated[ExportFormat, typer.Option("--format", help="File format.")] = ExportFormat.csv,
    out: Annotated[Path | None, typer.Option(help="Write here (default: standard output).")] = None,
    codebook: Annotated[str | None, typer.Option(help="Only this codebook's labels.")] = None,
    coders: Annotated[str | None, typer.Option(help="Only these coders (comma-separated).")] = None,
    sample: Annotated[
        str | None,
        typer.Option(help="Only the actions of this sample ('all' or left out: every action)."),
    ] = None,
    split: Annotated[
        str | None,
        typer.Option(help="Add a 'split' column (train/test) from this stored session split."),
    ] = None,
    safe_csv: Annotated[
        bool,
        typer.Option(
            "--safe-csv/--no-safe-csv",
            help="CSV: prefix a text cell that starts with =, +, -, @, tab or carriage return "
            "with ' so that a spreadsheet shows it instead of running it as a formula.",
        ),
    ] = True,
    db: DbOption = DEFAULT_DB_PATH,
) -> None:
    """Export actions, labels (joined with their actions), gold labels or LLM replies.

    The content is written byte for byte to --out, a file or a pipe, escape sequences
    included (on a terminal they are shown escaped; in CSV, --safe-csv only adds a leading '
    to a cell a spreadsheet would run as a formula). A write that fails (a full disk, a size
    limit, a closed pipe) stops with an error and exit 1, never a silently shorter file.
    Rows are streamed from the project file, so memory stays flat at any size, as the file
    was when the export began (what others save meanwhile is not in it). CSV quotes
    every text cell and no number; an empty cell is a missing value.
    """
    check_out(out)
    with open_store(db) as store:
        query = build(
            store,
            what,
            codebook=codebook,
            coders=[c.strip() for c in coders.split(",")] if coders else None,
            sample=None if sample == "all" else sample,
            split=split,
        )
        rows = write(store, query, fmt, out, safe_csv=safe_csv)
    if out is not None:
        err_console.print(f"wrote {rows} rows to {out}", markup=False)


def register(app: typer.Typer) -> None:
    app.command("export")(export_command)
