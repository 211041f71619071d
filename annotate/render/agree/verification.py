"""`annotate agree --verify`: the figures recomputed by the reference libraries, as a table
and a sentence."""

from __future__ import annotations

from typing import Any

from annotate.render.agree.layout import md_table, rich_table
from annotate.render.agree.words import num
from annotate.render.console import console, err_console
from annotate.render.rows import OutputFormat


def verified_sentence(verified: dict[str, Any]) -> str:
    """E.g. "Every kappa and alpha was verified against statsmodels 0.15.0 and krippendorff
    0.9.0, recomputed from the same matrix (largest difference 2.2e-16)."."""
    v = verified["versions"]
    libraries = f"statsmodels {v['statsmodels']} and krippendorff {v['krippendorff']}"
    if not verified["ok"]:
        return (
            f"Recomputed with {libraries} from the same matrix, the figures DIFFER (largest "
            f"difference {verified['max_difference']:.3g}): see the verification table."
        )
    return (
        f"Every kappa and alpha was verified against {libraries} (Fleiss' and Cohen's kappa; "
        f"alpha), recomputed from the same matrix (largest difference "
        f"{verified['max_difference']:.2g})."
    )


def verification_rows(verified: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "question": c["question"],
            "statistic": c["statistic"],
            "annotate": num(c["annotate"], 6),
            "reference": num(c["reference"], 6),
            "library": c["library"],
            "difference": "-" if c["difference"] is None else f"{c['difference']:.2g}",
        }
        for c in verified["checks"]
    ]


def render_verification(verified: dict[str, Any], fmt: OutputFormat) -> None:
    """The table after the figures (table and Markdown; JSON and CSV carry it inline)."""
    if fmt not in (OutputFormat.table, OutputFormat.markdown):
        if not verified["ok"]:
            err_console.print(verified_sentence(verified), markup=False, soft_wrap=True)
        return
    columns = [("question", "Question"), ("statistic", "Statistic"), ("annotate", "annotate"),
               ("reference", "Reference"), ("library", "Library"),
               ("difference", "Difference")]  # fmt: skip
    rows = verification_rows(verified)
    if fmt is OutputFormat.markdown:
        text = md_table(rows, columns, title="Verification")
        console.print(text, markup=False, highlight=False, soft_wrap=True)
    else:
        title = "Verification (the same matrix, reference libraries)"
        spec = [(k, h, "left") for k, h in columns]
        console.print(rich_table(title, spec, rows, wrap=frozenset({"statistic"})))
    console.print(verified_sentence(verified), markup=False, soft_wrap=True)
