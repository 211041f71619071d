"""The report's probe-alignment section: CollabSim's Table 7 (mean alignment per probe, with
n), alignment and confidence over task progress (Figure 3) and by every group the probe log
carried, condition and ``meta.*`` (Figure 4), as tables (CSV) and charts (PNG)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from annotate.analysis.probe_alignment import (
    N_DECILES,
    ProbePoints,
    by_decile,
    decile_label,
    group_columns,
    overall,
    probe_points,
)
from annotate.analysis.report_model import Chart, Section, Table
from annotate.codebook import TYPED_KINDS
from annotate.errors import AnnotateError

if TYPE_CHECKING:
    from annotate.codebook import Codebook
    from annotate.store import Store


def _r(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else round(float(value), 3)


def probe_section(store: Store, book: Codebook) -> Section | None:
    """None when ``book`` has no text or number question with participants' own answers."""
    if not any(q.kind in TYPED_KINDS for q in book.questions):
        return None
    from annotate.embeddings import local_sbert

    section = Section("Probe alignment")
    try:
        embedder = local_sbert()
    except AnnotateError as exc:
        embedder = None
        section.paragraphs.append(f"Free-text probes left out: {exc.message} ({exc.hint}).")
    found = probe_points(store, book, embedder)
    if not found:
        return None
    section.paragraphs.append(
        "Alignment of a free-text probe at a turn: the mean SBERT cosine "
        f"({embedder.name if embedder else '-'}) over the pairs of agents of the session, each "
        "agent's latest answer at or before the turn. Task progress: the turn over the "
        "session's last turn, in deciles. n: points (session turns, or answers for a number "
        "probe); sessions: how many sessions they come from."
    )
    rows = []
    for p in found:
        o = overall(p.points).iloc[0]
        rows.append(
            {
                "probe": p.question.id,
                "measure": p.measure,
                "mean": _r(o["mean"]),
                "sd": _r(o["sd"]),
                "n": int(o["n"]),
                "sessions": int(o["sessions"]),
            }
        )
    section.items.append(
        Table(
            "probe_alignment",
            "Mean per probe (CollabSim Table 7)",
            ["probe", "measure", "mean", "sd", "n", "sessions"],
            rows,
        )
    )
    for p in found:
        _progress(section, p)
        for group in group_columns(p.points):
            _by_group(section, p, group)
    return section


def _progress(section: Section, p: ProbePoints) -> None:
    q = p.question.id
    table = by_decile(p.points, "condition")
    rows = [
        {
            "condition": r["condition"],
            "decile": decile_label(int(r["decile"])),
            "mean": _r(r["mean"]),
            "sd": _r(r["sd"]),
            "n": int(r["n"]),
            "sessions": int(r["sessions"]),
        }
        for _, r in table.iterrows()
    ]
    section.items.append(
        Table(
            f"probe_{q}_progress",
            f"{q} ({p.measure}) over task progress, by condition",
            ["condition", "decile", "mean", "sd", "n", "sessions"],
            rows,
        )
    )
    labels = [decile_label(i) for i in range(N_DECILES)]
    data = table.pivot(index="decile", columns="condition", values="mean").reindex(range(N_DECILES))
    n = table.pivot(index="decile", columns="condition", values="n").reindex(range(N_DECILES))
    data.index = labels
    n.index = labels
    what = "alignment (mean SBERT cosine)" if p.measure == "SBERT cosine" else f"mean {q}"
    section.items.append(
        Chart(
            f"probe_{q}_progress",
            f"{q}: {what} over task progress",
            "lines",
            data,
            xlabel="task progress (decile of the session)",
            ylabel=what,
            n=n.fillna(0),
        )
    )


def _by_group(section: Section, p: ProbePoints, group: str) -> None:
    q = p.question.id
    table = overall(p.points, group)
    rows = [
        {
            group: r[group],
            "mean": _r(r["mean"]),
            "sd": _r(r["sd"]),
            "n": int(r["n"]),
            "sessions": int(r["sessions"]),
        }
        for _, r in table.iterrows()
    ]
    key = group.replace(".", "_")
    section.items.append(
        Table(
            f"probe_{q}_by_{key}",
            f"{q} ({p.measure}) by {group}",
            [group, "mean", "sd", "n", "sessions"],
            rows,
        )
    )
