"""The report's mental-model sections: Figure 4 and Table 8 per codebook with grounded codes,
and the Q2 answers within each code of the report's codebook."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from annotate.analysis.code_shares import code_shares, option_label, question_codes, with_n
from annotate.analysis.coders import LabelSource, label_source
from annotate.analysis.distribution import flag_failed_coders
from annotate.analysis.figure4 import DECILES, Grounded, figure4_section, grounded_codes, on_acts
from annotate.analysis.report_model import Chart, Section, Table
from annotate.analysis.report_scope import Scope
from annotate.analysis.table8 import table8_section
from annotate.codebook import Codebook, Question
from annotate.coders import SELF_PREFIX
from annotate.errors import AnnotateError
from annotate.store import Store


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
        wanted = label_from if has_self(available) else None
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


def has_self(coders: Sequence[str]) -> bool:
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
            "Q2: "
            + "; ".join(f"{c} = {q2_labels.get(c, c)}" for c in q2_codes)
            + " (Q4 = yes within each code, by condition: Figure 4, left).",
            tuple(q2_codes),
        )
    )
    act_labels = {o.code: o.label for o in act_q.options} | {"other": "Other"}
    kept = [a for a in order if q2_sizes.get(a, 0) > 0]
    stacked = q2_shares.T.loc[kept]
    stacked = stacked.loc[:, (stacked > 0).any(axis=0)]
    caption = "; ".join(f"{c} = {q2_labels.get(c, c)}" for c in stacked.columns)
    stacked.index = pd.Index([with_n(option_label(a, act_labels), q2_sizes[a]) for a in kept])
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
