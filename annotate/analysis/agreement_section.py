"""The report's Agreement section: each labelled codebook measured as `annotate agree` measures
it (the same function: the same digits), and the stored agreement runs."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from annotate.analysis.report_model import Section, Table
from annotate.errors import AnnotateError
from annotate.reliability.settings import (
    DEFAULT_CI,
    DEFAULT_CI_METHOD,
    DEFAULT_N_BOOT,
    DEFAULT_SEED,
    settings_words,
)
from annotate.store import Store


def agreement_rows(
    store: Store, n_boot: int = DEFAULT_N_BOOT, action_ids: Collection[str] | None = None
) -> list[dict[str, Any]]:
    """Agreement on every labelled codebook as `annotate agree` measures it with its
    defaults (the same selection, settings and function: the same digits), one row per
    question; over ``action_ids`` only, when given. ``run`` names the stored run with the
    same labels and settings, whose figures these are."""
    from annotate.reliability.agreement_run import run_agreement
    from annotate.reliability.selection import select

    rows: list[dict[str, Any]] = []
    for name in store.labels.labelled_codebooks():
        try:
            selection = select(store, codebook=name, command=f"annotate agree --codebook {name}")
            run = run_agreement(store, selection, n_boot=n_boot, save=False, only=action_ids)
        except AnnotateError as exc:
            rows.append({"codebook": name, "question": "all", "note": exc.message})
            continue
        for q in run.results["results"]:
            rows.append(figure_row(run.results, q, run.run_id if run.same_as_stored else None))
    return rows


def as_printed(value: float | None) -> float | None:
    """As `agree` prints it (3 places): the CSV holds the digits the pages show."""
    return None if value is None else round(float(value), 3)


def figure_row(results: dict[str, Any], q: dict[str, Any], run_id: int | None) -> dict[str, Any]:
    """One question of an agreement run's results as a row of the report's table: each
    statistic with the n of items it used, the interval as two numbers."""
    sample = results["sample"]
    row: dict[str, Any] = {
        "codebook": results["codebook"],
        "question": q["question"],
        "coders": ", ".join(results["coders"]),
        "sample": sample if sample else "every labelled item",
        "run": run_id,
        "categories": q["categories"][0]["n"] if q.get("categories") else None,
    }
    v = q.get("value")
    if v is not None:
        f, ci = v["fleiss"], v["fleiss_ci"]
        row |= {
            "fleiss kappa": as_printed(f["kappa"]),
            "ci_low": as_printed(ci.get("low")),
            "ci_high": as_printed(ci.get("high")),
            "kappa items": f["n_items"],
            "band": f["band"],
            "alpha": as_printed(v["alpha"]["alpha"]),
            "alpha items": v["alpha"]["n_items"],
            "AC1": as_printed(v["ac1"]["ac1"]),
            "AC1 items": v["ac1"]["n_items"],
            "agreement": as_printed(v["percent_agreement"]["proportion"]),
            "note": (f["kappa"] is None and f["undefined_reason"]) or "",
        }
        return row
    sets = q.get("codes") or q.get("reasons")
    if sets is not None:
        masi = sets["alpha_masi"]
        row |= {
            "alpha": as_printed(masi["alpha"]),
            "alpha items": masi["n_items"],
            "agreement": as_printed(sets["exact_agreement"]["proportion"]),
            "note": "multi-select: alpha with MASI distance; exact-set agreement",
        }
    return row


AGREEMENT_COLUMNS = [
    "codebook",
    "question",
    "coders",
    "sample",
    "run",
    "categories",
    "fleiss kappa",
    "ci_low",
    "ci_high",
    "kappa items",
    "band",
    "alpha",
    "alpha items",
    "AC1",
    "AC1 items",
    "agreement",
    "note",
]


RUN_COLUMNS = ["id", "created_at", "codebook", "sample", "coders", "questions", "n_labels"]


HEADLINE_KEYS = ("kappa", "alpha", "ac1")


def _unjson(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


SKIPPED_KEYS = {"per_category", "per_code", "pairwise", "left_out", "items_left_out"}


def _number(value: Any, *path: str) -> float | None:
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, int | float) else None


def headline_figures(results: Any, limit: int = 8) -> str:
    """The headline kappa/alpha/AC1 of a stored agreement run's results.

    Runs of `annotate agree` store ``{"results": [{"question", "value": AgreementReport,
    "codes" | "reasons": MultiSelectReport}, ...]}``: one ``Q: kappa .., alpha .., AC1 ..``
    per question. Anything else: the first ``path=value`` numbers named kappa, alpha or
    ac1 (per-category and pairwise figures skipped).
    """
    items = results.get("results") if isinstance(results, dict) else None
    if isinstance(items, list) and items and all(isinstance(i, dict) for i in items):
        parts = []
        for item in items:
            figures = [
                (name, _number(item, *path))
                for name, path in (
                    ("kappa", ("value", "fleiss", "kappa")),
                    ("alpha", ("value", "alpha", "alpha")),
                    ("AC1", ("value", "ac1", "ac1")),
                    ("MASI alpha", ("codes", "alpha_masi", "alpha")),
                    ("reasons MASI alpha", ("reasons", "alpha_masi", "alpha")),
                )
            ]
            shown = ", ".join(f"{n} {v:.3f}" for n, v in figures if v is not None)
            parts.append(f"{item.get('question', '?')}: {shown or '-'}")
        return "; ".join(parts)
    found: list[str] = []

    def walk(value: Any, path: tuple[str, ...]) -> None:
        if len(found) >= limit:
            return
        if isinstance(value, dict):
            for key, item in value.items():
                if key in SKIPPED_KEYS:
                    continue
                if key in HEADLINE_KEYS and isinstance(item, int | float):
                    found.append(".".join((*path, key)) + f"={item:.3f}")
                else:
                    walk(item, (*path, str(key)))
        elif isinstance(value, list):
            for i, item in enumerate(value[:20]):
                walk(item, (*path, str(i)))

    walk(results, ())
    return ", ".join(found[:limit])


def scalar(value: Any, width: int = 80) -> Any:
    if isinstance(value, list):
        value = ", ".join(str(v) for v in value)
    if isinstance(value, int | float) or value is None:
        return value
    text = str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def agreement_section(
    store: Store,
    n_boot: int = DEFAULT_N_BOOT,
    action_ids: Collection[str] | None = None,
    scope: str = "",
) -> Section:
    """``action_ids``/``scope``: restrict the measured agreement to these actions, and say
    so (stored runs cannot be restricted: they are shown as run)."""
    where = f", over {scope} only" if scope else ""
    settings = settings_words(DEFAULT_CI, n_boot, DEFAULT_SEED, DEFAULT_CI_METHOD)
    section = Section(
        "Agreement",
        [
            "Each codebook as `annotate agree --codebook NAME` measures it (sample 'main' "
            "where it exists, else every labelled item; the human coders, not gold, llm:* or "
            f"self:*; {settings}){where}. Each statistic is given with the items it used: "
            "Fleiss' kappa the items every coder answered, alpha and AC1 the items two or "
            "more coders answered. 'run' names the stored `agree` run with the same labels "
            "and settings, whose figures these are.",
        ],
    )
    rows = agreement_rows(store, n_boot, action_ids)
    if rows:
        section.items.append(Table("agreement", "Inter-coder agreement", AGREEMENT_COLUMNS, rows))
    else:
        section.paragraphs.append("No labels stored.")
    runs = store.analysis.stored_agreement_runs()
    if runs:
        shown = [c for c in RUN_COLUMNS if c in runs[0]] or [
            c for c in runs[0] if c != "results" and not isinstance(runs[0][c], bytes)
        ]
        rows = []
        for run in runs:
            row = {c: scalar(_unjson(run.get(c))) for c in shown}
            row["figures"] = headline_figures(_unjson(run.get("results")))
            rows.append(row)
        section.items.append(
            Table(
                "agreement_runs",
                "Stored agreement runs (annotate agree)",
                [*shown, "figures"],
                rows,
                "figures: the kappa, alpha and AC1 values found in each run's stored results."
                + (f" Shown as run, over the run's own items, not only {scope}." if scope else ""),
            )
        )
    return section
