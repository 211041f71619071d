"""What every command shares: the --db option, the store, the console."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from annotate import DEFAULT_DB
from annotate.errors import AnnotateError
from annotate.render.console import console, err_console
from annotate.render.rows import OutputFormat

if TYPE_CHECKING:
    from annotate.store import Store

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

# --coders: agreement compares coders; analysis takes, per item, the label of the first coder
# (in the order given) who answered it.
ComparedCodersOption = Annotated[
    str | None,
    typer.Option(
        help="Coders to compare, comma-separated (default: every human coder with labels; "
        "'gold', 'llm:*', self-reports 'self:*' and rule sets 'rule:*' count only when named)."
    ),
]
PreferredCodersOption = Annotated[
    str | None,
    typer.Option(
        help="Whose labels count, comma-separated in order of preference (the first coder "
        "who answered wins). Default: gold, then the corpus coding, then LLM coders that "
        "passed their validation gate, then rule sets (rule:*); a coder that failed its gate "
        "is used only when named here, and marked on every table and chart."
    ),
]


@contextmanager
def open_store(db: Path, *, create: bool = False) -> Iterator[Store]:
    """Open the project file; reading commands refuse to create an empty one by accident."""
    from annotate.store import Store  # not at import: `annotate CMD --help` needs no store

    store = Store(db, create=create)
    try:
        yield store
    finally:
        store.close()


def split_list(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


def rerun(command: str, db: Any, **given: Any) -> str:
    """The command as typed (options that differ from their defaults), for a hint to add
    --codebook to: ``annotate agree --format markdown``."""
    words = [command]
    for key, value in given.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        words.append(flag if value is True else f"{flag} {shlex.quote(str(value))}")
    if Path(db) != DEFAULT_DB_PATH:
        words.append(f"--db {shlex.quote(str(db))}")
    return " ".join(words)
