"""Probe alignment over time, as CollabSim measures it (seed 002, §3.3, Table 7, Figures 3-4).

For a free-text probe: at every turn of a session, each agent's latest answer at or before
that turn is taken, and the turn's alignment is the mean SBERT cosine over the pairs of
agents who have answered by then (two or more). Points are placed by task progress, the
turn over the session's last turn, in deciles; a figure is the mean over its points with
the n of points (and of sessions) behind it. For a number probe (a confidence) the points
are the answers themselves, at their turn's progress.

Groups: the action's condition and every ``meta.*`` field the probe log carried (group size,
model...), each a table of its own, read by :func:`annotate.analysis.grouping.groups_of` as
``report --by`` reads them: a point takes the values of the action it ends on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from annotate.analysis.grouping import groups_of, meta_groupings
from annotate.codebook import Codebook, Question

if TYPE_CHECKING:
    from annotate.embeddings import Embedder
    from annotate.store import Store

N_DECILES = 10


def decile(progress: float) -> int:
    return min(N_DECILES - 1, int(progress * N_DECILES))


def decile_label(i: int) -> str:
    return f"{10 * i}-{10 * (i + 1)}%"


@dataclass(frozen=True)
class ProbePoints:
    """One probe's points: a row per (session, turn) with the value and its groups."""

    question: Question
    measure: str  # "SBERT cosine" or the mean answer of a number probe
    # session, turn, progress, decile, value, n_agents, action_id (of the point's last
    # answer), condition, meta.*
    points: pd.DataFrame
    model: str | None = None


NOT_GROUPS = ("turn", "action_type")  # where a point stands and what was done, not groups


def _with_groups(store: Store, book: Codebook, points: list[dict[str, Any]]) -> pd.DataFrame:
    """The points with their groups: condition and every plain ``meta`` key of the log."""
    frame = pd.DataFrame(points)
    if frame.empty:
        return frame
    keys = store.self_reports.self_answer_meta_keys(book.name)
    by = ["condition", *meta_groupings([k for k in keys if k not in NOT_GROUPS])]
    groups = groups_of(store, frame["action_id"].unique().tolist(), by)
    return frame.merge(groups, on="action_id", how="left")


def text_points(store: Store, book: Codebook, q: Question, embedder: Embedder) -> ProbePoints:
    from annotate.embeddings import embed_cached

    rows = list(store.self_reports.self_answers(book.name, q.id))
    texts = [r[4] for r in rows]
    vectors = embed_cached(store, embedder, texts).vectors if texts else np.zeros((0, 0))
    if len(vectors):
        vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    last = _last_turns(rows)
    points: list[dict[str, Any]] = []
    latest: dict[str, int] = {}  # agent -> row of its latest answer, within one session
    session = None
    for i, (s, turn, _seq, coder, _value, action_id) in enumerate(rows):
        if s != session:
            session, latest = s, {}
        latest[coder] = i
        at_end_of_turn = i + 1 == len(rows) or rows[i + 1][0] != s or rows[i + 1][1] != turn
        if not at_end_of_turn or len(latest) < 2:
            continue
        chosen = list(latest.values())
        sims = [float(vectors[a] @ vectors[b]) for a, b in combinations(chosen, 2)]
        points.append(_point(s, turn, last, float(np.mean(sims)), len(chosen), action_id))
    return ProbePoints(q, "SBERT cosine", _with_groups(store, book, points), embedder.name)


def number_points(store: Store, book: Codebook, q: Question) -> ProbePoints:
    rows = list(store.self_reports.self_answers(book.name, q.id))
    last = _last_turns(rows)
    points = [
        _point(s, turn, last, float(value), 1, action_id)
        for s, turn, _seq, _coder, value, action_id in rows
    ]
    return ProbePoints(q, "mean answer", _with_groups(store, book, points))


def _point(
    session: str,
    turn: float,
    last: dict[str, float],
    value: float,
    n_agents: int,
    action_id: str,
) -> dict[str, Any]:
    progress = turn / last[session] if last[session] else 1.0
    return {
        "session": session,
        "turn": turn,
        "progress": progress,
        "decile": decile(progress),
        "value": value,
        "n_agents": n_agents,
        "action_id": action_id,
    }


def _last_turns(rows: Sequence[tuple[Any, ...]]) -> dict[str, float]:
    last: dict[str, float] = {}
    for r in rows:
        last[r[0]] = max(last.get(r[0], 0), r[1])
    return last


def group_columns(points: pd.DataFrame) -> list[str]:
    return [c for c in points.columns if c == "condition" or c.startswith("meta.")]


def by_decile(points: pd.DataFrame, group: str | None = None) -> pd.DataFrame:
    """Mean, SD and n (points, sessions) per decile (and group)."""
    keys = ["decile"] if group is None else [group, "decile"]
    g = points.groupby(keys, dropna=False)
    out = g["value"].agg(["mean", "std", "count"]).rename(columns={"count": "n", "std": "sd"})
    out["sessions"] = g["session"].nunique()
    return out.reset_index()


def overall(points: pd.DataFrame, group: str | None = None) -> pd.DataFrame:
    """Mean, SD and n over every point (Table 7: one figure per probe), per group."""
    if group is None:
        values = points["value"]
        return pd.DataFrame(
            [
                {
                    "mean": values.mean(),
                    "sd": values.std(),
                    "n": len(values),
                    "sessions": points["session"].nunique(),
                }
            ]
        )
    g = points.groupby(group, dropna=False)
    out = g["value"].agg(["mean", "std", "count"]).rename(columns={"count": "n", "std": "sd"})
    out["sessions"] = g["session"].nunique()
    return out.reset_index()


def probe_points(store: Store, book: Codebook, embedder: Embedder | None) -> list[ProbePoints]:
    """Every text and number question of ``book`` with self-answers."""
    out = []
    for q in book.questions:
        if q.kind == "text" and embedder is not None:
            found = text_points(store, book, q, embedder)
        elif q.kind == "number":
            found = number_points(store, book, q)
        else:
            continue
        if not found.points.empty:
            out.append(found)
    return out
