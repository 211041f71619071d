"""`annotate stats` in a terminal: one row per group and role when it fits, else
one row per measure with the roles side by side, else a block per row.

The rows are those of annotate.analysis.stats (imported by the command, as it needs pandas).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from annotate.render.tables import Col, fitted, vertical

Row = Mapping[str, Any]


def mean_sd(mean: float | None, sd: float | None) -> str:
    if mean is None:
        return "-"
    return f"{mean:.1f}" + (f" ({sd:.1f})" if sd is not None else " (-)")


def measures(rows: Sequence[Row]) -> list[str]:
    """The per-session measures of the rows, in their order (actions first)."""
    return [k.removesuffix("_mean") for k in (rows[0] if rows else {}) if k.endswith("_mean")]


def per_session(measure: str) -> str:
    return f"{measure}/session" if measure == "actions" else measure


def stats_columns(keys: Sequence[str], rows: Sequence[Row]) -> list[Col]:
    return [Col(k) for k in keys] + [Col(per_session(m)) for m in measures(rows)]


def stats_wide(rows: Sequence[Row], keys: Sequence[str]) -> list[dict[str, Any]]:
    """A row per group and role: its keys, then each measure's mean (SD)."""
    return [
        {k: r.get(k) for k in keys}
        | {per_session(m): mean_sd(r[f"{m}_mean"], r[f"{m}_sd"]) for m in measures(rows)}
        for r in rows
    ]


def stats_by_measure(rows: Sequence[Row], keys: Sequence[str]) -> tuple[list[dict], list[Col]]:
    """A row per group and measure, a column per role (the narrow layout)."""
    group_keys = [k for k in keys if k in ("split", "condition")]
    roles = list(dict.fromkeys(r["role"] for r in rows))
    groups: dict[str, dict[str, Row]] = {}
    for r in rows:
        groups.setdefault(": ".join(str(r[k]) for k in group_keys), {})[r["role"]] = r
    out: list[dict[str, Any]] = []
    for group, by_role in groups.items():
        out.append({"group": group, "measure": "sessions"} | _each(by_role, "sessions"))
        out.append({"group": group, "measure": "actions"} | _each(by_role, "actions"))
        for m in measures(rows):
            values = {role: mean_sd(r[f"{m}_mean"], r[f"{m}_sd"]) for role, r in by_role.items()}
            out.append({"group": group, "measure": per_session(m)} | values)
    header = ": ".join(group_keys)  # "split: condition" and "test: visible"
    columns = [
        Col("group", header, wrap=True),
        Col("measure"),
        *(Col(role, _role_header(role)) for role in roles),
    ]
    return out, columns


def _role_header(role: str) -> str:
    return "all roles" if role == "all" else role


def _each(by_role: Mapping[str, Row], key: str) -> dict[str, Any]:
    return {role: r[key] for role, r in by_role.items()}


def stats_table(rows: Sequence[Row], keys: Sequence[str], width: int, title: str) -> RenderableType:
    """The stats as the widest layout that fits ``width``: see the module's docstring."""
    wide, wide_columns = stats_wide(rows, keys), stats_columns(keys, rows)
    group = len(keys) - 3  # the keys before role: condition, or split and condition
    narrow, narrow_columns = stats_by_measure(rows, keys)
    body = (
        fitted(wide, wide_columns, width, group=group)
        or fitted(narrow, narrow_columns, width, group=1)
        or vertical(wide, wide_columns, width)
    )
    return Group(Text(title, style="italic"), body)
