"""The report's code distributions (each question's codes by condition, role, split), and
the mark on every table and chart that rests on a coder who failed its validation gate."""

from __future__ import annotations

from collections.abc import Sequence

from annotate.analysis.code_shares import chart_data, code_shares, question_codes, share_table
from annotate.analysis.coders import LabelSource
from annotate.analysis.grouping import parse_by
from annotate.analysis.report_model import Chart, Section, Table
from annotate.analysis.report_scope import Scope, grouped_actions
from annotate.codebook import TYPED_KINDS, Codebook


def distribution_section(
    codebook: Codebook,
    source: LabelSource,
    scope: Scope,
    by: str | Sequence[str],
    split: str | None,
    part: str | None = None,
) -> Section:
    by = parse_by(by)
    actions = grouped_actions(scope, source.labels["action_id"].unique(), by)
    joined = source.labels.merge(actions, on="action_id", how="inner")
    section = Section(f"Codes: {codebook.title}", [source.describe()])
    if joined.empty:
        section.paragraphs.append("No labels on the actions in this report.")
        return section
    groupings = by + [g for g in ("role",) if g not in by and scope.has_roles]
    if split and part not in ("train", "test"):  # one part: a by-split table says nothing
        groupings.append("split")
    for question in codebook.questions:
        answers = joined[joined["question"] == question.id]
        if answers.empty or question.kind in TYPED_KINDS:
            continue  # no codes to count: the probe section measures them
        multi = question.kind == "multi"
        seen = (
            sorted({c for cs in answers["codes"] for c in cs})
            if multi
            else sorted(answers["value"].dropna().unique())
        )
        codes = question_codes(question, seen, sets=multi)
        labels = {o.code: o.label for o in question.options}
        labels.update({"other": "Other", "yes": "Yes", "no": "No"})
        mark = source.mark()  # a coder that failed its gate, on every title and legend
        who = source.rests_on(answers)
        for grouping in groupings:
            shares, sizes = code_shares(answers, grouping, codes, multi=multi)
            key = f"{codebook.name}_{question.id}_by_{grouping}"
            what = "answers that include each code" if multi else "labelled actions"
            section.items.append(
                share_table(
                    key,
                    f"{codebook.name} {question.id}: share of each code by {grouping}{mark}",
                    shares,
                    sizes,
                    labels,
                    note=f"Share of {what} per {grouping}; the last row is n. Labels by {who}."
                    + "".join(f" {flag}" for flag in source.flags),
                )
            )
            data = chart_data(shares, sizes, labels)
            if mark:
                data.columns.name = f"{grouping}{mark}"
            section.items.append(
                Chart(
                    key,
                    f"{codebook.title} ({question.id}) by {grouping}{mark}",
                    "bars",
                    data,
                    xlabel=f"share of {what}",
                    ylabel="code",
                    caption=f"n per {grouping}: "
                    + ", ".join(f"{g} {int(n)}" for g, n in sizes.items())
                    + f". Labels by {who}."
                    + "".join(f" {flag}" for flag in source.flags),
                )
            )
    return section


def flag_failed_coders(
    section: Section, *sources: LabelSource, items: Sequence[Table | Chart] | None = None
) -> None:
    """Mark every table and chart of ``section`` (or those of ``items``) that rests on a
    coder who did not pass its validation gate (named with --coders): the title and the
    legend, and say why."""
    mark = "".join(dict.fromkeys(s.mark() for s in sources if s.mark()))
    if not mark:
        return
    for item in section.items if items is None else items:
        if mark not in item.title:
            item.title += mark
        if isinstance(item, Chart):
            if item.kind == "bars" and mark not in str(item.data.columns.name or ""):
                item.data.columns.name = f"{item.data.columns.name or 'series'}{mark}"
            item.caption = (item.caption + " " if item.caption else "") + mark.strip()
    for flag in dict.fromkeys(f for s in sources for f in s.flags):
        if flag not in section.paragraphs:
            section.paragraphs.append(flag)
