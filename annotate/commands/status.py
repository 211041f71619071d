"""`annotate status`: where am I."""

from __future__ import annotations

import shlex
from pathlib import Path

import typer

from annotate.commands.common import DEFAULT_DB_PATH, DbOption, FormatOption, console, open_store
from annotate.render.rows import Col, OutputFormat, print_rows, to_json


def status_command(fmt: FormatOption = OutputFormat.table, db: DbOption = DEFAULT_DB_PATH) -> None:
    """What the project file holds and the next command that makes sense."""
    from annotate.status import project_status  # the store and the statistics: when run

    db_option = "" if Path(db) == DEFAULT_DB_PATH else f"--db {shlex.quote(str(db))}"
    with open_store(db) as store:
        status = project_status(store, db_option)
    if fmt is OutputFormat.json:
        console.print(to_json(status), markup=False, soft_wrap=True)
        return
    console.print(
        f"[bold]{status['db']}[/bold]: {status['actions']} actions "
        f"(schema {status['schema_version']})"
    )
    print_rows(
        console,
        status["by_condition"],
        ["condition", "sessions", "actions", "messages"],
        fmt,
        title="Sessions and actions by condition",
    )
    if status["codebooks"]:
        print_rows(
            console,
            status["codebooks"],
            ["name", Col("version_hash", short="hash"), Col("title", wrap=True), "labels"],
            fmt,
            title="Codebooks",
        )
    if status["samples"]:
        print_rows(
            console,
            status["samples"],
            ["name", "n", "seed", Col("stratify", wrap=True), "origin"],
            fmt,
            title="Samples",
        )
    if status["progress"]:
        rows = [
            p | {"coded": f"{p['coded']}/{p['n']}", "minutes": f"{p['seconds'] / 60:.1f}"}
            for p in status["progress"]
        ]
        print_rows(
            console,
            rows,
            [
                "sample",
                "codebook",
                "coder",
                "coded",
                Col("skipped", short="skip"),
                Col("flagged", short="flag"),
                Col("minutes", short="min"),
            ],
            fmt,
            title="Coding progress",
        )
    if status["llm_runs"]:
        print_rows(
            console,
            status["llm_runs"],
            [
                "id",
                "coder",
                "codebook",
                "split",
                "status",
                "gate",
                "kappa",
                "response_format",
                "sent",
                "cached",
                "cost",
            ],
            fmt,
            title="LLM runs",
        )
    if status["llm_batches"]:
        print_rows(
            console,
            status["llm_batches"],
            ["id", "run", "phase", "status", Col("batch", wrap=True), "requests",
             Col("command", wrap=True)],
            fmt,
            title="Open LLM batches (the command collects them)",
        )  # fmt: skip
    if status["agreement_runs"]:
        print_rows(
            console,
            status["agreement_runs"][:5],
            ["id", Col("created_at", short="created"), "codebook", "sample"],
            fmt,
            title="Agreement runs (newest 5; all: annotate agree --runs)",
        )
    # The command stays one line (to paste it); on its own line when it does not fit after "Next:".
    sep = " " if len(status["next"]) + 6 <= console.width else "\n"
    console.print(f"Next:{sep}[bold]{status['next']}[/bold]", soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("status")(status_command)
