"""`annotate sample`, `annotate samples`."""

from __future__ import annotations

from typing import Annotated

import typer

from annotate.coding.sampling import draw_from_store
from annotate.coding.seeds import check_seed
from annotate.commands.common import (
    DEFAULT_DB_PATH,
    DbOption,
    FormatOption,
    console,
    open_store,
    split_list,
)
from annotate.errors import UsageError
from annotate.render.rows import OutputFormat, print_rows
from annotate.store.actions import STRATIFY_COLUMNS


def sample_command(
    n: Annotated[int, typer.Option("--n", help="How many actions.")],
    seed: Annotated[int, typer.Option(help="Random seed: the same seed gives the same items.")],
    name: Annotated[str, typer.Option(help="Name to store the sample under.")] = "main",
    stratify: Annotated[
        str | None,
        typer.Option(help="Comma-separated columns: " + ", ".join(STRATIFY_COLUMNS) + "."),
    ] = None,
    where: Annotated[
        str | None,
        typer.Option(
            help="One SQL condition on actions, e.g. \"action_type = 'message'\", that only "
            "reads: no ';', ORDER BY, LIMIT or UNION after it, no recursive WITH, random() or "
            "clock (the seed alone decides the items). Ctrl-C stops a slow condition."
        ),
    ] = None,
    replace: Annotated[bool, typer.Option(help="Overwrite a sample of the same name.")] = False,
    db: DbOption = DEFAULT_DB_PATH,
) -> None:
    """Draw a reproducible random sample of actions and store it by name."""
    check_seed(seed)
    if name == "all":
        raise UsageError(
            "--name all is taken: `--sample all` means every labelled item",
            hint="choose another name",
        )
    columns = split_list(stratify)
    unknown = [c for c in columns if c not in STRATIFY_COLUMNS]
    if unknown:
        raise UsageError(
            f"--stratify: unknown column '{unknown[0]}'",
            hint="columns: " + ", ".join(STRATIFY_COLUMNS),
        )
    with open_store(db) as store:
        rowids = draw_from_store(store, n, seed, columns, where)
        store.samples.create_drawn_sample(
            name,
            rowids,
            seed=seed,
            stratify=",".join(columns) or None,
            where=where,
            replace=replace,
        )
    console.print(f"sample '{name}': {len(rowids)} actions (seed {seed}).", markup=False)


def samples_command(fmt: FormatOption = OutputFormat.table, db: DbOption = DEFAULT_DB_PATH) -> None:
    """List the stored samples with their sizes."""
    with open_store(db) as store:
        rows = store.samples.samples()
    print_rows(
        console,
        rows,
        ["name", "n", "seed", "stratify", "where_clause", "origin", "created_at"],
        fmt,
        title="Samples",
    )


def register(app: typer.Typer) -> None:
    app.command("sample")(sample_command)
    app.command("samples")(samples_command)
