"""The report's LLM validation section: the stored validation runs with their gate figure."""

from __future__ import annotations

from typing import Any

from annotate.analysis.agreement_section import as_printed, scalar
from annotate.analysis.report_model import Section, Table
from annotate.store import Store

NO_LLM_VALIDATION = "no LLM validation stored"


LLM_COLUMNS = [
    "id",
    "coder",
    "model",
    "codebook",
    "split",
    "status",
    "gate",
    "kappa",
    "min_kappa",
    "forced",
    "finished_at",
]


def llm_section(store: Store, scope: str = "") -> Section:
    runs = store.analysis.llm_validation_runs()
    section = Section("LLM validation")
    if not runs:
        section.paragraphs.append(NO_LLM_VALIDATION + ".")
        return section
    section.paragraphs.append(
        "Validation runs of the LLM coder against the held-out gold items, newest first; "
        "kappa is the gate figure (the lowest Fleiss' kappa of LLM + gold over the questions)."
        + (
            f" Shown as run, over the held-out items of each run, not only {scope}."
            if scope
            else ""
        )
    )
    columns = [c for c in LLM_COLUMNS if c in runs[0]]
    section.items.append(
        Table(
            "llm_validation",
            "LLM validation",
            [*columns, *GATE_COLUMNS],
            [{c: scalar(r.get(c)) for c in columns} | gate_figure(r.get("report")) for r in runs],
            "ci_low, ci_high, items: the interval of the gate kappa and the held-out items it "
            "used, as `llm-label` printed them (the stored validation).",
        )
    )
    return section


GATE_COLUMNS = ["ci_low", "ci_high", "items"]


def gate_figure(report: Any) -> dict[str, Any]:
    """The interval and n of the question whose Fleiss' kappa is the gate figure, from a
    stored validation report."""
    empty = dict.fromkeys(GATE_COLUMNS)
    if not isinstance(report, dict) or report.get("kappa") is None:
        return empty
    for q in report.get("questions") or ():
        if q.get("fleiss") == report["kappa"]:
            low, high = q.get("fleiss_ci") or (None, None)
            return {
                "ci_low": as_printed(low),
                "ci_high": as_printed(high),
                "items": q.get("n_items"),
            }
    return empty
