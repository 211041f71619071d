"""Render rows as a terminal table, Markdown, JSON or CSV (one function per format)."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from rich.console import Console
from rich.table import Table


class OutputFormat(StrEnum):
    table = "table"
    markdown = "markdown"
    json = "json"
    csv = "csv"


def cell(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.{digits}f}"
    if isinstance(value, list | tuple):
        return ", ".join(cell(v, digits) for v in value)
    return str(value)


def rich_table(
    rows: Sequence[dict[str, Any]], columns: Sequence[str], title: str | None = None
) -> Table:
    table = Table(title=title, title_justify="left", header_style="bold")
    for c in columns:
        table.add_column(c, overflow="fold")
    for row in rows:
        table.add_row(*(cell(row.get(c)) for c in columns))
    return table


def markdown_table(
    rows: Sequence[dict[str, Any]], columns: Sequence[str], title: str | None = None
) -> str:
    out = [f"### {title}", ""] if title else []
    out.append("| " + " | ".join(columns) + " |")
    out.append("|" + "|".join("---" for _ in columns) + "|")
    for row in rows:
        out.append("| " + " | ".join(cell(row.get(c)).replace("|", "\\|") for c in columns) + " |")
    return "\n".join(out) + "\n"


def csv_text(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(
        buf, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n"
    )
    writer.writeheader()
    for row in rows:
        writer.writerow({c: cell(row.get(c), 6) if row.get(c) is not None else "" for c in columns})
    return buf.getvalue()


def to_json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)


def print_rows(
    console: Console,
    rows: Sequence[dict[str, Any]],
    columns: Sequence[str],
    fmt: OutputFormat,
    title: str | None = None,
) -> None:
    if fmt is OutputFormat.table:
        console.print(rich_table(rows, columns, title))
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
            to_json([{c: r.get(c) for c in columns} for r in rows]),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
