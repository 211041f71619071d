"""Free-text and number questions' agreement: mean pairwise similarity, alpha and ICC."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from annotate.render.agree.words import ci_text, num
from annotate.render.console import console, err_console
from annotate.render.rows import OutputFormat, csv_text, to_json
from annotate.render.tables import Col

TEXT_COLUMNS = [
    Col("question", "Question"),
    Col("measure", "Measure"),
    Col("mean", "Mean", justify="right"),
    Col("ci", "CI", justify="right"),
    Col("sd", "SD", justify="right", optional=True),
    Col("n_items", "Items", justify="right"),
    Col("n_pairs", "Pairs", justify="right"),
    Col("n_single", "1 answer", justify="right", optional=True),
    Col("note", "Note", wrap=True),
]
TEXT_CSV_COLUMNS = ["question", "measure", "mean", "ci_low", "ci_high", "sd", "n_items",
                    "n_pairs", "n_single", "note"]  # fmt: skip


NUMBER_COLUMNS = [
    Col("question", "Question"),
    Col("measure", "Measure"),
    Col("value", "Value", justify="right"),
    Col("ci", "CI", justify="right"),
    Col("n_items", "Items", justify="right"),
    Col("note", "Note", wrap=True),
]
NUMBER_CSV_COLUMNS = ["question", "measure", "value", "ci_low", "ci_high", "n_items", "note"]


def measured_dict(texts: Sequence[Any], numbers: Sequence[Any]) -> dict[str, Any]:
    """Free-text and number questions' figures, for JSON."""
    out: dict[str, Any] = {}
    if texts:
        out["text_similarity"] = [r.to_dict() for r in texts]
    if numbers:
        out["number_agreement"] = [r.to_dict() for r in numbers]
    return out


def render_measured(texts: Sequence[Any], numbers: Sequence[Any], fmt: OutputFormat) -> None:
    """Free-text questions (mean pairwise similarity, CI, n) and number questions (alpha,
    ICC)."""
    if fmt is OutputFormat.json:
        if texts or numbers:
            console.print(to_json(measured_dict(texts, numbers)), markup=False,
                          highlight=False, soft_wrap=True)  # fmt: skip
        return
    if texts:
        render_text_results(texts, fmt)
    if numbers:
        from annotate.render.rows import print_rows

        rows = [row for r in numbers for row in r.rows()]
        if fmt is OutputFormat.csv:
            console.print(csv_text(rows, NUMBER_CSV_COLUMNS), end="", markup=False,
                          highlight=False, soft_wrap=True)  # fmt: skip
            return
        shown = [
            r
            | {"value": num(r["value"]), "ci": ci_text({"low": r["ci_low"], "high": r["ci_high"]})}
            for r in rows
        ]
        print_rows(console, shown, NUMBER_COLUMNS, fmt, title="Number questions")


def render_text_results(results: Sequence[Any], fmt: OutputFormat) -> None:
    """Free-text questions: each measure's mean pairwise similarity, CI and n."""
    from annotate.render.rows import print_rows

    rows = [row for r in results for row in r.rows()]
    if fmt is OutputFormat.csv:
        console.print(csv_text(rows, TEXT_CSV_COLUMNS), end="", markup=False, highlight=False,
                      soft_wrap=True)  # fmt: skip
        return
    shown = [
        r | {"mean": num(r.get("mean")), "sd": num(r.get("sd")),
             "ci": ci_text({"low": r.get("ci_low"), "high": r.get("ci_high")})
             if r.get("mean") is not None else "-"}
        for r in rows
    ]  # fmt: skip
    models = {r.model for r in results if r.model}
    title = "Free-text answers: mean pairwise similarity over items" + (
        f" (SBERT: {', '.join(sorted(models))})" if models else ""
    )
    print_rows(console, shown, TEXT_COLUMNS, fmt, title=title)
    embedded = sum(r.n_embedded for r in results)
    cached = sum(r.n_cached for r in results)
    if models:
        err_console.print(
            f"SBERT: {embedded} texts embedded now, {cached} from the project file's cache.",
            markup=False, soft_wrap=True,
        )  # fmt: skip
