"""One self-contained HTML page: the report's tables as HTML, charts as base64 data URIs."""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping
from html import escape
from typing import Any

from annotate.analysis.report_model import Chart, Report, Table

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto;
       max-width: 64rem; padding: 0 1rem; color: #111; line-height: 1.45; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2.2rem;
       border-bottom: 1px solid #999; } h3 { font-size: 1rem; margin-bottom: .3rem; }
table { border-collapse: collapse; margin: .4rem 0 1.2rem; font-size: .85rem; }
th, td { border: 1px solid #aaa; padding: .2rem .5rem; text-align: left; vertical-align: top; }
th { background: #eee; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: .6rem 0 1.6rem; } figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption, p.note { font-size: .8rem; color: #444; }
nav ul { columns: 2; font-size: .9rem; }
"""


def cell(value: Any, percent: bool) -> tuple[str, bool]:
    """The cell's text and whether it is a number."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–", False
    if isinstance(value, bool):
        return ("yes" if value else "no"), False
    if isinstance(value, int):
        return str(value), True
    if isinstance(value, float):
        return (f"{100 * value:.1f}%" if percent else f"{value:.3f}"), True
    return str(value), False


def table_html(table: Table) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in table.columns)
    body = []
    for row in table.rows:
        cells = []
        for c in table.columns:
            text, numeric = cell(row.get(c), c in table.percent)
            cls = ' class="num"' if numeric else ""
            cells.append(f"<td{cls}>{escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    note = f'<p class="note">{escape(table.note)}</p>' if table.note else ""
    return (
        f'<h3 id="t-{escape(table.key)}">{escape(table.title)}</h3>\n'
        f'<table class="data"><thead><tr>{head}</tr></thead>\n<tbody>\n'
        + "\n".join(body)
        + f"\n</tbody></table>\n{note}"
    )


def chart_html(chart: Chart, png: bytes) -> str:
    uri = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    caption = escape(chart.title) + (f". {escape(chart.caption)}" if chart.caption else "")
    return (
        f'<figure id="c-{escape(chart.key)}"><img alt="{escape(chart.title)}" src="{uri}">'
        f"<figcaption>{caption}</figcaption></figure>"
    )


def page(report: Report, images: Mapping[str, bytes]) -> str:
    """The whole page; ``images`` maps each chart's key to its PNG bytes."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(report.title)}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>{escape(report.title)}</h1>",
        *(f"<p>{escape(p)}</p>" for p in report.paragraphs),
        "<nav><ul>",
        *(
            f'<li><a href="#s{i}">{escape(s.title)}</a></li>'
            for i, s in enumerate(report.sections, start=1)
        ),
        "</ul></nav>",
    ]
    for i, section in enumerate(report.sections, start=1):
        parts.append(f'<section><h2 id="s{i}">{escape(section.title)}</h2>')
        parts += [f"<p>{escape(p)}</p>" for p in section.paragraphs]
        for item in section.items:
            if isinstance(item, Table):
                parts.append(table_html(item))
            elif item.key in images:
                parts.append(chart_html(item, images[item.key]))
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
