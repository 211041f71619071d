"""The `annotate` command: wires the command modules and turns domain errors into one line."""

from __future__ import annotations

import typer
from typer.core import TyperGroup

from annotate import __version__
from annotate.commands import (
    agree,
    analysis,
    code,
    codebooks,
    data,
    llm,
    llm_batch,
    samples,
    status,
)
from annotate.commands.common import print_error
from annotate.errors import AnnotateError


class AnnotateGroup(TyperGroup):
    """The one error boundary: an :class:`AnnotateError` becomes ``error: ...`` and exit 1."""

    def invoke(self, ctx):  # type: ignore[no-untyped-def]
        try:
            return super().invoke(ctx)
        except AnnotateError as exc:
            print_error(exc)
            raise typer.Exit(1) from None


app = typer.Typer(
    cls=AnnotateGroup,
    name="annotate",
    help="Code collaboration logs with codebooks, measure inter-coder agreement, and let a "
    "validated LLM code the rest. Everything is kept in one SQLite file (--db, default "
    "./annotate.db, or ANNOTATE_DB).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode="markdown",  # paragraphs reflow to the terminal's width
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"annotate {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version and exit."
    ),
) -> None:
    """Code collaboration logs, measure agreement, validate an LLM coder."""


for module in (data, samples, codebooks, status, llm, llm_batch, analysis, code, agree):
    module.register(app)


def main() -> None:
    app()
