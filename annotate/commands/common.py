"""What every command shares: the --db option, the store, the console."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from annotate.errors import AnnotateError
from annotate.render.console import console, err_console
from annotate.render.rows import OutputFormat
from annotate.store import DEFAULT_DB, Store

__all__ = ["console", "err_console"]  # with the helpers below: what every command shares


def print_error(exc: AnnotateError, *, details: bool = False) -> None:
    """``error: ...`` (a line for each of ``exc.details`` with ``details``), then
    ``hint: ...``, on stderr."""
    for line in exc.details if details else [exc.message]:
        err_console.print(f"error: {line}", markup=False, soft_wrap=True)
    if exc.hint:
        err_console.print(f"hint: {exc.hint}", markup=False, soft_wrap=True)


DbOption = Annotated[
    Path,
    typer.Option(
        "--db",
        envvar="ANNOTATE_DB",
        help="The project's SQLite file.",
        show_default=True,
    ),
]
DEFAULT_DB_PATH = Path(DEFAULT_DB)

FormatOption = Annotated[
    OutputFormat, typer.Option("--format", "-f", help="Output format.", case_sensitive=False)
]


@contextmanager
def open_store(db: Path, *, create: bool = False) -> Iterator[Store]:
    """Open the project file; reading commands refuse to create an empty one by accident."""
    store = Store(db, create=create)
    try:
        yield store
    finally:
        store.close()


def split_list(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]
