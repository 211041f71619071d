"""`annotate agree --format markdown`: the methods paragraph, the tables and the references."""

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
from annotate.render.agree.layout import md_table
from annotate.render.agree.methods import cited_references, methods_sentence
from annotate.render.agree.words import ci_header, question_title
from annotate.render.console import console


def render_markdown(results: dict[str, Any]) -> None:
    methods = methods_sentence(results)
    out = [f"## Inter-coder agreement: {results['codebook']}", "", methods, ""]
    level = ci_header(results)
    for q in results["results"]:
        out.append(
            md_table(
                summary_rows(q),
                [("statistic", "Statistic"), ("value", "Value"), ("ci", level), ("notes", "Notes")],
                title=question_title(results, q),
            )
        )
        if categories_line(q):
            out += [categories_line(q), ""]
        if method_line(q):
            out += [method_line(q), ""]
        cats = category_rows(q)
        if cats:
            columns = [("category", "Category"), ("share", "Share"), ("kappa", "Kappa"),
                       ("z", "z"), ("notes", "Notes")]  # fmt: skip
            out.append(md_table(cats, columns))
        codes = code_rows(q)
        if codes:
            what = "Reason" if q["kind"] == "yes_no_reasons" else "Code"
            columns = [("code", what), ("chosen", "Chosen"), ("kappa", "Kappa"),
                       ("alpha", "Alpha"), ("notes", "Notes")]  # fmt: skip
            out.append(md_table(codes, columns, title=codes_title(q)))
        columns = [("pair", "Coders"), ("items", "Items"), ("kappa", "Cohen's kappa"),
                   ("ci", level), ("agree", "Agreement"), ("band", "Band")]  # fmt: skip
        if pair_rows(q):
            out.append(md_table(pair_rows(q), columns))
        if pair_rows(q, "pairwise_weighted"):
            out.append(
                md_table(pair_rows(q, "pairwise_weighted"), columns, title=weighted_title(q))
            )
        out += left_out_lines(q, bullet="  - ", head="- ")  # a list item per figure
        out.append("")
    out.append("### References")
    out.append("")
    out += [f"- {ref}" for ref in cited_references(methods)]
    out.append("")
    out.append(
        f"<!-- annotate agree run {results.get('run_id')}: {results['n_labels']} labels, "
        f"sha256 {results['labels_sha256']} -->"
    )
    console.print("\n".join(out), markup=False, highlight=False, soft_wrap=True)
