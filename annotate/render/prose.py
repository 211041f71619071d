"""Codebook prose (hard-wrapped in its YAML) rewrapped to the width it is shown at, by the
coding screen's help and by `annotate codebooks show`."""

from __future__ import annotations

import re

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

_LIST_ITEM = re.compile(r"^(\s*)([-*•]|\d+[.)])\s+(.*)$")


def reflow(text: str) -> RenderableType:
    """Codebook text (hard-wrapped in its YAML) rewrapped to the screen's width.

    Lines of a paragraph are joined. A list item (``- ``, ``1.``) starts a new line and
    wraps with a hanging indent; the lines after it continue it. A line indented unlike
    the line before it (a formula, an example) stays a line of its own.
    """
    blocks: list[tuple[str, str, str]] = []  # (indent, list marker or "", text)
    for paragraph in re.split(r"\n\s*\n", text.strip()):
        for line in paragraph.splitlines():
            stripped = line.strip()
            if not stripped:
                continue
            item = _LIST_ITEM.match(line)
            indent = line[: len(line) - len(line.lstrip())]
            if item:
                blocks.append((item.group(1), item.group(2), item.group(3).strip()))
            elif blocks and blocks[-1][2] and (blocks[-1][1] or indent == blocks[-1][0]):
                last = blocks[-1]
                blocks[-1] = (last[0], last[1], f"{last[2]} {stripped}")
            else:
                blocks.append((indent, "", stripped))
        blocks.append(("", "", ""))  # a blank line between paragraphs
    grid = Table.grid(padding=(0, 1, 0, 0))
    grid.add_column(no_wrap=True)
    grid.add_column(ratio=1)
    parts: list[RenderableType] = []
    rows = blocks[:-1]
    for i, (indent, marker, body) in enumerate(rows):
        if marker:
            grid.add_row(indent + marker, body)
            if i + 1 < len(rows) and rows[i + 1][1]:
                continue
            parts.append(grid)
            grid = Table.grid(padding=(0, 1, 0, 0))
            grid.add_column(no_wrap=True)
            grid.add_column(ratio=1)
        elif indent:
            parts.append(Padding(Text(body), (0, 0, 0, len(indent.expandtabs()))))
        else:
            parts.append(Text(body))
    return Group(*parts)
