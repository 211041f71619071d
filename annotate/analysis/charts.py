"""PNG charts for the report, readable in black and white.

Series differ by grey level *and* hatching (bars) or by marker *and* line style (lines);
every chart has a title, labelled axes and one idea. matplotlib is imported here only, and
only when a chart is drawn: a bare :class:`~matplotlib.figure.Figure` with the Agg canvas,
so no pyplot state and no display are involved.
"""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import numpy as np

from annotate.analysis.report import Chart

GREYS = ("0.25", "0.85", "0.55", "1.0", "0.4", "0.7", "0.1", "0.95")
HATCHES = ("", "///", "...", "xxx", "\\\\\\", "---", "+++", "ooo", "***", "|||")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", ":", "-.")
DPI = 150


def _style(i: int) -> dict[str, str]:
    return {
        "facecolor": GREYS[i % len(GREYS)],
        "hatch": HATCHES[i % len(HATCHES)],
        "edgecolor": "black",
    }


def _new_figure(width: float, height: float):  # type: ignore[no-untyped-def]
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _bars(chart: Chart):  # type: ignore[no-untyped-def]
    data = chart.data
    categories, series = [str(i) for i in data.index], [str(c) for c in data.columns]
    n_cat, n_ser = len(categories), max(1, len(series))
    fig = _new_figure(7.0, max(2.6, 0.28 * n_cat * max(1.0, 0.75 * n_ser) + 1.4))
    ax = fig.add_subplot()
    height = 0.8 / n_ser
    y = np.arange(n_cat)[::-1]  # first category on top
    for i, name in enumerate(series):
        values = data.iloc[:, i].to_numpy(dtype=float)
        offset = (i - (n_ser - 1) / 2) * height
        bars = ax.barh(y - offset, values, height=height, label=name, linewidth=0.8, **_style(i))
        if n_ser == 1:
            ax.bar_label(bars, labels=[f"{v:.0%}" for v in values], padding=3, fontsize=8)
    ax.set_yticks(y, categories)
    top = float(np.nanmax(data.to_numpy(dtype=float))) if data.size else 1.0
    ax.set_xlim(0, min(1.0, top * 1.15 + 0.02) if top <= 1 else top * 1.15)
    ax.xaxis.set_major_formatter(_percent())
    ax.grid(axis="x", color="0.8", linewidth=0.6)
    ax.set_axisbelow(True)
    if n_ser > 1:
        ax.legend(title=data.columns.name, frameon=True, edgecolor="0.5", fontsize=8)
    return fig, ax


def _stacked(chart: Chart):  # type: ignore[no-untyped-def]
    data = chart.data
    categories = [str(i) for i in data.index]
    fig = _new_figure(7.5, max(2.6, 0.42 * len(categories) + 1.6))
    ax = fig.add_subplot()
    y = np.arange(len(categories))[::-1]
    left = np.zeros(len(categories))
    for i, name in enumerate(data.columns):
        values = data[name].to_numpy(dtype=float)
        ax.barh(y, values, left=left, height=0.7, label=str(name), linewidth=0.8, **_style(i))
        left += values
    ax.set_yticks(y, categories)
    ax.set_xlim(0, 1)
    ax.xaxis.set_major_formatter(_percent())
    ax.legend(
        title="answer",
        loc="upper center",
        bbox_to_anchor=(0.5, -0.18),
        ncol=min(6, len(data.columns)),
        frameon=False,
        fontsize=8,
    )
    return fig, ax


def _lines(chart: Chart):  # type: ignore[no-untyped-def]
    data = chart.data
    fig = _new_figure(7.0, 4.0)
    ax = fig.add_subplot()
    x = np.arange(len(data.index))
    for i, name in enumerate(data.columns):
        ax.plot(
            x,
            data[name].to_numpy(dtype=float),
            label=str(name),
            color="black" if i % 2 == 0 else "0.45",
            marker=MARKERS[i % len(MARKERS)],
            linestyle=LINESTYLES[i % len(LINESTYLES)],
            markerfacecolor="white" if i % 2 else "black",
            markersize=7,
            linewidth=1.6,
        )
    ax.set_xticks(x, [str(i) for i in data.index])
    ax.set_ylim(0, 1)
    ax.yaxis.set_major_formatter(_percent())
    ax.grid(axis="y", color="0.85", linewidth=0.6)
    ax.legend(title="condition", frameon=True, edgecolor="0.5", fontsize=8)
    return fig, ax


def _percent():  # type: ignore[no-untyped-def]
    from matplotlib.ticker import PercentFormatter

    return PercentFormatter(xmax=1.0, decimals=0)


DRAW = {"bars": _bars, "stacked": _stacked, "lines": _lines}


def render(chart: Chart, path: Path | None = None) -> bytes:
    """Draw ``chart`` as PNG; write it to ``path`` when given; return the PNG bytes."""
    fig, ax = DRAW[chart.kind](chart)
    ax.set_title("\n".join(textwrap.wrap(chart.title, 70)), fontsize=11, loc="left")
    ax.set_xlabel(chart.xlabel)
    ax.set_ylabel(chart.ylabel)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, facecolor="white")
    data = buf.getvalue()
    if path is not None:
        path.write_bytes(data)
    return data
