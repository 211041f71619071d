"""The `annotate` command: wires the command modules and turns domain errors into one line."""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from annotate import __version__
from annotate.commands import agree, analysis, code, codebooks, data, llm, samples, status
from annotate.commands.common import print_error
from annotate.errors import AnnotateError


class _PlainFlags:
    """A flag takes no value, so its help shows no type (typer would print ``<bool>``)."""

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)  # type: ignore[misc]
        for param in params:
            if getattr(param, "is_flag", False):  # typer's own (vendored) click Option
                param.metavar = ""
        return params


class AnnotateCommand(_PlainFlags, TyperCommand):
    """Every `annotate` command."""


class HelpGroup(_PlainFlags, TyperGroup):
    """A group of commands (`annotate codebooks`)."""


class AnnotateGroup(HelpGroup):
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
    "./annotate.db, or ANNOTATE_DB). A command that has to wait while another process writes "
    "the file says so and waits up to ANNOTATE_LOCK_WAIT seconds (default 120).",
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


for module in (data, samples, codebooks, status, llm, analysis, code, agree):
    module.register(app)


def _plain_flags(group: typer.Typer) -> None:
    """Every command and group of ``group`` shows flags without a type."""
    for info in group.registered_commands:
        info.cls = AnnotateCommand
    for sub in group.registered_groups:
        sub.cls = HelpGroup
        _plain_flags(sub.typer_instance)  # type: ignore[arg-type]


_plain_flags(app)


def main() -> None:
    app()
