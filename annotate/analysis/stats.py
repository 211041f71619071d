"""`annotate stats`: the dataset table of a paper, per condition, split part and role.

For every group: sessions, actions, and per session the mean and SD (sample SD, ddof = 1;
undefined for one session) of actions, messages, draws, erases, undos and resets. Role rows
count only that role's actions in each session of the group (0 when the role did nothing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from annotate.errors import UsageError
from annotate.store import Store

ALL = "all"
NO_VALUE = "-"
MEASURES: dict[str, str | None] = {
    "actions": None,
    "messages": "message",
    "draws": "draw",
    "erases": "erase",
    "undos": "undo",
    "resets": "reset",
}
ROLE_ORDER = ("guide", "follower")


def stat_columns() -> list[str]:
    return [f"{m}_{s}" for m in MEASURES for s in ("mean", "sd")]


def role_key(role: str) -> tuple[int, str]:
    return (ROLE_ORDER.index(role) if role in ROLE_ORDER else len(ROLE_ORDER), role)


def session_counts(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Per (session, role): condition and one count column per measure."""
    frame = pd.DataFrame(list(rows), columns=["session", "condition", "role", "action_type", "n"])
    frame["condition"] = frame["condition"].fillna(NO_VALUE)
    frame["role"] = frame["role"].fillna(NO_VALUE)
    out = frame.groupby(["session", "role"], as_index=False).agg(
        condition=("condition", "first"), actions=("n", "sum")
    )
    for measure, action_type in MEASURES.items():
        if action_type is None:
            continue
        sub = frame[frame["action_type"] == action_type].groupby(["session", "role"])["n"].sum()
        out[measure] = (
            out.set_index(["session", "role"]).index.map(sub).fillna(0).astype(int).to_numpy()
        )
    return out


def _describe(per_session: pd.DataFrame) -> dict[str, Any]:
    row: dict[str, Any] = {
        "sessions": len(per_session),
        "actions": int(per_session["actions"].sum()) if len(per_session) else 0,
    }
    for m in MEASURES:
        values = per_session[m] if len(per_session) else pd.Series(dtype=float)
        row[f"{m}_mean"] = float(values.mean()) if len(values) else None
        row[f"{m}_sd"] = float(values.std(ddof=1)) if len(values) > 1 else None
    return row


def dataset_stats(
    counts: pd.DataFrame, parts: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """Rows of the stats table from :func:`session_counts`.

    ``parts`` maps sessions to ``train``/``test`` (a stored session split); with it every
    group is given for ``all``, ``train`` and ``test``.
    """
    counts = counts.copy()
    # One condition per session (the first, should a session carry two).
    counts["condition"] = counts.groupby("session")["condition"].transform("first")
    roles = sorted((r for r in counts["role"].unique() if r != NO_VALUE), key=role_key)
    if roles and (counts["role"] == NO_VALUE).any():
        roles.append(NO_VALUE)
    conditions = sorted(counts["condition"].unique())
    split_parts = [ALL] + (["train", "test"] if parts is not None else [])
    rows: list[dict[str, Any]] = []
    for part in split_parts:
        part_of = counts["session"].map(dict(parts or {}))
        in_part = counts if part == ALL else counts[part_of == part]
        for condition in [*conditions, ALL] if len(conditions) > 1 else conditions:
            group = in_part if condition == ALL else in_part[in_part["condition"] == condition]
            sessions = sorted(group["session"].unique())
            totals = group.groupby("session")[list(MEASURES)].sum().reindex(sessions)
            rows.append({"split": part, "condition": condition, "role": ALL, **_describe(totals)})
            for role in roles:
                by_role = (
                    group[group["role"] == role]
                    .set_index("session")[list(MEASURES)]
                    .reindex(sessions, fill_value=0)
                )
                rows.append(
                    {"split": part, "condition": condition, "role": role, **_describe(by_role)}
                )
    return rows


def stats(
    store: Store, split: str | None = None, *, counts: Sequence[Mapping[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The stats table of the project file (optionally per part of a stored session split).

    ``counts``: :meth:`~annotate.store.analysis.Analysis.session_type_counts` when the caller has
    them
    (one ``GROUP BY`` over every action, not two)."""
    parts = store.analysis.session_split_parts(split) if split else None
    rows = store.analysis.session_type_counts() if counts is None else counts
    if not rows:
        raise UsageError("no actions yet", hint="run `annotate import PATH` first")
    return dataset_stats(session_counts(rows), parts)
