"""Terminal tables that fit the width they are given, never splitting a word.

A table is tried with its full headers, then with the short ones, then without the columns
that hold the same value in every row (a line above gives it), then without its optional
columns (a line below names them and says how to see them). When none of these fits, the
rows are printed one after another, a field a line (:func:`vertical`). Column widths are
computed here, not by rich: rich narrows a column below its longest word when the table is
too wide, which splits words.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich import box
from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

# Each column adds its padding (one space each side) and a border; the table adds one more.
PER_COLUMN = 3
PER_TABLE = 1
SHOWN_ALL = "a wider terminal or --format csv shows them"


@dataclass(frozen=True)
class Col:
    """A column: the row key it shows, its header and how it may narrow."""

    key: str
    header: str = ""  # default: the key
    short: str = ""  # the header when the full ones do not fit
    wrap: bool = False  # the text may wrap between words (prose); else it stays one line
    optional: bool = False  # may be left out when narrow; the output then says so
    justify: Literal["left", "right"] = "left"  # in a terminal table

    @property
    def title(self) -> str:
        return self.header or self.key


def as_cols(columns: Sequence[str | Col]) -> list[Col]:
    return [c if isinstance(c, Col) else Col(c) for c in columns]


def _longest_word(text: str) -> int:
    return max((cell_len(w) for w in text.split()), default=0)


def _longest_line(text: str) -> int:
    return max((cell_len(line) for line in text.splitlines()), default=0)


def column_widths(
    headers: Sequence[str], cells: Sequence[Sequence[str]], wrap: Sequence[bool], room: int
) -> list[int] | None:
    """Widths of the columns' text that sum to at most ``room``, or None if there are none.

    A column is as wide as its widest line when that fits. Otherwise the widest wrapping
    columns narrow first, never below their longest word (headers always wrap between
    words); a column that does not wrap keeps its widest line.
    """
    natural, minimum = [], []
    for i, header in enumerate(headers):
        column = [row[i] for row in cells]
        natural.append(max([_longest_line(header), *map(_longest_line, column)]))
        narrowest = map(_longest_word if wrap[i] else _longest_line, column)
        minimum.append(max([_longest_word(header), *narrowest]))
    if sum(minimum) > room:
        return None
    widths = list(natural)
    for _ in range(sum(widths) - room):  # one character at a time off the widest
        widest = max((i for i, w in enumerate(widths) if w > minimum[i]), key=lambda i: widths[i])
        widths[widest] -= 1
    return widths


def cell(value: Any, digits: int = 3) -> str:
    """A value as table text: None and NaN as ``-``, floats to ``digits`` places."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return "-" if math.isnan(value) else f"{value:.{digits}f}"
    if isinstance(value, list | tuple):
        return ", ".join(cell(v, digits) for v in value)
    return str(value)


def cell_texts(rows: Sequence[Mapping[str, Any]], cols: Sequence[Col]) -> list[list[str]]:
    return [[cell(row.get(c.key)) for c in cols] for row in rows]


def grid(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str | Col],
    width: int,
    *,
    short: bool = False,
    group: int = 0,
) -> Table | None:
    """The rows as one table no wider than ``width``, or None when the words do not fit.

    ``group``: the first ``group`` columns name a group of rows: they are shown on the
    group's first row only, and a rule separates the groups.
    """
    cols = as_cols(columns)
    headers = [(c.short or c.title) if short else c.title for c in cols]
    cells = cell_texts(rows, cols)
    room = width - PER_COLUMN * len(cols) - PER_TABLE
    widths = column_widths(headers, cells, [c.wrap for c in cols], room)
    if widths is None:
        return None
    table = Table(header_style="bold", box=box.HEAVY_HEAD)
    for col, header, w in zip(cols, headers, widths, strict=True):
        table.add_column(Text(header), width=w, overflow="fold", justify=col.justify)
    for i, row in enumerate(cells):
        same_as_last = bool(group) and i > 0 and cells[i - 1][:group] == row[:group]
        last_of_group = bool(group) and i + 1 < len(cells) and cells[i + 1][:group] != row[:group]
        shown = [""] * group + row[group:] if same_as_last else row
        table.add_row(*map(Text, shown), end_section=last_of_group)  # text, never markup
    return table


def constant(
    rows: Sequence[Mapping[str, Any]], cols: Sequence[Col], width: int, keep: int = 0
) -> tuple[list[Col], Text | None]:
    """The columns after the first ``keep`` whose value is the same in every row (of two
    or more), and a line that gives those values (wrapped between them if it can be)."""
    if len(rows) < 2:
        return [], None
    cells = cell_texts(rows, cols)
    same = [i for i in range(keep, len(cols)) if all(row[i] == cells[0][i] for row in cells)]
    if not same or len(same) == len(cols):
        return [], None
    pairs = [f"{cols[i].title} {cells[0][i]}" for i in same]
    return [cols[i] for i in same], Text(wrap_list("In every row: ", pairs, width) + ".")


def wrap_list(head: str, items: Sequence[str], width: int) -> str:
    """``head`` and the items, comma-separated, a line broken between items where one does
    not fit (within an item only when it is wider than a line)."""
    lines = [head.rstrip()]
    for i, item in enumerate(items):
        piece = item + ("," if i + 1 < len(items) else "")
        if cell_len(lines[-1]) + 1 + cell_len(piece) + 1 <= width:  # +1: a final "."
            lines[-1] += " " + piece
        else:
            lines.append(piece)
    return "\n".join(lines)


def fitted(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str | Col],
    width: int,
    *,
    group: int = 0,
) -> RenderableType | None:
    """The first table that fits: with full headers; with short headers; without the
    columns that hold one value (given on a line above); without the optional columns
    (last first; a line below names them). None when nothing fits."""
    cols = as_cols(columns)
    for short in (False, True):
        table = grid(rows, cols, width, short=short, group=group)
        if table is not None:
            return table
    same, same_line = constant(rows, cols, width, group)
    optional = [c for c in cols if c.optional]
    for n_out in range(len(optional) + 1):
        left_out = optional[len(optional) - n_out :]
        for lift in ([], same) if n_out else (same,):
            kept = [c for c in cols if c not in left_out and c not in lift]
            if len(kept) == len(cols) or not kept:
                continue
            table = grid(rows, kept, width, short=True, group=group)
            if table is None:
                continue
            parts: list[RenderableType] = [same_line] if lift and same_line else []
            parts.append(table)
            if left_out:
                names = ", ".join(c.title for c in left_out)
                note = f"Not shown at {width} columns: {names} ({SHOWN_ALL})."
                parts.append(Text(note, style="dim"))
            return Group(*parts)
    return None


def vertical(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[str | Col], width: int
) -> RenderableType:
    """Each row as a block of ``header  value`` lines, the values wrapped between words
    (a word longer than the line is folded), a blank line between blocks. The columns
    that hold one value are given once, above."""
    cols = as_cols(columns)
    same, same_line = constant(rows, cols, width)
    cols = [c for c in cols if c not in same]
    label_width = max(cell_len(c.title) for c in cols)
    indent = " " * (label_width + 2)
    value_width = max(width - len(indent), 1)
    lines: list[Text] = [same_line, Text("")] if same_line else []
    for i, row in enumerate(cell_texts(rows, cols)):
        if i:
            lines.append(Text(""))
        for col, value in zip(cols, row, strict=True):
            wrapped = [
                part
                for line in value.splitlines() or [""]
                for part in textwrap.wrap(line, value_width, break_on_hyphens=False) or [""]
            ]
            first = Text(f"{col.title.ljust(label_width)}  {wrapped[0]}".rstrip())
            first.stylize("bold", 0, len(col.title))
            lines.append(first)
            lines.extend(Text(indent + part) for part in wrapped[1:])
    return Text("\n").join(lines)


def fit_rows(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str | Col],
    width: int,
    title: str | None = None,
    *,
    group: int = 0,
) -> RenderableType:
    """The title, then :func:`fitted` or else :func:`vertical`."""
    body = fitted(rows, columns, width, group=group) or vertical(rows, columns, width)
    return Group(Text(title, style="italic"), body) if title else body
