"""Figure 4 of the ALMANAC paper: mental-model alignment by grounding act and over the task.

Left: within each grounding act (the report's codebook, e.g. ``traum``), per condition, the
share of actions whose actor reported being on the same page (the grounded answer of the
yes/no question, Q4 = yes), with n and a 95% Wilson interval per bar.

Right: over task progress, per condition, the share of *grounded* answers of each
single-choice question (team goal Q1, partner intent Q2, self-reasoning Q3): one line per
question and condition. An action at position p (0 .. n - 1 among all its session's
actions, in order) is in bin floor(bins * p / n); deciles by default.

Which codes are grounded is declared in the codebook (``grounded: [t3]`` on a question);
a codebook that declares none gets the ALMANAC defaults (Q1 t3, Q2 p1, Q3 r1, Q4 yes) for
the questions that have those codes, and the report says which applied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from annotate.analysis.proportions import Share
from annotate.analysis.report_model import Chart, Section, Table
from annotate.codebook import Codebook, Question

ALMANAC_GROUNDED: dict[str, tuple[str, ...]] = {
    "Q1": ("t3",),
    "Q2": ("p1",),
    "Q3": ("r1",),
    "Q4": ("yes",),
}
DECILES = 10
RIGHT = "figure4_right"  # the key of the right panel's table and chart


@dataclass(frozen=True)
class Grounded:
    """The grounded codes of a mental-model codebook, per question."""

    codebook: Codebook
    codes: dict[str, tuple[str, ...]]
    declared: bool

    @property
    def alignment(self) -> Question | None:
        """The perceived-alignment question: the first yes/no question with grounded codes."""
        return next(
            (q for q in self.codebook.questions if q.id in self.codes and q.kind != "single"),
            None,
        )

    @property
    def lines(self) -> list[Question]:
        """The single-choice questions with grounded codes (one line each)."""
        return [q for q in self.codebook.questions if q.id in self.codes and q.kind == "single"]

    def describe(self) -> str:
        which = ", ".join(f"{q} {' or '.join(c)}" for q, c in self.codes.items())
        if self.declared:
            return f"Grounded answers (declared in codebook {self.codebook.name}): {which}."
        return (
            f"Grounded answers: {which} (the ALMANAC defaults: codebook {self.codebook.name} "
            "declares none; declare them with `grounded: [CODE]` on a question)."
        )


def grounded_codes(book: Codebook) -> Grounded | None:
    """The codebook's declared grounded codes, else the ALMANAC defaults that fit it (None
    when neither gives any)."""
    declared = {q.id: tuple(q.grounded) for q in book.questions if q.grounded}
    if declared:
        return Grounded(book, declared, True)
    fitting = {}
    for q in book.questions:
        codes = ALMANAC_GROUNDED.get(q.id, ())
        if codes and all(c in q.codes for c in codes):
            fitting[q.id] = codes
    return Grounded(book, fitting, False) if fitting else None


def progress_label(i: int, bins: int) -> str:
    return f"{100 * i // bins}-{100 * (i + 1) // bins}%"


def progress_bins(actions: pd.DataFrame, bins: int) -> pd.Series:
    """Each action's bin: floor(bins * position / session length)."""
    return (actions["position"] * bins // actions["session_length"]).astype(int)


def _option_label(question: Question, code: str) -> str:
    option = question.option(code)
    return option.label if option is not None else {"yes": "Yes", "no": "No"}.get(code, code)


# -- left: alignment per grounding act --------------------------------------------------


def alignment_by_act(
    wide: pd.DataFrame, acts: pd.Series, grounded: Grounded
) -> list[dict[str, Any]]:
    """Rows (act, condition, n, grounded, share, CI) over the actions with an act and an
    answer to the alignment question; ``wide`` has one row per action (``action_id``,
    ``condition`` and a column per question), ``acts`` maps action id to its act."""
    q = grounded.alignment
    assert q is not None
    answered = wide[wide[q.id].notna()].assign(act=lambda f: f["action_id"].map(acts))
    answered = answered[answered["act"].notna()]
    hit = answered[q.id].isin(grounded.codes[q.id])
    rows = []
    for (act, condition), group in answered.assign(hit=hit).groupby(["act", "condition"]):
        share = Share(int(group["hit"].sum()), len(group))
        low, high = share.ci
        rows.append(
            {
                "act": act,
                "condition": condition,
                "n": share.n,
                "grounded": share.k,
                "share": share.share,
                "ci_low": low,
                "ci_high": high,
            }
        )
    return rows


def _left_items(
    section: Section,
    wide: pd.DataFrame,
    acts: pd.Series,
    act_q: Question,
    act_book: str,
    grounded: Grounded,
) -> None:
    q = grounded.alignment
    assert q is not None
    rows = alignment_by_act(wide, acts, grounded)
    if not rows:
        section.paragraphs.append(
            f"Figure 4, left: no action has both a {act_book} code and a {q.id} answer."
        )
        return
    order = [c for c in act_q.codes if any(r["act"] == c for r in rows)]
    order += sorted({r["act"] for r in rows} - set(order))
    rank = {a: i for i, a in enumerate(order)}
    rows.sort(key=lambda r: (rank[r["act"]], r["condition"]))
    what = f"{q.id} = {' or '.join(grounded.codes[q.id])}"
    section.items.append(
        Table(
            "figure4_left",
            f"Figure 4, left: perceived alignment ({what}) within each {act_book} "
            f"{act_q.id} code, by condition",
            ["act", "condition", "n", "grounded", "share", "ci_low", "ci_high"],
            rows,
            f"n: actions with this act and a {q.id} answer; grounded: of them, {what}; "
            "ci_low, ci_high: the 95% Wilson score interval of the share.",
            ("share", "ci_low", "ci_high"),
        )
    )
    conditions = sorted({r["condition"] for r in rows})
    frame = pd.DataFrame(rows).set_index(["act", "condition"])
    totals = frame.groupby(level="condition")["n"].sum()
    labels = {c: f"{_option_label(act_q, c)}" for c in order}
    index = pd.Index([labels[a] for a in order], name="act")
    columns = pd.Index([f"{c} (n = {int(totals[c])})" for c in conditions], name="condition")

    def grid(field: str) -> pd.DataFrame:
        values = frame[field].unstack("condition").reindex(index=order, columns=conditions)
        values.index, values.columns = index, columns
        return values.astype(float)

    section.items.append(
        Chart(
            "figure4_left",
            f"Perceived alignment ({what}) by {act_book} act and condition",
            "bars",
            grid("share"),
            xlabel=f"share of actions with {what} (95% CI; n: actions with {q.id} answered)",
            ylabel=f"{act_book} {act_q.id}",
            n=grid("n").fillna(0),
            low=grid("ci_low"),
            high=grid("ci_high"),
        )
    )


# -- right: grounded answers over task progress -------------------------------------------


def grounded_over_progress(
    wide: pd.DataFrame, grounded: Grounded, bins: int
) -> list[dict[str, Any]]:
    """Rows (question, condition, progress, n, grounded, share) for each single-choice
    question with grounded codes; ``wide`` also has ``position`` and ``session_length``."""
    binned = wide.assign(bin=progress_bins(wide, bins))
    rows = []
    for q in grounded.lines:
        answered = binned[binned[q.id].notna()]
        hit = answered[q.id].isin(grounded.codes[q.id])
        counts = answered.assign(hit=hit).groupby(["condition", "bin"])["hit"].agg(["sum", "size"])
        for condition in sorted(answered["condition"].unique()):
            for i in range(bins):
                k, n = (
                    (
                        int(counts.loc[(condition, i), "sum"]),
                        int(counts.loc[(condition, i), "size"]),
                    )
                    if (condition, i) in counts.index
                    else (0, 0)
                )
                rows.append(
                    {
                        "question": q.id,
                        "codes": " ".join(grounded.codes[q.id]),
                        "condition": condition,
                        "progress": progress_label(i, bins),
                        "n": n,
                        "grounded": k,
                        "share": k / n if n else None,
                    }
                )
    return rows


def _right_items(section: Section, wide: pd.DataFrame, grounded: Grounded, bins: int) -> None:
    rows = grounded_over_progress(wide, grounded, bins)
    if not rows:
        section.paragraphs.append("Figure 4, right: no answer to a question with grounded codes.")
        return
    what = ", ".join(f"{q.id} = {' or '.join(grounded.codes[q.id])}" for q in grounded.lines)
    part = "decile" if bins == DECILES else f"1/{bins}"
    section.items.append(
        Table(
            RIGHT,
            f"Figure 4, right: grounded answers over task progress ({what}), by condition",
            ["question", "codes", "condition", "progress", "n", "grounded", "share"],
            rows,
            f"progress: the {part} of the session an action falls in (its position among all "
            "the session's actions); n: actions there with the question answered; grounded: "
            "of them, with a grounded code. "
            + "; ".join(
                f"{q.id} {c} = {_option_label(q, c)}"
                for q in grounded.lines
                for c in grounded.codes[q.id]
            ),
            ("share",),
        )
    )
    frame = pd.DataFrame(rows)
    labels = [progress_label(i, bins) for i in range(bins)]
    series = {}
    for (question, condition), group in frame.groupby(["question", "condition"], sort=False):
        codes = " or ".join(grounded.codes[str(question)])
        shares = group.set_index("progress")["share"].reindex(labels)
        series[f"{question} = {codes}, {condition}"] = shares.astype(float).to_numpy()
    data = pd.DataFrame(series, index=pd.Index(labels, name="progress"))
    data.columns.name = "question, condition"
    section.items.append(
        Chart(
            RIGHT,
            "Grounded team goal, partner intent and self-reasoning over task progress",
            "lines",
            data,
            xlabel=f"position in session ({part}; n per point in figure4_right.csv)",
            ylabel="share of grounded answers",
            caption="; ".join(
                f"{q.id}: {q.prompt} "
                + " / ".join(_option_label(q, c) for c in grounded.codes[q.id])
                for q in grounded.lines
            ),
        )
    )


def on_acts(section: Section) -> list[Table | Chart]:
    """The items of a Figure 4 section that rest on the grounding acts too: all but the right
    panel, which rests on the mental-model answers alone."""
    return [item for item in section.items if item.key != RIGHT]


def figure4_section(
    grounded: Grounded,
    wide: pd.DataFrame,
    *,
    describe: str,
    acts: pd.Series | None = None,
    act_question: Question | None = None,
    act_book: str = "",
    act_describe: str = "",
    bins: int = DECILES,
) -> Section:
    """The section of both panels. ``wide``: one row per action with its mental-model
    answers (a column per question), ``condition``, ``position`` and ``session_length``;
    ``acts``: action id -> its grounding act (no left panel without it)."""
    section = Section(
        f"Figure 4: alignment by grounding act and over the task ({grounded.codebook.name})",
        [describe, grounded.describe()],
    )
    if act_describe:
        section.paragraphs.append(act_describe)
    for q in grounded.codes:
        if q not in wide:
            wide = wide.assign(**{q: pd.NA})
    if grounded.alignment is not None and acts is not None and act_question is not None:
        _left_items(section, wide, acts, act_question, act_book, grounded)
    elif grounded.alignment is None:
        section.paragraphs.append(
            "Figure 4, left: the codebook has no yes/no question with grounded codes."
        )
    else:
        section.paragraphs.append(
            "Figure 4, left: needs a grounding act per action (report on the act codebook, "
            "e.g. --codebook traum)."
        )
    if grounded.lines:
        _right_items(section, wide, grounded, bins)
    return section
