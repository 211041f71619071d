"""`annotate report`: the tables and figures of a dataset paper, from the project file.

:func:`build_report` computes everything (tables and chart data; no drawing, no files);
:func:`write_report` draws the PNG charts (:mod:`annotate.analysis.charts`, matplotlib) and
writes one self-contained HTML page (:mod:`annotate.analysis.html`) plus a CSV per table.

Which labels count: for each action and question the first coder of the priority list who
answered it (default: ``gold``, then the corpus coding, then LLM coders that passed their
gate; see :mod:`annotate.analysis.coders`). The report says which coder supplied how many actions.
Mental-model answers are taken whole: for each action, every answer comes from the first
coder of the list who answered any of its questions, so Q1, Q2 and Q4 of one action are
never mixed from two coders.

With ``split`` and ``part`` (train or test), every table and chart is over that part's
sessions only: the dataset table, the code shares, the mental-model tables and the
agreement of the human coders. Stored agreement runs and LLM validation runs are shown as
they were run (over their own items), and the page says so.

Labels by participants (coders ``self:NAME``) count as any other source: with
``label_from="own-reports"`` (``--source own-reports``), or by default when a codebook's only
labels are participants' reports, each action's label is its own actor's report (the coder
``self:<the action's participant>``; see :mod:`annotate.analysis.coders`).

For every labelled codebook with *grounded* codes (declared in the codebook, else the
ALMANAC defaults Q1 t3, Q2 p1, Q3 r1, Q4 yes; :mod:`annotate.analysis.figure4`):

- Figure 4, left: within each code of the report's codebook (the grounding act, for
  ``traum``), per condition, the share of Q4 = yes with n and a 95% Wilson interval; the Q2
  answers within each code;
- Figure 4, right: the share of grounded answers of Q1, Q2 and Q3 over task progress
  (deciles of the position in the session), per condition;
- Table 8 (:mod:`annotate.analysis.table8`): each code's share per session, mean and SD
  per condition (and split part).

Agreement: for every labelled codebook and question, the human coders (all but ``gold`` and
``llm:*``) via :func:`agreement.agreement_report` (or :func:`agreement.multi_select_report`
for multi-select questions), plus stored agreement runs and LLM validation runs when the
tables for them exist.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from annotate.analysis.alignment import alignment_sections
from annotate.analysis.coders import LabelSource, label_source
from annotate.analysis.figure4 import (
    DECILES,
    Grounded,
    figure4_section,
    grounded_codes,
    on_acts,
)
from annotate.analysis.grouping import groups_of, parse_by
from annotate.analysis.report_model import Chart, Report, ReportFiles, Section, Table
from annotate.analysis.stats import MEASURES, NO_VALUE, role_key, stats
from annotate.analysis.table8 import table8_section
from annotate.codebook import Codebook, Question
from annotate.coders import SELF_PREFIX
from annotate.errors import AnnotateError, NotFoundError, UsageError
from annotate.reliability.settings import (
    DEFAULT_CI,
    DEFAULT_CI_METHOD,
    DEFAULT_N_BOOT,
    DEFAULT_SEED,
    settings_words,
)
from annotate.render.cells import safe_cell
from annotate.store import Store

PARTS = ("all", "train", "test")
NO_LLM_VALIDATION = "no LLM validation stored"


# -- shares -------------------------------------------------------------------------------


def _ordered(values: Sequence[str], column: str) -> list[str]:
    if column == "role":
        return sorted(values, key=role_key)
    return sorted(values)


def question_codes(
    question: Question | None, seen: Sequence[str], *, sets: bool = False
) -> list[str]:
    """The question's codes in codebook order (the codes a value may hold, or with ``sets``
    the codes a set may hold: multi-select options, yes/no reasons), then any other code
    seen in the labels."""
    known = [] if question is None else (question.set_codes if sets else question.codes)
    return list(known) + sorted(set(seen) - set(known))


def option_label(code: str, labels: Mapping[str, str]) -> str:
    """A code as charts show it: its codebook label, with the code when the two differ
    (``Request repair (ReqRepair)``; ``Acknowledge``; a code without a label as is)."""
    label = labels.get(str(code))
    if not label or label == code:
        return str(code)
    if label.lower() == str(code).lower():
        return label
    return f"{label} ({code})"


def _with_n(name: Any, n: Any) -> str:
    return f"{name} (n = {int(n)})"


def code_shares(
    answers: pd.DataFrame, by: str, codes: Sequence[str], *, multi: bool = False
) -> tuple[pd.DataFrame, pd.Series]:
    """Share of each code (rows) within each group of ``by`` (columns), and the group sizes.

    Multi-select: the share of answers that include the code (shares may add up past 1).
    """
    groups = _ordered(list(answers[by].unique()), by)
    sizes = answers.groupby(by).size().reindex(groups, fill_value=0)
    if multi:
        counts = pd.DataFrame(
            {
                g: [sum(c in cs for cs in answers.loc[answers[by] == g, "codes"]) for c in codes]
                for g in groups
            },
            index=list(codes),
        )
    else:
        counts = pd.crosstab(answers["value"], answers[by]).reindex(
            index=list(codes), columns=groups, fill_value=0
        )
    shares = counts.div(sizes.replace(0, np.nan), axis=1).fillna(0.0)
    shares.index.name, shares.columns.name = "code", by
    return shares.astype(float), sizes


def _share_table(
    key: str,
    title: str,
    shares: pd.DataFrame,
    sizes: pd.Series,
    labels: dict[str, str],
    n_label: str = "labelled actions",
    note: str = "",
) -> Table:
    groups = [str(g) for g in shares.columns]
    rows = [
        {"code": code, "label": labels.get(str(code), ""), **dict(zip(groups, values, strict=True))}
        for code, values in zip(shares.index, shares.to_numpy().tolist(), strict=True)
    ]
    rows.append({"code": "n", "label": n_label, **{str(g): int(n) for g, n in sizes.items()}})
    return Table(key, title, ["code", "label", *groups], rows, note, tuple(groups))


def _chart_data(shares: pd.DataFrame, sizes: pd.Series, labels: Mapping[str, str]) -> pd.DataFrame:
    """Drop codes nobody used in any group (the table keeps them); codes are shown with
    their labels and each group (a series) with its n."""
    data = shares[(shares > 0).any(axis=1)].copy()
    data.index = pd.Index([option_label(c, labels) for c in data.index], name="code")
    data.columns = pd.Index(
        [_with_n(c, sizes.get(c, 0)) for c in data.columns], name=shares.columns.name
    )
    return data


# -- the sections -------------------------------------------------------------------------


FACT_COLUMNS = ["action_id", "session", "condition", "role", "action_type"]


class Scope:
    """The actions a report covers (every session, or one part of a session split),
    without holding them: per-session counts from one ``GROUP BY`` in SQL, and a frame of
    the actions a table needs (the labelled ones) when it asks for it."""

    def __init__(self, store: Store, parts: dict[str, str] | None, part: str | None):
        self.store = store
        self.parts = parts
        self.part = part if part in ("train", "test") else None
        rows = store.analysis.session_type_counts()
        if self.part is not None and parts is not None:
            rows = [r for r in rows if parts.get(r["session"]) == self.part]
        self.counts = rows
        self.sessions = {r["session"] for r in rows}
        self.n_actions = sum(r["n"] for r in rows)
        self.has_roles = any(r["role"] is not None for r in rows)

    @property
    def empty(self) -> bool:
        return self.n_actions == 0

    def frame(self, ids: Collection[str], *, positions: bool = False) -> pd.DataFrame:
        """The actions of ``ids`` in scope: session, condition, role, action type (and with
        ``positions`` the progress bin of each in its session), split part when split."""
        columns = FACT_COLUMNS + (["position", "session_length"] if positions else [])
        frame = pd.DataFrame(
            self.store.analysis.action_facts(ids, positions=positions), columns=columns
        )
        frame["condition"] = frame["condition"].fillna(NO_VALUE)
        frame["role"] = frame["role"].fillna(NO_VALUE)
        if self.parts is not None:
            frame["split"] = frame["session"].map(self.parts).fillna(NO_VALUE)
            if self.part is not None:
                frame = frame[frame["split"] == self.part]
        return frame

    def action_ids(self) -> list[str]:
        """Every action id in scope (only for one part of a split)."""
        return self.store.analysis.action_ids_of_sessions(self.sessions)


def _mean_sd(mean: float | None, sd: float | None) -> str:
    if mean is None:
        return "-"
    return f"{mean:.1f}" + (f" ({sd:.1f})" if sd is not None else "")


def data_section(store: Store, split: str | None, scope: Scope, part: str | None = None) -> Section:
    rows = stats(store, split, counts=scope.counts if scope.part is None else None)
    if part in ("train", "test"):
        rows = [r for r in rows if r["split"] == part]
    shown = [
        {
            **({"split": r["split"]} if split else {}),
            "condition": r["condition"],
            "role": r["role"],
            "sessions": r["sessions"],
            "actions": r["actions"],
            **{f"{m} per session": _mean_sd(r[f"{m}_mean"], r[f"{m}_sd"]) for m in MEASURES},
        }
        for r in rows
    ]
    columns = [
        *(["split"] if split else []),
        "condition",
        "role",
        "sessions",
        "actions",
        *(f"{m} per session" for m in MEASURES),
    ]
    text = [
        f"{len(scope.sessions)} sessions and {scope.n_actions} actions"
        + (f" in the {part} part of the split." if part in ("train", "test") else "."),
        "Per session: mean (SD, sample standard deviation). Role rows count that role's "
        "actions only.",
    ]
    return Section(
        "Data",
        text,
        [Table("dataset", "Sessions and actions per session", columns, shown)],
    )


def grouped_actions(scope: Scope, action_ids: Collection[str], by: Sequence[str]) -> pd.DataFrame:
    """The actions in scope with the columns of :meth:`Scope.frame` and of each grouping of
    ``by`` (``meta.*`` paths and the columns the frame lacks: :func:`groups_of`)."""
    actions = scope.frame(action_ids)
    extra = [b for b in by if b not in actions.columns]
    if extra and not actions.empty:
        actions = actions.merge(
            groups_of(scope.store, actions["action_id"], extra), on="action_id", how="left"
        )
    return actions


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
        if answers.empty or question.kind in ("text", "number"):
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
                _share_table(
                    key,
                    f"{codebook.name} {question.id}: share of each code by {grouping}{mark}",
                    shares,
                    sizes,
                    labels,
                    note=f"Share of {what} per {grouping}; the last row is n. Labels by {who}."
                    + "".join(f" {flag}" for flag in source.flags),
                )
            )
            data = _chart_data(shares, sizes, labels)
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


def tgco_section(
    store: Store, codebook: Codebook, source: LabelSource, scope: Scope, by: Sequence[str]
) -> Section | None:
    """TGCO's metrics and outcome composition per group, for a question coded with its
    five outcomes (:mod:`annotate.analysis.tgco_metrics`)."""
    from annotate.analysis import tgco_metrics as tm
    from annotate.rules import tgco

    question = next((q for q in codebook.questions if tm.is_tgco(q.codes)), None)
    if question is None:
        return None
    labels = source.labels[source.labels["question"] == question.id]
    frame = labels[["action_id", "coder", "value"]].rename(columns={"value": "outcome"})
    frame = frame.merge(grouped_actions(scope, frame["action_id"], by), on="action_id")
    section = Section("Trace-grounded metrics (TGCO)", [tm.__doc__.split("\n\n")[1]])
    if frame.empty:
        section.paragraphs.append("No TGCO outcomes on the actions in this report.")
        return section
    facts = pd.DataFrame(
        store.analysis.action_fields(frame["action_id"], ["content"], ["tokens"]),
        columns=["action_id", "content", "tokens"],
    )
    words = facts["content"].fillna("").str.split().str.len()
    facts["tokens"] = pd.to_numeric(facts["tokens"], errors="coerce").fillna(words)
    frame = frame.merge(facts[["action_id", "tokens"]], on="action_id", how="left")
    rule = "rule:" + tgco.NAME
    delayed = dict(store.analysis.label_meta_values(codebook.name, question.id, rule, "delayed"))
    frame["delayed"] = [
        bool(delayed[a]) if c == rule and delayed.get(a) is not None else None
        for a, c in zip(frame["action_id"], frame["coder"], strict=True)
    ]
    for grouping in by:
        rows = tm.metrics_by(frame, grouping)
        shown = [
            {k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()} for r in rows
        ]
        key = f"{codebook.name}{tm.METRICS_KEY}{grouping}"
        section.items.append(
            Table(
                key,
                f"TGCO metrics by {grouping}",
                [grouping, *tm.METRIC_COLUMNS],
                shown,
                "n = messages coded; rates as defined above; - where a denominator is 0.",
            )
        )
        stacked = tm.composition(rows, grouping)
        stacked = stacked.loc[:, (stacked > 0).any(axis=0)]
        section.items.append(
            Chart(
                f"{codebook.name}_composition_by_{grouping}",
                f"TGCO outcome composition by {grouping}",
                "stacked",
                stacked,
                xlabel="share of messages (n per group)",
                ylabel=grouping,
            )
        )
    return section


def _mental_model_wide(source: LabelSource, questions: Sequence[str]) -> pd.DataFrame:
    """One row per action, one column per question, from a ``per_action`` source (each
    action's answers come from one coder)."""
    assert source.per_action
    wide = source.labels.pivot_table(
        index="action_id", columns="question", values="value", aggfunc="first"
    )
    for q in questions:
        if q not in wide:
            wide[q] = np.nan
    return wide.reset_index()


def mental_model_books(store: Store) -> list[tuple[Codebook, Grounded]]:
    """The labelled codebooks with grounded codes (declared, or the ALMANAC defaults)."""
    books = []
    for name in store.labels.labelled_codebooks():
        try:
            book = store.codebooks.stored_codebook(name)
        except AnnotateError:
            continue
        grounded = grounded_codes(book)
        if grounded is not None:
            books.append((book, grounded))
    return books


def mental_model_sections(
    store: Store,
    codebook: Codebook,
    source: LabelSource,
    scope: Scope,
    coders: Sequence[str] | None,
    *,
    label_from: str | None = None,
    split: str | None = None,
    bins: int = DECILES,
) -> list[Section]:
    """Per mental-model codebook: Figure 4 (both panels) and Table 8, and, within each code
    of the report's codebook, the Q2 answers."""
    sections = []
    for mm_book, grounded in mental_model_books(store):
        available = store.labels.coders(mm_book.name)
        mm_coders = [c for c in coders or () if c in available] or None
        wanted = label_from if _has_self(available) else None
        full = label_source(
            store, mm_book.name, mm_coders, required=False, per_action=True, source=wanted
        )
        ids = full.labels["action_id"].unique()
        actions = scope.frame(ids, positions=len(ids) > 0)  # positions: a pass over every action
        mm = full.restricted(actions["action_id"])
        if mm.labels.empty:
            section = Section(f"Mental model: {mm_book.name}", [mm.describe()])
            section.paragraphs.append(
                "No mental-model labels on the actions in this report."
                if not full.labels.empty
                else "Mental-model labels exist, but none by gold or an LLM coder, and no "
                "participant's report on their own actions; pass --coders."
            )
            sections.append(section)
            continue
        wide = _mental_model_wide(mm, [q.id for q in mm_book.questions]).merge(
            actions, on="action_id", how="inner"
        )
        acts = act_q = None
        act_text = ""
        if codebook.name != mm_book.name:
            act_q = next((q for q in codebook.questions if q.kind == "single"), None)
            if act_q is not None:
                frame = source.labels[source.labels["question"] == act_q.id]
                acts = frame.set_index("action_id")["value"]
                act_text = f"Acts: {source.describe()}"
        figure = figure4_section(
            grounded,
            wide,
            describe=mm.describe(),
            acts=acts,
            act_question=act_q,
            act_book=codebook.name,
            act_describe=act_text,
            bins=bins,
        )
        if act_q is not None and "Q2" in wide.columns:
            _act_items(figure, codebook, act_q, source, wide, mm_book)
        flag_failed_coders(figure, mm)  # every panel rests on the answers
        with_acts = on_acts(figure)  # the right panel does not rest on the acts' coder
        if with_acts:
            flag_failed_coders(figure, source, items=with_acts)
        sections.append(figure)
        answers = mm.labels.merge(actions, on="action_id", how="inner")
        table8 = table8_section(mm_book, answers, describe=mm.describe(), split=split)
        flag_failed_coders(table8, mm)
        sections.append(table8)
    return sections


def _has_self(coders: Sequence[str]) -> bool:
    return any(c.startswith(SELF_PREFIX) for c in coders)


def _act_items(
    section: Section,
    codebook: Codebook,
    act_q: Question,
    source: LabelSource,
    wide: pd.DataFrame,
    mm_book: Codebook,
) -> None:
    try:
        q2_codes = question_codes(mm_book.question("Q2"), [])
        q2_labels = {o.code: o.label for o in mm_book.question("Q2").options}
    except AnnotateError:
        q2_codes, q2_labels = sorted(wide["Q2"].dropna().unique()), {}
    acts = source.labels[source.labels["question"] == act_q.id][["action_id", "value"]]
    joined = acts.rename(columns={"value": "act"}).merge(wide, on="action_id", how="inner")
    if joined.empty:
        section.paragraphs.append(f"No action has both a {codebook.name} and a mental-model label.")
        return
    order = [c for c in question_codes(act_q, joined["act"].unique()) if c in set(joined["act"])]
    q2 = joined[joined["Q2"].notna()]
    q2_shares, q2_sizes = code_shares(q2.assign(value=q2["Q2"]), "act", q2_codes)
    q2_shares = q2_shares.reindex(columns=order, fill_value=0.0)
    rows = []
    for act in order:
        rows.append(
            {
                "act": act,
                "actions": int((joined["act"] == act).sum()),
                "Q2 answered": int(q2_sizes.get(act, 0)),
                **{code: float(q2_shares.loc[code, act]) for code in q2_codes},
            }
        )
    section.items.append(
        Table(
            f"{codebook.name}_mental_model",
            f"Within each {codebook.name} {act_q.id} code: Q2 answers",
            ["act", "actions", "Q2 answered", *q2_codes],
            rows,
            "Q2: " + "; ".join(f"{c} = {q2_labels.get(c, c)}" for c in q2_codes)
            + " (Q4 = yes within each code, by condition: Figure 4, left).",
            tuple(q2_codes),
        )
    )
    act_labels = {o.code: o.label for o in act_q.options} | {"other": "Other"}
    kept = [a for a in order if q2_sizes.get(a, 0) > 0]
    stacked = q2_shares.T.loc[kept]
    stacked = stacked.loc[:, (stacked > 0).any(axis=0)]
    caption = "; ".join(f"{c} = {q2_labels.get(c, c)}" for c in stacked.columns)
    stacked.index = pd.Index([_with_n(option_label(a, act_labels), q2_sizes[a]) for a in kept])
    stacked.columns = [f"{c}: {q2_labels[c]}" if q2_labels.get(c) else c for c in stacked.columns]
    section.items.append(
        Chart(
            f"{codebook.name}_q2",
            f"Q2 answers within each {codebook.name} code",
            "stacked",
            stacked,
            xlabel="share of actions (Q2 answered; n per code)",
            ylabel=f"{codebook.name} {act_q.id}",
            caption=caption,
        )
    )


def _fmt(value: float | None) -> float | None:
    return None if value is None else round(float(value), 3)


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


def _round(value: float | None) -> float | None:
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
            "fleiss kappa": _round(f["kappa"]),
            "ci_low": _round(ci.get("low")),
            "ci_high": _round(ci.get("high")),
            "kappa items": f["n_items"],
            "band": f["band"],
            "alpha": _round(v["alpha"]["alpha"]),
            "alpha items": v["alpha"]["n_items"],
            "AC1": _round(v["ac1"]["ac1"]),
            "AC1 items": v["ac1"]["n_items"],
            "agreement": _round(v["percent_agreement"]["proportion"]),
            "note": (f["kappa"] is None and f["undefined_reason"]) or "",
        }
        return row
    sets = q.get("codes") or q.get("reasons")
    if sets is not None:
        masi = sets["alpha_masi"]
        row |= {
            "alpha": _round(masi["alpha"]),
            "alpha items": masi["n_items"],
            "agreement": _round(sets["exact_agreement"]["proportion"]),
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


def _scalar(value: Any, width: int = 80) -> Any:
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
            row = {c: _scalar(_unjson(run.get(c))) for c in shown}
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
            [{c: _scalar(r.get(c)) for c in columns} | gate_figure(r.get("report")) for r in runs],
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
            return {"ci_low": _round(low), "ci_high": _round(high), "items": q.get("n_items")}
    return empty


# -- the library calls --------------------------------------------------------------------


def build_report(
    store: Store,
    codebook: str,
    *,
    by: str | Sequence[str] = "condition",
    coders: Sequence[str] | None = None,
    split: str | None = None,
    part: str | None = None,
    n_boot: int = DEFAULT_N_BOOT,
    label_from: str | None = None,
    bins: int = DECILES,
) -> Report:
    """Compute every table and chart of the report (nothing is drawn or written).

    ``label_from`` = ``own-reports``: every codebook with participants' reports counts each
    action's own report (see :func:`annotate.analysis.coders.label_source`); ``bins``: the
    progress bins of Figure 4 (deciles)."""
    started = time.perf_counter()
    if bins < 1:
        raise UsageError("--progress-bins must be 1 or more")
    by = parse_by(by)
    if part and part not in PARTS:
        raise UsageError(f"--part: unknown part '{part}'", hint="choices: all, train, test")
    if part and part != "all" and not split:
        raise UsageError("--part needs --split NAME")
    try:
        book = store.codebooks.stored_codebook(codebook)
    except NotFoundError as exc:
        stored = store.labels.labelled_codebooks()
        raise NotFoundError(
            exc.message,
            hint="codebooks with labels: " + ", ".join(stored)
            if stored
            else "import or code labels first",
        ) from exc
    own = label_from if _has_self(store.labels.coders(codebook)) else None
    source = label_source(store, codebook, coders, source=own)
    parts = store.analysis.session_split_parts(split) if split else None
    actions = Scope(store, parts, part)
    if actions.empty:
        raise UsageError("no actions in this report", hint="check --split and --part")
    one_part = part in ("train", "test")
    if one_part:  # every table and chart: this part's sessions only
        source = source.restricted(actions.frame(source.labels["action_id"].unique())["action_id"])
    part_scope = f"the {part} part of split '{split}'" if one_part else ""
    sections = [
        data_section(store, split, actions, part),
        distribution_section(book, source, actions, by, split, part),
    ]
    tgco = tgco_section(store, book, source, actions, by)
    if tgco is not None:
        sections.append(tgco)
    sections += mental_model_sections(
        store, book, source, actions, coders, label_from=label_from, split=split, bins=bins
    )
    sessions = actions.sessions if one_part else None
    aligned = alignment_sections(
        store, book, source.priority, sessions, part_scope and f" in {part_scope}"
    )
    for section in aligned:  # the tables by the report's codes rest on its labels
        by_code = [i for i in section.items if i.key.endswith(f"_by_{book.name}")]
        flag_failed_coders(section, source, items=by_code)
    sections += aligned
    from annotate.analysis.probe_report import probe_section

    probes = probe_section(store, book)
    if probes is not None:
        sections.append(probes)
    sections.append(
        agreement_section(
            store, n_boot, set(actions.action_ids()) if one_part else None, scope=part_scope
        )
    )
    sections.append(llm_section(store, part_scope))
    scope = f"split '{split}'" + (f", {part} part" if part else "") if split else "all sessions"
    paragraphs = [
        f"Project file: {store.path}. Codebook: {book.name} {book.version_hash} "
        f"({book.title}). Scope: {scope}. Grouped by {', '.join(by)}.",
    ]
    report = Report(f"Report: {book.title}", paragraphs, sections)
    report.seconds = time.perf_counter() - started
    return report


def write_report(report: Report, out: Path) -> ReportFiles:
    """Draw the charts (PNG), write a CSV per table and the self-contained HTML page."""
    from annotate.analysis import charts, html  # lazy: matplotlib

    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    images: dict[str, bytes] = {}
    chart_paths = []
    for i, chart in enumerate(report.charts(), start=1):
        path = out / f"{i:02d}_{chart.key}.png"
        images[chart.key] = charts.render(chart, path)
        chart_paths.append(path)
    table_paths = []
    for table in report.tables():
        path = out / f"{table.key}.csv"
        frame = pd.DataFrame(table.rows, columns=table.columns, dtype=object)
        frame.map(safe_cell).to_csv(path, index=False)
        table_paths.append(path)
    page = out / "report.html"
    page.write_text(html.page(report, images), encoding="utf-8")
    return ReportFiles(page, tuple(chart_paths), tuple(table_paths), time.perf_counter() - started)
