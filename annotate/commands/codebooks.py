"""`annotate codebooks list|show|validate`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from annotate.codebook import (
    OTHER,
    Codebook,
    available_codebooks,
    find_codebook,
    load_codebook_file,
)
from annotate.commands.common import (
    FormatOption,
    console,
    err_console,
    open_store,
    print_error,
)
from annotate.errors import CodebookError
from annotate.render.prose import reflow
from annotate.render.rows import Col, OutputFormat, print_rows, to_json

app = typer.Typer(help="List, show and validate codebooks.", no_args_is_help=True)

StoredOption = Annotated[
    Path | None,
    typer.Option(
        "--db",
        envvar="ANNOTATE_DB",
        help="A project file: the codebook versions stored in it (those its labels were made "
        "under) instead of the codebook files.",
    ),
]


@app.command("list")
def list_command(fmt: FormatOption = OutputFormat.table, db: StoredOption = None) -> None:
    """Codebooks found in ./codebooks and the shipped ones, with their version hash and path.

    A file that does not load is named on stderr and left out; the others are listed. With
    --db, the versions stored in that project file instead, with their labels."""
    if db is not None:
        with open_store(db) as store:
            stored = store.codebook_versions()
        columns = ["name", "version_hash", Col("title", wrap=True), "version", "added_at", "labels"]
        print_rows(console, stored, columns, fmt)
        return
    rows = []
    for name, path in available_codebooks().items():
        try:
            cb = load_codebook_file(path).codebook
        except CodebookError as exc:
            err_console.print(f"skipped {path}: {exc.message}", markup=False, soft_wrap=True)
            continue
        rows.append(
            {
                "name": name,
                "title": cb.title,
                "version": cb.version,
                "hash": cb.version_hash,
                "questions": len(cb.questions),
                "path": str(path),
            }
        )
    columns = [
        "name",
        Col("title", wrap=True),
        "version",
        "hash",
        "questions",
        Col("path", optional=True),
    ]
    print_rows(console, rows, columns, fmt)


@app.command("show")
def show_command(
    name: Annotated[str, typer.Argument(help="Codebook name or YAML path.", metavar="NAME")],
    fmt: FormatOption = OutputFormat.table,
    db: StoredOption = None,
) -> None:
    """A codebook's questions, options, shortcut keys and definitions.

    With --db, the newest version stored in that project file, as its coders saw it (the
    file may have changed since)."""
    if db is None:
        cb = find_codebook(name).codebook
    else:
        with open_store(db) as store:
            cb = store.stored_codebook(name)
    if fmt is OutputFormat.json:
        console.print(
            to_json(cb.model_dump(mode="json") | {"version_hash": cb.version_hash}), markup=False
        )
        return
    console.print(f"{cb.title} ({cb.name} v{cb.version}, hash {cb.version_hash})", markup=False)
    if cb.instructions:
        if fmt is OutputFormat.table:
            console.print(reflow(cb.instructions))  # rewrapped to the terminal
        else:
            console.print(cb.instructions.strip(), markup=False, soft_wrap=True)
    for q in cb.questions:
        rows = [
            {"key": o.key, "code": o.code, "label": o.label, "definition": o.definition}
            for o in q.options
        ]
        if q.kind == "yes_no_reasons":
            rows = [
                {"key": q.yes_key, "code": "yes", "label": "Yes"},
                {"key": q.no_key, "code": "no", "label": "No (then the reasons below)"},
                *rows,
            ]
        if q.allow_other:
            rows.append({"key": q.other_key, "code": OTHER, "label": "Other (free text)"})
        console.print(f"\n{q.id} ({q.kind}): {q.prompt}", markup=False)
        if q.kind == "text":
            least = f", at least {q.min_chars} characters" if q.min_chars else ""
            console.print(f"Free text{least} (agreement skips it).", markup=False)
            continue
        columns = ["key", "code", Col("label", wrap=True), Col("definition", wrap=True)]
        if not any(r.get("definition") for r in rows):
            columns.pop()  # no option has a definition: no empty column
        print_rows(console, rows, columns, fmt)


def _other_summary(cb: Codebook) -> str:
    """Which questions offer "Other": it is opt-in (``allow_other: true``)."""
    offering = [q.id for q in cb.questions if q.allow_other]
    return "Other: " + (", ".join(offering) or "no question")


@app.command("validate")
def validate_command(
    paths: Annotated[list[Path], typer.Argument(help="YAML files to check.", metavar="PATH")],
) -> None:
    """Check codebook files: every mistake in every file, each with its path in the YAML.

    A valid file's line names the questions that offer "Other" (with free text): Other is
    opt-in, declared per question with `allow_other: true`. Exits 1 when any file has a
    mistake."""
    failed = 0
    for path in paths:
        try:
            cb = load_codebook_file(path).codebook
        except CodebookError as exc:
            failed += 1
            print_error(exc, details=True)
            continue
        console.print(
            f"{path}: ok ({cb.name} v{cb.version}, hash {cb.version_hash}; {_other_summary(cb)})",
            markup=False,
        )
    if failed:
        err_console.print(f"{failed} of {len(paths)} file(s) have mistakes", markup=False)
        raise typer.Exit(1)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="codebooks")
