"""What `annotate agree` prints: the results in the chosen format and the lines around them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from annotate.render.agree.csv_rows import CSV_COLUMNS, csv_rows
from annotate.render.agree.markdown import render_markdown
from annotate.render.agree.table import render_table
from annotate.render.console import console, err_console
from annotate.render.rows import OutputFormat, csv_text, to_json


def print_defaults(defaults: Sequence[str], fmt: OutputFormat) -> None:
    """How the defaults were chosen, on stderr (table output only)."""
    if defaults and fmt is OutputFormat.table:
        err_console.print("defaults: " + "; ".join(defaults), markup=False, soft_wrap=True)


def render_results(results: dict[str, Any], fmt: OutputFormat) -> None:
    if fmt is OutputFormat.json:
        console.print(to_json(results), markup=False, highlight=False, soft_wrap=True)
    elif fmt is OutputFormat.csv:
        console.print(csv_text(csv_rows(results), CSV_COLUMNS), end="", markup=False,
                      highlight=False, soft_wrap=True)  # fmt: skip
    elif fmt is OutputFormat.markdown:
        render_markdown(results)
    else:
        render_table(results)


def run_line(text: str, fmt: OutputFormat) -> None:
    """Where the run id goes: after the table; to stderr when stdout is data."""
    if fmt is OutputFormat.table:
        console.print(text, markup=False)
    elif fmt is not OutputFormat.markdown:
        err_console.print(text, markup=False, soft_wrap=True)
