"""What every command shares: the --db option, the store, the console."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from annotate.errors import AnnotateError
from annotate.output import OutputStream
from annotate.render import OutputFormat
from annotate.store import DEFAULT_DB, Store
from annotate.terminal import TerminalConsole

# every report and message: written by the one writer (a failed write is an error, not a
# silent truncation), with control characters of log content shown escaped
console = TerminalConsole(file=OutputStream(), highlight=False)
err_console = TerminalConsole(file=OutputStream(err=True), highlight=False)


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
