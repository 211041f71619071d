"""Render rows as a terminal table, Markdown, JSON or CSV (one function per format)."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from rich.console import Console

from annotate.render.cells import safe_cell
from annotate.render.tables import Col, as_cols, cell, fit_rows

NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")

__all__ = ["Col", "OutputFormat", "cell", "csv_text", "markdown_table", "print_rows", "to_json"]


class OutputFormat(StrEnum):
    table = "table"
    markdown = "markdown"
    json = "json"
    csv = "csv"


def markdown_table(
    rows: Sequence[dict[str, Any]], columns: Sequence[str | Col], title: str | None = None
) -> str:
    cols = as_cols(columns)
    out = [f"### {title}", ""] if title else []
    out.append("| " + " | ".join(c.title for c in cols) + " |")
    out.append("|" + "|".join("---" for _ in cols) + "|")
    for row in rows:
        out.append("| " + " | ".join(cell(row.get(c.key)).replace("|", "\\|") for c in cols) + " |")
    return "\n".join(out) + "\n"


def csv_text(rows: Sequence[dict[str, Any]], columns: Sequence[str | Col]) -> str:
    columns = [c.key for c in as_cols(columns)]
    buf = io.StringIO()
    writer = csv.DictWriter(
        buf, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n"
    )
    writer.writeheader()
    for row in rows:
        writer.writerow({c: _csv_cell(row.get(c)) for c in columns})
    return buf.getvalue()


def _csv_cell(value: Any) -> object:
    """Numbers to 6 places; text through the formula guard, but for a number already
    written as text (``-0.5``: a spreadsheet reads it as the number it is)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        return cell(value, 6)
    return value if NUMBER.fullmatch(value) else safe_cell(value)


def to_json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)


def print_rows(
    console: Console,
    rows: Sequence[dict[str, Any]],
    columns: Sequence[str | Col],
    fmt: OutputFormat,
    title: str | None = None,
) -> None:
    """The rows in ``fmt``. A terminal table fits the console's width (see annotate.render.tables);
    the other formats always have every column, under its key (Markdown: its full header)."""
    if fmt is OutputFormat.table:
        console.print(fit_rows(rows, columns, console.width, title))
    elif fmt is OutputFormat.markdown:
        console.print(
            markdown_table(rows, columns, title), markup=False, highlight=False, soft_wrap=True
        )
    elif fmt is OutputFormat.csv:
        console.print(
            csv_text(rows, columns), end="", markup=False, highlight=False, soft_wrap=True
        )
    else:
        console.print(
            to_json([{c.key: r.get(c.key) for c in as_cols(columns)} for r in rows]),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
