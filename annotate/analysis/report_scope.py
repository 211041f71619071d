"""The actions a report covers (every session, or one part of a session split), and its Data
section: sessions and actions per condition and role."""

from __future__ import annotations

from collections.abc import Collection, Sequence

import pandas as pd

from annotate.analysis.grouping import groups_of
from annotate.analysis.report_model import Section, Table
from annotate.analysis.stats import MEASURES, NO_VALUE, stats
from annotate.store import Store

FACT_COLUMNS = ["action_id", "session", "condition", "role", "action_type"]


class Scope:
    """The actions a report covers (every session, or one part of a session split),
    without holding them: per-session counts from one ``GROUP BY`` in SQL, and a frame of
    the actions a table needs (the labelled ones) when it asks for it."""

    def __init__(self, store: Store, parts: dict[str, str] | None, part: str | None):
        self.store = store
        self.parts = parts
        self.part = part if part in ("train", "test") else None
        rows = store.analysis.session_type_counts()
        if self.part is not None and parts is not None:
            rows = [r for r in rows if parts.get(r["session"]) == self.part]
        self.counts = rows
        self.sessions = {r["session"] for r in rows}
        self.n_actions = sum(r["n"] for r in rows)
        self.has_roles = any(r["role"] is not None for r in rows)

    @property
    def empty(self) -> bool:
        return self.n_actions == 0

    def frame(self, ids: Collection[str], *, positions: bool = False) -> pd.DataFrame:
        """The actions of ``ids`` in scope: session, condition, role, action type (and with
        ``positions`` the progress bin of each in its session), split part when split."""
        columns = FACT_COLUMNS + (["position", "session_length"] if positions else [])
        frame = pd.DataFrame(
            self.store.analysis.action_facts(ids, positions=positions), columns=columns
        )
        frame["condition"] = frame["condition"].fillna(NO_VALUE)
        frame["role"] = frame["role"].fillna(NO_VALUE)
        if self.parts is not None:
            frame["split"] = frame["session"].map(self.parts).fillna(NO_VALUE)
            if self.part is not None:
                frame = frame[frame["split"] == self.part]
        return frame

    def action_ids(self) -> list[str]:
        """Every action id in scope (only for one part of a split)."""
        return self.store.analysis.action_ids_of_sessions(self.sessions)


def grouped_actions(scope: Scope, action_ids: Collection[str], by: Sequence[str]) -> pd.DataFrame:
    """The actions in scope with the columns of :meth:`Scope.frame` and of each grouping of
    ``by`` (``meta.*`` paths and the columns the frame lacks: :func:`groups_of`)."""
    actions = scope.frame(action_ids)
    extra = [b for b in by if b not in actions.columns]
    if extra and not actions.empty:
        actions = actions.merge(
            groups_of(scope.store, actions["action_id"], extra), on="action_id", how="left"
        )
    return actions


def _mean_sd(mean: float | None, sd: float | None) -> str:
    if mean is None:
        return "-"
    return f"{mean:.1f}" + (f" ({sd:.1f})" if sd is not None else "")


def data_section(store: Store, split: str | None, scope: Scope, part: str | None = None) -> Section:
    rows = stats(store, split, counts=scope.counts if scope.part is None else None)
    if part in ("train", "test"):
        rows = [r for r in rows if r["split"] == part]
    shown = [
        {
            **({"split": r["split"]} if split else {}),
            "condition": r["condition"],
            "role": r["role"],
            "sessions": r["sessions"],
            "actions": r["actions"],
            **{f"{m} per session": _mean_sd(r[f"{m}_mean"], r[f"{m}_sd"]) for m in MEASURES},
        }
        for r in rows
    ]
    columns = [
        *(["split"] if split else []),
        "condition",
        "role",
        "sessions",
        "actions",
        *(f"{m} per session" for m in MEASURES),
    ]
    text = [
        f"{len(scope.sessions)} sessions and {scope.n_actions} actions"
        + (f" in the {part} part of the split." if part in ("train", "test") else "."),
        "Per session: mean (SD, sample standard deviation). Role rows count that role's "
        "actions only.",
    ]
    return Section(
        "Data",
        text,
        [Table("dataset", "Sessions and actions per session", columns, shown)],
    )
