"""PNG charts for the report, readable in black and white.

Series differ by grey level *and* hatching (bars) or by marker *and* line style (lines);
every chart has a title, labelled axes and one idea. Categories and series come labelled
from the report (codes with their codebook labels, groups with their n); a chart's ``n``
is written beside each bar (one series) or point (lines). matplotlib is imported here only, and
only when a chart is drawn: a bare :class:`~matplotlib.figure.Figure` with the Agg canvas,
so no pyplot state and no display are involved.
"""

from __future__ import annotations

import io
import re
import textwrap
from pathlib import Path

import numpy as np

from annotate.analysis.report_model import Chart

GREYS = ("0.25", "0.85", "0.55", "1.0", "0.4", "0.7", "0.1", "0.95")
HATCHES = ("", "///", "...", "xxx", "\\\\\\", "---", "+++", "ooo", "***", "|||")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", ":", "-.")
DPI = 150
WRAP = 36  # characters per line of a tick or legend label
N_SUFFIX = re.compile(r" (\(n = \d+\))$")


def _wrap(text: object, width: int = WRAP) -> str:
    """Wrap a label; a trailing ``(n = 12)`` is kept in one piece."""
    match = N_SUFFIX.search(str(text))
    main, suffix = (str(text)[: match.start()], match.group(1)) if match else (str(text), "")
    lines = textwrap.wrap(main, width, break_on_hyphens=False) or [main]
    if suffix and len(lines[-1]) + 1 + len(suffix) <= width:
        lines[-1] += " " + suffix
    elif suffix:
        lines.append(suffix)
    return "\n".join(lines)


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
    categories, series = [_wrap(i) for i in data.index], [str(c) for c in data.columns]
    n_cat, n_ser = len(categories), max(1, len(series))
    fig = _new_figure(7.0, max(2.6, 0.28 * n_cat * max(1.0, 0.75 * n_ser) + 1.4))
    ax = fig.add_subplot()
    height = 0.8 / n_ser
    y = np.arange(n_cat)[::-1]  # first category on top
    for i, name in enumerate(series):
        values = data.iloc[:, i].to_numpy(dtype=float)
        offset = (i - (n_ser - 1) / 2) * height
        bars = ax.barh(y - offset, values, height=height, label=name, linewidth=0.8, **_style(i))
        if chart.low is not None and chart.high is not None:
            low = chart.low.iloc[:, i].to_numpy(dtype=float)
            high = chart.high.iloc[:, i].to_numpy(dtype=float)
            err = np.vstack([np.nan_to_num(values - low), np.nan_to_num(high - values)])
            ax.errorbar(
                values, y - offset, xerr=np.clip(err, 0, None), fmt="none", ecolor="black",
                elinewidth=0.9, capsize=2.5,
            )  # fmt: skip
        if n_ser == 1 or chart.n is not None:  # with several series, only when n is given
            labels = ["" if np.isnan(v) else f"{v:.0%}" for v in values]
            if chart.n is not None:
                counts = chart.n.iloc[:, i].to_numpy()
                labels = [
                    f"{t} (n = {int(c)})" if t else "" for t, c in zip(labels, counts, strict=True)
                ]
            ax.bar_label(bars, labels=labels, padding=3, fontsize=8)
    ax.set_yticks(y, categories)
    top = float(np.nanmax(data.to_numpy(dtype=float))) if data.size else 1.0
    if chart.high is not None and chart.high.size:
        top = max(top, float(np.nanmax(chart.high.to_numpy(dtype=float))))
    room = 1.35 if chart.n is not None else 1.15  # the n labels need room
    ax.set_xlim(0, min(1.0, top * room + 0.02) if top <= 1 else top * room)
    ax.xaxis.set_major_formatter(_percent())
    ax.grid(axis="x", color="0.8", linewidth=0.6)
    ax.set_axisbelow(True)
    if n_ser > 1 or data.columns.name:  # a grouping: its names carry each group's n
        # bars labelled with their n in every series leave no room inside: legend outside
        outside = (
            {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0)}
            if n_ser > 1 and chart.n is not None
            else {}
        )
        ax.legend(title=data.columns.name, frameon=True, edgecolor="0.5", fontsize=8, **outside)
    return fig, ax


def _stacked(chart: Chart):  # type: ignore[no-untyped-def]
    data = chart.data
    categories = [_wrap(i) for i in data.index]
    names = [str(c) for c in data.columns]
    long = max((len(n) for n in names), default=0) > 12
    fig = _new_figure(
        7.5, max(2.6, 0.42 * len(categories) + 1.6 + (0.3 * len(names) if long else 0))
    )
    ax = fig.add_subplot()
    y = np.arange(len(categories))[::-1]
    left = np.zeros(len(categories))
    for i, name in enumerate(data.columns):
        values = data[name].to_numpy(dtype=float)
        ax.barh(y, values, left=left, height=0.7, label=_wrap(name, 60), linewidth=0.8, **_style(i))
        left += values
    ax.set_yticks(y, categories)
    ax.set_xlim(0, 1)
    ax.xaxis.set_major_formatter(_percent())
    ax.legend(
        title="answer",
        loc="upper center",
        bbox_to_anchor=(0.5, -0.18),
        ncol=1 if long else min(6, len(names)),
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
        values = data[name].to_numpy(dtype=float)
        ax.plot(
            x,
            values,
            label=str(name),
            color=_line_colour(i),
            marker=MARKERS[i % len(MARKERS)],
            linestyle=LINESTYLES[i % len(LINESTYLES)],
            markerfacecolor="white" if i % 2 else "black",
            markersize=7,
            linewidth=1.6,
        )
    if chart.n is not None:
        _point_counts(ax, data, chart.n)
    ax.set_xticks(x, [str(i) for i in data.index])
    ax.set_ylim(0, 1)
    ax.yaxis.set_major_formatter(_percent())
    ax.grid(axis="y", color="0.85", linewidth=0.6)
    title = data.columns.name or "condition"
    ax.legend(title=title, frameon=True, edgecolor="0.5", fontsize=8)
    return fig, ax


def _line_colour(i: int) -> str:
    return "black" if i % 2 == 0 else "0.45"


def _point_counts(ax, data, counts) -> None:  # type: ignore[no-untyped-def]
    """Write each point's n beside it: at each x the highest point's above it, the lowest's
    below, any between to the right (so two series never write over each other)."""
    values = data.to_numpy(dtype=float)
    n = counts.to_numpy()
    for xi in range(values.shape[0]):
        present = [j for j in range(values.shape[1]) if not np.isnan(values[xi, j])]
        ranked = sorted(present, key=lambda j: values[xi, j])
        for place, j in enumerate(ranked):
            if place == len(ranked) - 1:
                offset, ha = (0, 8), "center"
            elif place == 0:
                offset, ha = (0, -14), "center"
            else:
                offset, ha = (9, -3), "left"
            ax.annotate(
                f"n={int(n[xi, j])}",
                (xi, values[xi, j]),
                textcoords="offset points",
                xytext=offset,
                ha=ha,
                fontsize=7,
                color=_line_colour(j),
            )


def _percent():  # type: ignore[no-untyped-def]
    from matplotlib.ticker import PercentFormatter

    return PercentFormatter(xmax=1.0, decimals=0)


DRAW = {"bars": _bars, "stacked": _stacked, "lines": _lines}


def draw(chart: Chart):  # type: ignore[no-untyped-def]
    """The chart's figure and axes, titled and labelled (not yet saved)."""
    fig, ax = DRAW[chart.kind](chart)
    ax.set_title("\n".join(textwrap.wrap(chart.title, 70)), fontsize=11, loc="left")
    ax.set_xlabel(chart.xlabel)
    ax.set_ylabel(chart.ylabel)
    return fig, ax


def render(chart: Chart, path: Path | None = None) -> bytes:
    """Draw ``chart`` as PNG; write it to ``path`` when given; return the PNG bytes."""
    fig, _ = draw(chart)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, facecolor="white")
    data = buf.getvalue()
    if path is not None:
        path.write_bytes(data)
    return data
