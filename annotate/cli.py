"""The `annotate` command: the table of commands, loaded lazily, and the one error boundary.

A command's module (and what it alone needs: pandas, numpy, llm_coder, textual...) is imported
only when that command runs or shows its help, so every command starts as fast as it can.
`annotate --help` lists the commands from :data:`COMMANDS` without importing any of them.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

import typer
from typer.core import TyperCommand, TyperGroup

from annotate import __version__, cli_params
from annotate.errors import AnnotateError


class Listed(NamedTuple):
    module: str  # in annotate.commands; its register(app) adds the command
    summary: str  # the first paragraph of the command's help, as `annotate --help` lists it


# In the order `annotate --help` lists them: the workflow's, as docs/index.md's table has it
# (tests/test_docs.py). tests/test_startup.py checks each summary against the command's own help.
COMMANDS: dict[str, Listed] = {
    "import": Listed("data", "Import action logs. Importing the same file again adds nothing."),
    "import-labels": Listed("data", "Import codings made elsewhere (a spreadsheet, another tool)."),
    "import-probes": Listed(
        "data", "Import agent probe logs as they come (nested actions and probe answers)."
    ),
    "sample": Listed(
        "samples", "Draw a reproducible random sample of actions and store it by name."
    ),
    "samples": Listed("samples", "List the stored samples with their sizes."),
    "codebooks": Listed("codebooks", "List, show and validate codebooks."),
    "code": Listed(
        "code", "Code a sample, one keypress per answer. Every answer is saved at once."
    ),
    "merge": Listed("analysis", "Merge coders' project files into this one."),
    "audit": Listed(
        "audit", "Code every message with a rule set and store the answers as coder rule:NAME."
    ),
    "agree": Listed(
        "agree", "Inter-coder agreement per question, with intervals and the items left out."
    ),
    "adjudicate": Listed(
        "agree", "Make gold labels: majority vote, then a screen for ties and flagged items."
    ),
    "split": Listed(
        "llm", "Split gold items into few-shot examples and a held-out validation set."
    ),
    "llm-label": Listed(
        "llm", "Validate an LLM coder on the held-out gold items, then let it label the rest."
    ),
    "llm-import": Listed(
        "llm_batch", "Store batch results made from `llm-label --batch-export` requests."
    ),
    "stats": Listed(
        "analysis", "Describe the dataset: sessions, actions and per-session means and SDs."
    ),
    "split-sessions": Listed(
        "analysis",
        "Split sessions into train and test, no session in both, matched in distribution.",
    ),
    "report": Listed(
        "analysis", "Write the study report as PNG charts and one self-contained HTML page."
    ),
    "export": Listed(
        "export", "Export actions, labels (joined with their actions), gold labels or LLM replies."
    ),
    "status": Listed(
        "status", "What the project file holds and the next command that makes sense."
    ),
}

MARKUP_MODE = "markdown"  # paragraphs reflow to the terminal's width


class _PlainFlags:
    """A flag takes no value, so its help shows no type (typer would print ``<bool>``)."""

    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)  # type: ignore[misc]
        for param in params:
            if getattr(param, "is_flag", False):  # typer's own (vendored) click Option
                param.metavar = ""
        return params

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None:
            # Not given, typer's --help is None, not a bool, and checking None builds a pydantic
            # validator (0.1 s): `annotate status --help` would pay it for the root's --help.
            option.default = False
        return option


class AnnotateCommand(_PlainFlags, TyperCommand):
    """Every `annotate` command."""


class HelpGroup(_PlainFlags, TyperGroup):
    """A group of commands (`annotate codebooks`)."""


def _plain_flags(group: typer.Typer) -> None:
    """Every command and group of ``group`` shows flags without a type."""
    for info in group.registered_commands:
        info.cls = AnnotateCommand
    for sub in group.registered_groups:
        sub.cls = HelpGroup
        _plain_flags(sub.typer_instance)  # type: ignore[arg-type]


def load_commands(module_name: str) -> dict[str, Any]:
    """Import one command module and build its commands as typer would under the root app."""
    module = _import_uncollected(f"annotate.commands.{module_name}")
    holder = typer.Typer(rich_markup_mode=MARKUP_MODE, add_completion=False)
    module.register(holder)
    _plain_flags(holder)
    commands = dict(typer.main.get_group(holder).commands)
    cli_params.install(commands.values())
    return commands


def _import_uncollected(name: str) -> Any:
    """Import a module with the garbage collector paused, then freeze what the import made.

    An import makes tens of thousands of objects (functions, classes, their dicts) and
    almost no garbage; the collector would scan them again and again while they are made
    (0.03 s of `annotate agree`), and at every full collection after. Once per module and
    process (a test process invokes commands many times)."""
    if name in sys.modules:
        return sys.modules[name]
    collecting = gc.isenabled()
    gc.disable()
    try:
        module = importlib.import_module(name)
    finally:
        if collecting:
            gc.enable()
    gc.freeze()
    return module


class LazyCommands(Mapping[str, Any]):
    """Name -> command, for every name of :data:`COMMANDS`; a module is imported the first time
    one of its commands is asked for (its name alone imports nothing)."""

    def __init__(self) -> None:
        self._loaded: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in self._loaded:
            self._loaded.update(load_commands(COMMANDS[name].module))
        return self._loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS)


class AnnotateGroup(HelpGroup):
    """The root: commands from :data:`COMMANDS`, and the one error boundary (an
    :class:`AnnotateError` becomes ``error: ...`` and exit 1)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.commands = LazyCommands()  # also what typer's "Did you mean ...?" draws on
        self._listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if self._listing and cmd_name in COMMANDS:  # `annotate --help`: name and summary only
            return TyperCommand(cmd_name, help=COMMANDS[cmd_name].summary)
        return self.commands.get(cmd_name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def invoke(self, ctx):  # type: ignore[no-untyped-def]
        try:
            return super().invoke(ctx)
        except AnnotateError as exc:
            from annotate.commands.common import print_error

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
    rich_markup_mode=MARKUP_MODE,
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


def single_threaded_blas() -> None:
    """One OpenBLAS thread unless the user chose otherwise: starting its thread pool is half
    of what importing NumPy costs (about 0.05 of 0.1 s, more on a busy machine), and the
    statistics keep their products small enough for one thread anyway
    (``agreement.bootstrap._product``). Set before NumPy loads; the only processes that
    inherit it are annotate's own (`code --web` serves `annotate code`)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main() -> None:
    single_threaded_blas()
    app()
