"""The data model of `annotate report`: tables, charts and sections, built before any drawing.

:mod:`annotate.analysis.report` fills it; :mod:`annotate.analysis.charts` (PNG) and
:mod:`annotate.analysis.html` (the page) read it, so none of the three imports the others
in a circle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class Table:
    """A table of the report; ``percent`` columns hold shares (floats) or counts (ints)."""

    key: str
    title: str
    columns: list[str]
    rows: list[dict[str, Any]]
    note: str = ""
    percent: tuple[str, ...] = ()


@dataclass
class Chart:
    """A chart to draw. ``data``: rows are categories (bars) or x positions (lines),
    columns are series (groups) or stacked parts."""

    key: str
    title: str
    kind: Literal["bars", "stacked", "lines"]
    data: pd.DataFrame
    xlabel: str
    ylabel: str
    caption: str = ""
    n: pd.DataFrame | None = None
    """The n behind each value (same shape as ``data``), written beside bars and points."""
    low: pd.DataFrame | None = None
    high: pd.DataFrame | None = None
    """An interval per bar (same shape as ``data``): a 95% CI, or mean - SD .. mean + SD."""


@dataclass
class Section:
    title: str
    paragraphs: list[str] = field(default_factory=list)
    items: list[Table | Chart] = field(default_factory=list)


@dataclass
class Report:
    title: str
    paragraphs: list[str]
    sections: list[Section]
    seconds: float = 0.0

    def tables(self) -> list[Table]:
        return [i for s in self.sections for i in s.items if isinstance(i, Table)]

    def charts(self) -> list[Chart]:
        return [i for s in self.sections for i in s.items if isinstance(i, Chart)]


@dataclass(frozen=True)
class ReportFiles:
    html: Path
    charts: tuple[Path, ...]
    tables: tuple[Path, ...]
    seconds: float
