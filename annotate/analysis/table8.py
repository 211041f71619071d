"""Table 8 of the ALMANAC paper: the mental-model label distribution per split part and
condition, as session-level means and SDs.

For each session and question: the share of each code among the session's actions with
that question answered. For each group of sessions (a condition, or all; a part of the
session split, or all): the mean of those shares over the group's sessions that answered
the question, and their sample SD (ddof = 1; none for a single session). Table 1's
per-session statistics of the same groups are `annotate stats` (the report's Data section).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from annotate.analysis.report_model import Chart, Section, Table
from annotate.codebook import Codebook, Question

ALL = "all"


def session_shares(answers: pd.DataFrame, question: Question) -> pd.DataFrame:
    """One row per session that answered ``question``, one column per code: the share of
    its answered actions with that code. ``answers``: action_id, session, question, value."""
    mine = answers[(answers["question"] == question.id) & answers["value"].notna()]
    seen = sorted(set(mine["value"]) - set(question.codes))
    counts = pd.crosstab(mine["session"], mine["value"])
    counts = counts.reindex(columns=[*question.codes, *seen], fill_value=0)
    return counts.div(counts.sum(axis=1), axis=0)


def groups(frame: pd.DataFrame, split: bool) -> list[tuple[str, str]]:
    """The (condition, part) groups: every condition and all; with a split, train, test
    and all."""
    conditions = sorted(frame["condition"].unique())
    conditions = [ALL, *conditions] if len(conditions) > 1 else conditions
    parts = [ALL, "train", "test"] if split else [ALL]
    return [(c, p) for c in conditions for p in parts]


def group_name(condition: str, part: str, split: bool) -> str:
    return f"{condition}, {part}" if split else condition


def label_distribution(
    answers: pd.DataFrame, book: Codebook, *, split: bool
) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """Rows (question, code, label, then ``GROUP mean``, ``GROUP sd`` per group) and the
    groups. ``answers``: action_id, session, condition, question, value (and ``split``,
    the session's part, with ``split``)."""
    sessions = answers.drop_duplicates("session").set_index("session")
    wanted = groups(sessions, split)
    rows: list[dict[str, Any]] = []
    for question in book.questions:
        if not question.codes or question.id not in set(answers["question"]):
            continue
        shares = session_shares(answers, question)
        n_row: dict[str, Any] = {"question": question.id, "code": "sessions", "label": ""}
        code_rows = []
        for code in shares.columns:
            option = question.option(code)
            named = {"yes": "Yes", "no": "No", "other": "Other"}
            label = option.label if option else named.get(code, code)
            code_rows.append({"question": question.id, "code": code, "label": label})
        for condition, part in wanted:
            members = sessions.index
            if condition != ALL:
                members = members[sessions.loc[members, "condition"] == condition]
            if part != ALL:
                members = members[sessions.loc[members, "split"] == part]
            values = shares.reindex([s for s in members if s in shares.index])
            name = group_name(condition, part, split)
            n_row[f"{name} mean"] = len(values)
            n_row[f"{name} sd"] = None
            for row, code in zip(code_rows, shares.columns, strict=True):
                column = values[code].to_numpy(dtype=float)
                row[f"{name} mean"] = float(np.mean(column)) if len(column) else None
                row[f"{name} sd"] = float(np.std(column, ddof=1)) if len(column) > 1 else None
        rows += [*code_rows, n_row]
    return rows, wanted


def table8_section(
    book: Codebook,
    answers: pd.DataFrame,
    *,
    describe: str,
    split: str | None,
) -> Section:
    """Table 8 with a chart per question (mean share per group, bars from mean - SD to
    mean + SD)."""
    section = Section(
        f"Table 8: {book.name} label distribution by split and condition",
        [
            describe,
            "Session-level mean and SD (sample SD, ddof = 1) of each code's share among a "
            "session's actions with the question answered; 'sessions' rows: the sessions "
            "in each group that answered it. Table 1 (the sessions' per-session action "
            "counts, `annotate stats" + (f" --split {split}" if split else "") + "`) is the "
            "Data section's table (dataset.csv)."
            + ("" if split else " Pass --split NAME for train and test columns."),
        ],
    )
    if answers.empty:
        section.paragraphs.append("No labels on the actions in this report.")
        return section
    rows, wanted = label_distribution(answers, book, split=split is not None)
    names = [group_name(c, p, split is not None) for c, p in wanted]
    columns = ["question", "code", "label", *(f"{g} {s}" for g in names for s in ("mean", "sd"))]
    percent = tuple(f"{g} {s}" for g in names for s in ("mean", "sd"))
    section.items.append(
        Table(
            f"table8_{book.name}",
            f"Table 8: {book.name} label shares per session, mean and SD, by split and condition",
            columns,
            rows,
            "mean, sd: of the sessions' shares; the sessions rows give how many sessions.",
            percent,
        )
    )
    for question in book.questions:
        mine = [r for r in rows if r["question"] == question.id and r["code"] != "sessions"]
        if not mine:
            continue
        section.items.append(_chart(book, question, mine, rows, names))
    return section


def _chart(
    book: Codebook,
    question: Question,
    mine: Sequence[dict[str, Any]],
    rows: Sequence[dict[str, Any]],
    names: Sequence[str],
) -> Chart:
    counts = next(r for r in rows if r["question"] == question.id and r["code"] == "sessions")
    shown = [r for r in mine if any((r.get(f"{g} mean") or 0) > 0 for g in names)] or list(mine)
    index = pd.Index([f"{r['label']} ({r['code']})" for r in shown], name="code")
    columns = pd.Index([f"{g} (sessions = {counts[f'{g} mean']})" for g in names], name="group")

    def grid(f: Any) -> pd.DataFrame:
        return pd.DataFrame(
            [[f(r, g) for g in names] for r in shown], index=index, columns=columns, dtype=float
        )

    mean = grid(lambda r, g: r[f"{g} mean"])
    sd = grid(lambda r, g: r[f"{g} sd"]).fillna(0.0)
    return Chart(
        f"table8_{book.name}_{question.id}",
        f"{book.name} {question.id}: share per session, mean and SD by group",
        "bars",
        mean,
        xlabel="mean share of a session's answers (bars: mean - SD to mean + SD)",
        ylabel=f"{question.id} code",
        caption=f"{question.id}: {question.prompt}",
        low=(mean - sd).clip(lower=0.0),
        high=(mean + sd).clip(upper=1.0),
    )
