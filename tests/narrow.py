"""Checks that terminal output reads at a width: no line too long, no word split."""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.cells import cell_len


def too_long(text: str, width: int) -> list[str]:
    return [line for line in text.splitlines() if cell_len(line.rstrip()) > width]


def split_words(text: str, phrases: Iterable[str]) -> list[str]:
    """The words of ``phrases`` that ``text`` does not hold whole (so were split or lost).

    Table borders are taken out first, so a word must stand between spaces or borders."""
    flat = re.sub(r"[│┃]", " ", text)
    tokens = set(flat.split())
    return sorted({w for p in phrases for w in str(p).split() if w not in tokens})


def assert_reads_at(text: str, width: int, phrases: Iterable[str] = ()) -> None:
    assert not too_long(text, width), "\n".join(too_long(text, width))
    assert not split_words(text, phrases), split_words(text, phrases)
