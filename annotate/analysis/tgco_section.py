"""The report's section of trace-grounded metrics (TGCO) per group."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from annotate.analysis.coders import LabelSource
from annotate.analysis.report_model import Chart, Section, Table
from annotate.analysis.report_scope import Scope, grouped_actions
from annotate.codebook import Codebook
from annotate.store import Store


def tgco_section(
    store: Store, codebook: Codebook, source: LabelSource, scope: Scope, by: Sequence[str]
) -> Section | None:
    """TGCO's metrics and outcome composition per group, for a question coded with its
    five outcomes (:mod:`annotate.analysis.tgco_metrics`)."""
    from annotate.analysis import tgco_metrics as tm
    from annotate.rules import tgco

    question = next((q for q in codebook.questions if tm.is_tgco(q.codes)), None)
    if question is None:
        return None
    labels = source.labels[source.labels["question"] == question.id]
    frame = labels[["action_id", "coder", "value"]].rename(columns={"value": "outcome"})
    frame = frame.merge(grouped_actions(scope, frame["action_id"], by), on="action_id")
    section = Section("Trace-grounded metrics (TGCO)", [tm.__doc__.split("\n\n")[1]])
    if frame.empty:
        section.paragraphs.append("No TGCO outcomes on the actions in this report.")
        return section
    facts = pd.DataFrame(
        store.analysis.action_fields(frame["action_id"], ["content"], ["tokens"]),
        columns=["action_id", "content", "tokens"],
    )
    words = facts["content"].fillna("").str.split().str.len()
    facts["tokens"] = pd.to_numeric(facts["tokens"], errors="coerce").fillna(words)
    frame = frame.merge(facts[["action_id", "tokens"]], on="action_id", how="left")
    rule = "rule:" + tgco.NAME
    delayed = dict(store.analysis.label_meta_values(codebook.name, question.id, rule, "delayed"))
    frame["delayed"] = [
        bool(delayed[a]) if c == rule and delayed.get(a) is not None else None
        for a, c in zip(frame["action_id"], frame["coder"], strict=True)
    ]
    for grouping in by:
        rows = tm.metrics_by(frame, grouping)
        shown = [
            {k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()} for r in rows
        ]
        key = f"{codebook.name}{tm.METRICS_KEY}{grouping}"
        section.items.append(
            Table(
                key,
                f"TGCO metrics by {grouping}",
                [grouping, *tm.METRIC_COLUMNS],
                shown,
                "n = messages coded; rates as defined above; - where a denominator is 0.",
            )
        )
        stacked = tm.composition(rows, grouping)
        stacked = stacked.loc[:, (stacked > 0).any(axis=0)]
        section.items.append(
            Chart(
                f"{codebook.name}_composition_by_{grouping}",
                f"TGCO outcome composition by {grouping}",
                "stacked",
                stacked,
                xlabel="share of messages (n per group)",
                ylabel=grouping,
            )
        )
    return section
