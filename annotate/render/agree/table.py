"""`annotate agree` as terminal tables."""

from __future__ import annotations

from typing import Any

from annotate.reliability.matrices import categories_line
from annotate.render.agree.figures import (
    category_rows,
    code_rows,
    codes_title,
    left_out_lines,
    method_line,
    pair_rows,
    summary_rows,
    weighted_title,
)
from annotate.render.agree.layout import rich_table
from annotate.render.agree.words import ci_header, items_text, question_title, scope_line
from annotate.render.console import console


def render_table(results: dict[str, Any]) -> None:
    console.print(scope_line(results), markup=False)
    for q in results["results"]:
        console.print()
        level = ci_header(results)
        if not q["n_items"]:
            console.print(
                question_title(results, q) + ": no answers by these coders.", markup=False
            )
            continue
        console.print(
            rich_table(
                question_title(results, q),
                [
                    ("statistic", "Statistic", "left"),
                    ("value", "Value", "right"),
                    ("ci", level, "left"),
                    ("notes", "Notes", "left"),
                ],
                summary_rows(q),
            )
        )
        if categories_line(q):
            console.print(categories_line(q), markup=False)
        if method_line(q):
            console.print(method_line(q), markup=False)
        cats = category_rows(q)
        if cats:
            console.print(
                rich_table(
                    "Per category (Fleiss' kappa, one category against the rest)",
                    [
                        ("category", "Category", "left"),
                        ("share", "Share", "right"),
                        ("kappa", "Kappa", "right"),
                        ("z", "z", "right"),
                        ("notes", "Notes", "left"),
                    ],
                    cats,
                )
            )
        codes = code_rows(q)
        if codes:
            what = "reason" if q["kind"] == "yes_no_reasons" else "code"
            console.print(
                rich_table(
                    codes_title(q),
                    [
                        ("code", what.capitalize(), "left"),
                        ("chosen", "Chosen", "right"),
                        ("kappa", "Kappa", "right"),
                        ("alpha", "Alpha", "right"),
                        ("notes", "Notes", "left"),
                    ],
                    codes,
                )
            )
        for key in ("pairwise", "pairwise_weighted"):
            pairs = pair_rows(q, key)
            if pairs:
                console.print(
                    rich_table(
                        "Pairwise Cohen's kappa" if key == "pairwise" else weighted_title(q),
                        [
                            ("pair", "Coders", "left"),
                            ("items", "Items", "right"),
                            ("kappa", "Kappa", "right"),
                            ("ci", level, "left"),
                            ("agree", "Agree", "right"),
                            ("band", "Band", "left"),
                        ],
                        pairs,
                    )
                )
        for line in left_out_lines(q):
            console.print(line, markup=False)
        console.print(
            f"Coders differ on {items_text(q['n_disagreements'])} (--disagreements lists them).",
            markup=False,
        )
