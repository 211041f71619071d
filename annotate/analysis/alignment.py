"""Partner alignment in `annotate report`: do the partners' own reports agree, action by
action, by act and over the session?

Self-reports are the answers of coders ``self:NAME`` (imported from the probe logs with
``import-labels --mapping``, or a participant's own coding). For one question at one action,
the action counts when two or more participants reported on it, and is *aligned* when they
all gave the same answer: the same code of a single-choice question ("other" whatever its
text), the same yes or no (not the reasons), the same set of a multi-select question. Text
questions have no codes to compare and are left out. The counting is SQL
(:class:`annotate.store.self_reports.SelfReportsMixin`); this module shapes the figures:

- by act: the action type, and, when the report's codebook is another one with a
  single-choice question, the action's code there (from the report's label source: gold,
  then the corpus coding, then a validated LLM coder, or ``--coders``);
- over session progress: an action at position p (0 .. n - 1, all the session's actions in
  order) is in decile floor(10 p / n).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from annotate.analysis.report_model import Chart, Section, Table
from annotate.codebook import Codebook, Question
from annotate.errors import AnnotateError
from annotate.store import Store

N_DECILES = 10
ALL = "all"


@dataclass(frozen=True)
class AlignmentCount:
    """Actions with two or more self-reports on ``question`` in ``group``, and how many of
    them the reports agree on."""

    question: str
    group: str
    actions: int
    aligned: int

    @property
    def share(self) -> float:
        return self.aligned / self.actions


@dataclass(frozen=True)
class ActSource:
    """Where an action's act comes from: a question of another codebook, by the first of
    ``coders`` who answered it."""

    codebook: Codebook
    question: Question
    coders: tuple[str, ...]


@dataclass(frozen=True)
class PartnerAlignment:
    codebook: Codebook
    questions: tuple[str, ...]
    """The coded questions compared (text questions are left out)."""
    by_type: tuple[AlignmentCount, ...]
    by_decile: tuple[AlignmentCount, ...]
    by_code: tuple[AlignmentCount, ...] = ()
    act: ActSource | None = None

    @property
    def text_questions(self) -> list[str]:
        return [q.id for q in self.codebook.questions if q.kind == "text"]


def decile_label(i: int) -> str:
    return f"{10 * i}-{10 * (i + 1)}%"


def _counts(rows: Sequence[dict[str, Any]], label: Any = str) -> tuple[AlignmentCount, ...]:
    return tuple(
        AlignmentCount(r["question"], label(r["grp"]), int(r["actions"]), int(r["aligned"]))
        for r in rows
    )


def partner_alignment(
    store: Store,
    codebook: Codebook,
    *,
    act: ActSource | None = None,
    sessions: Collection[str] | None = None,
) -> PartnerAlignment:
    """Partner alignment on ``codebook``'s coded questions (over ``sessions`` only, when
    given)."""
    questions = tuple(q.id for q in codebook.questions if q.kind != "text")
    counts = store.partner_alignment_counts(
        codebook.name,
        questions,
        bins=N_DECILES,
        sessions=sessions,
        act=None if act is None else (act.codebook.name, act.question.id, act.coders),
    )
    return PartnerAlignment(
        codebook,
        questions,
        _counts(counts.by_type),
        _counts(counts.by_progress, lambda g: decile_label(int(g))),
        _counts(counts.by_code),
        act if counts.by_code else None,
    )


# -- the report's section -------------------------------------------------------------------


def _wide(
    counts: Sequence[AlignmentCount], questions: Sequence[str], groups: Sequence[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Shares and n, one row per group and one column per question (NaN/0 where none)."""
    share = pd.DataFrame(float("nan"), index=list(groups), columns=list(questions))
    n = pd.DataFrame(0, index=list(groups), columns=list(questions))
    for c in counts:
        share.loc[c.group, c.question] = c.share
        n.loc[c.group, c.question] = c.actions
    return share, n


def _table(
    key: str,
    title: str,
    first: str,
    counts: Sequence[AlignmentCount],
    questions: Sequence[str],
    groups: Sequence[str],
    note: str,
    *,
    total: bool = True,
) -> Table:
    rows: list[dict[str, Any]] = []
    for g in groups:
        row: dict[str, Any] = {first: g}
        for q in questions:
            hit = next((c for c in counts if c.group == g and c.question == q), None)
            row[q] = None if hit is None else hit.share
            row[f"{q} n"] = 0 if hit is None else hit.actions
        rows.append(row)
    if total:
        row = {first: ALL}
        for q in questions:
            mine = [c for c in counts if c.question == q]
            n = sum(c.actions for c in mine)
            row[q] = sum(c.aligned for c in mine) / n if n else None
            row[f"{q} n"] = n
        rows.append(row)
    columns = [first, *(x for q in questions for x in (q, f"{q} n"))]
    return Table(key, title, columns, rows, note, tuple(questions))


def _chart(
    key: str,
    title: str,
    kind: str,
    counts: Sequence[AlignmentCount],
    questions: Sequence[str],
    groups: Sequence[str],
    labels: dict[str, str],
    xlabel: str,
    ylabel: str,
) -> Chart:
    share, n = _wide(counts, questions, groups)
    share.index = n.index = pd.Index([labels.get(g, g) for g in groups])
    share.columns.name = n.columns.name = "question"
    return Chart(key, title, kind, share, xlabel, ylabel, n=n)  # type: ignore[arg-type]


def _present(counts: Sequence[AlignmentCount], order: Sequence[str]) -> list[str]:
    seen = {c.group for c in counts}
    return [g for g in order if g in seen] + sorted(seen - set(order))


def alignment_section(result: PartnerAlignment, scope: str = "") -> Section:
    cb = result.codebook
    qs = [q for q in result.questions if any(c.question == q for c in result.by_type)]
    prompts = "; ".join(f"{q.id} = {q.prompt}" for q in cb.questions if q.id in qs)
    section = Section(
        f"Partner alignment: {cb.title} self-reports",
        [
            f"Coders self:NAME on {cb.name}{scope}: for each action and question, the "
            "participants who reported on it agree when they all gave the same answer (the "
            "code; for a yes/no question the yes or no, not the reasons). n: actions with "
            "two or more self-reports on the question. " + prompts + ".",
        ],
    )
    if result.text_questions:
        section.paragraphs.append(
            "Text questions are left out (no codes to compare): "
            + ", ".join(result.text_questions)
            + "."
        )
    if not result.by_type:
        section.paragraphs.append(
            "No action has self-reports of two participants on the same question."
        )
        return section
    types = _present(result.by_type, [])
    note = "Share of actions on which the partners' self-reports agree; 'Q n' is n."
    key = f"{cb.name}_partner_alignment"
    section.items.append(
        _table(
            f"{key}_by_type",
            "Partner alignment by action type",
            "action type",
            result.by_type,
            qs,
            types,
            note,
        )
    )
    section.items.append(
        _chart(
            f"{key}_by_type",
            "Partner alignment by action type",
            "bars",
            result.by_type,
            qs,
            types,
            {},
            "share of actions aligned (n: actions with both reports)",
            "action type",
        )
    )
    if result.act is not None and result.by_code:
        a = result.act
        codes = _present(result.by_code, a.question.codes)
        labels = {
            o.code: f"{o.label} ({o.code})" if o.label != o.code else o.code
            for o in a.question.options
        }
        who = ", then ".join(a.coders)
        what = f"{a.codebook.name} {a.question.id}"
        section.items.append(
            _table(
                f"{key}_by_{a.codebook.name}",
                f"Partner alignment by {what} code",
                "act",
                result.by_code,
                qs,
                codes,
                f"{note} The act of each action: {who} (the first who answered).",
            )
        )
        section.items.append(
            _chart(
                f"{key}_by_{a.codebook.name}",
                f"Partner alignment by {what} code",
                "bars",
                result.by_code,
                qs,
                codes,
                labels,
                "share of actions aligned (n: actions with both reports)",
                what,
            )
        )
    deciles = [decile_label(i) for i in range(N_DECILES)]
    section.items.append(
        _table(
            f"{key}_progress",
            "Partner alignment over session progress (deciles)",
            "progress",
            result.by_decile,
            qs,
            deciles,
            note + " Decile of the action's position among all its session's actions.",
            total=False,
        )
    )
    section.items.append(
        _chart(
            f"{key}_progress",
            "Partner alignment over session progress",
            "lines",
            result.by_decile,
            qs,
            deciles,
            {},
            "position in session (decile; n: actions with both reports)",
            "share of actions aligned",
        )
    )
    return section


def alignment_sections(
    store: Store,
    report_book: Codebook,
    act_coders: Sequence[str],
    sessions: Collection[str] | None = None,
    scope: str = "",
) -> list[Section]:
    """A section per codebook with two or more self-reporters; by act on the report's
    codebook (``act_coders`` in priority order) when that is another codebook."""
    sections = []
    for name in store.self_report_codebooks():
        try:
            book = store.stored_codebook(name)
        except AnnotateError:
            continue
        act = None
        single = next((q for q in report_book.questions if q.kind == "single"), None)
        if report_book.name != name and single is not None and act_coders:
            act = ActSource(report_book, single, tuple(act_coders))
        result = partner_alignment(store, book, act=act, sessions=sessions)
        sections.append(alignment_section(result, scope))
    return sections
