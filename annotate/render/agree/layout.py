"""The agreement report's table shapes: a terminal table that keeps words whole (or rows one
after another) and a Markdown table, each leaving out a notes column nobody needs."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from annotate.render.console import console
from annotate.render.rows import markdown_table
from annotate.render.tables import PER_COLUMN, Col, column_widths, vertical

PAD_EDGES = 1  # no padding at the table's two edges (pad_edge=False): one column's worth


def rich_table(
    title: str | None,
    columns: Sequence[tuple[str, str, str]],
    rows: list[dict],
    wrap: frozenset[str] = frozenset({"notes", "band"}),
    *,
    max_widths: dict[str, int] | None = None,
) -> RenderableType:
    """columns: (key, header, justify); a notes column nobody needs is left out. The title
    is a line of its own, so a narrow table does not squeeze it. The widths are
    :func:`annotate.render.tables.column_widths`' (the ``wrap`` columns narrow, never below
    their longest word); when the words do not fit, the rows are printed one after another
    (:func:`annotate.render.tables.vertical`). ``max_widths``: a column's text is wrapped
    at that width (or its longest word) before the widths are chosen."""
    columns = [
        c for c in columns if c[0] not in {"notes", "band"} or any(r.get(c[0]) for r in rows)
    ]
    limits = max_widths or {}
    texts = [
        [_wrapped(str(r.get(key, "")), limits.get(key)) for key, _, _ in columns] for r in rows
    ]
    width = console.width
    room = width - (PER_COLUMN * len(columns) - PAD_EDGES)
    widths = column_widths(
        [header for _, header, _ in columns], texts, [key in wrap for key, _, _ in columns], room
    )
    body: RenderableType
    if widths is None:
        cols = [Col(key, header, wrap=key in wrap) for key, header, _ in columns]
        flush = [{k: str(v).strip() for k, v in r.items()} for r in rows]  # no indent here
        body = vertical(flush, cols, width)
    else:
        body = Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False)
        for (key, header, justify), w in zip(columns, widths, strict=True):
            body.add_column(header, justify=justify, width=w, no_wrap=key not in wrap)  # type: ignore[arg-type]
        for row in texts:
            body.add_row(*map(Text, row))
    if not title:
        return body
    return Group(Text(title, style="bold"), body)


def _wrapped(text: str, limit: int | None) -> str:
    """``text`` broken between words at ``limit`` (a longer word stays whole)."""
    if limit is None or len(text) <= limit:
        return text
    return "\n".join(
        part
        for line in text.splitlines()
        for part in textwrap.wrap(line, limit, break_long_words=False, break_on_hyphens=False)
    )


def md_table(
    rows: list[dict[str, Any]], columns: list[tuple[str, str]], title: str | None = None
) -> str:
    """A Markdown table; a notes column nobody needs is left out."""
    keep = [(k, h) for k, h in columns if k not in {"notes", "band"} or any(r.get(k) for r in rows)]
    text = markdown_table(
        [{**r, "statistic": str(r.get("statistic", "")).strip()} for r in rows],
        [k for k, _ in keep],
        title=title,
    )
    header = "| " + " | ".join(k for k, _ in keep) + " |"
    return text.replace(header, "| " + " | ".join(h for _, h in keep) + " |", 1)
