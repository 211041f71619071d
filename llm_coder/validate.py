"""The validation report: the LLM as one more coder on the held-out gold items.

Per question: Fleiss' kappa of LLM + gold (two coders: Scott's pi) with a BCa bootstrap CI
over items, and Cohen's kappa with its asymptotic CI, computed as `annotate agree` computes
them (the same categories and settings: the same labels print the same digits); accuracy;
per-label precision, recall and F1; the confusion matrix (rows gold, columns LLM); and
Fleiss' kappa of the human coders of the held-out items with and without the LLM. A reply
that stayed invalid after its retry is the category ``(invalid)`` — it counts against the
LLM, never silently dropped. The gate figure is the lowest Fleiss' kappa over the questions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from agreement import (
    LabelScores,
    bootstrap_fleiss_ci,
    classification_scores,
    compare_to_reference,
    fleiss_kappa,
)
from agreement.results import to_jsonable
from annotate.codebook import OTHER, Answer, Codebook, Question
from annotate.reliability.settings import (
    DEFAULT_CI,
    DEFAULT_CI_METHOD,
    DEFAULT_N_BOOT,
    DEFAULT_SEED,
)
from llm_coder.runner import ItemResult

if TYPE_CHECKING:
    from llm_coder.job import LabelJob
    from llm_coder.ports import LLMStore

INVALID = "(invalid)"
MIN_CELL = 10
"""Held-out items a cell of ``--by`` needs before its accuracy and kappa are shown."""
GOLD_NAME = "gold"
BOOTSTRAP = DEFAULT_N_BOOT  # the settings of `agree`: the same labels give the same digits
SEED = DEFAULT_SEED


@dataclass(frozen=True)
class QuestionReport:
    question: str
    n_items: int
    n_invalid: int
    fleiss: float | None
    fleiss_ci: tuple[float | None, float | None]
    cohen: float | None
    cohen_ci: tuple[float | None, float | None]
    accuracy: float | None
    per_label: tuple[LabelScores, ...]
    confusion_labels: tuple[str, ...]
    confusion: tuple[tuple[int, ...], ...]
    humans: tuple[str, ...]
    fleiss_humans: float | None
    fleiss_humans_llm: float | None
    n_items_humans: int
    notes: tuple[str, ...] = ()
    fleiss_valid: float | None = None
    """With invalid replies: Fleiss' kappa over the items with a valid reply only, the
    figure `agree --coders GOLD,LLM` gives on the stored labels (they hold no invalid)."""
    fleiss_valid_ci: tuple[float | None, float | None] = (None, None)
    n_valid: int = 0


@dataclass(frozen=True)
class CellReport:
    """One question in one group of held-out items (``--by role,condition``): accuracy and
    Fleiss' kappa of LLM + gold, or none with a note when the cell has fewer than
    :data:`MIN_CELL` items."""

    question: str
    group: tuple[str, ...]
    n_items: int
    accuracy: float | None
    fleiss: float | None
    note: str = ""


@dataclass(frozen=True)
class ValidationReport:
    llm_coder: str
    gold_coder: str
    n_items: int
    questions: tuple[QuestionReport, ...]
    by: tuple[str, ...] = ()
    cells: tuple[CellReport, ...] = ()

    @property
    def unanimous_questions(self) -> tuple[str, ...]:
        """Questions where LLM and gold gave one and the same code to every item.

        Their kappa is undefined (chance agreement is 1), yet they agree perfectly: they
        must not hold the gate back.
        """
        return tuple(
            q.question
            for q in self.questions
            if q.fleiss is None and q.n_items and q.accuracy == 1.0 and len(q.confusion) == 1
        )

    @property
    def kappa(self) -> float | None:
        """The gate figure: the lowest Fleiss' kappa (LLM + gold) over the questions.

        None when a question has no kappa for another reason than unanimity, or none has one.
        """
        unanimous = set(self.unanimous_questions)
        values = [q.fleiss for q in self.questions if q.question not in unanimous]
        if not values or any(v is None for v in values):
            return None
        return min(v for v in values if v is not None)

    def passes(self, min_kappa: float) -> bool:
        return self.kappa is not None and self.kappa >= min_kappa

    def to_dict(self) -> dict[str, Any]:
        out = to_jsonable(self)
        out["kappa"] = self.kappa
        return out


def category(question: Question, answer: Answer | None) -> str | None:
    """One nominal category per answer: the code (yes/no), or the sorted set for multi."""
    if answer is None:
        return None
    if question.kind == "multi":
        return "+".join(sorted(answer.codes))
    return answer.value


def _interval(interval: Any) -> tuple[float | None, float | None]:
    return (interval.low, interval.high)


def _columns(
    question: Question,
    item_ids: Sequence[str],
    gold: Mapping[str, Mapping[str, Answer]],
    llm: Mapping[str, Mapping[str, Answer] | None],
) -> tuple[list[str], list[str | None], list[str | None], list[str], list[str]]:
    """The items with a gold and an LLM answer, their categories in two columns, the
    categories counted (as `agree` counts them, then the invalid replies) and those used."""
    codes = list(question.codes) if question.kind != "multi" else None
    ids = [i for i in item_ids if question.id in gold.get(i, {}) and i in llm]
    gold_col = [category(question, gold[i][question.id]) for i in ids]
    llm_col = [
        category(question, (llm[i] or {}).get(question.id)) if llm[i] else INVALID for i in ids
    ]
    used = sorted({v for v in gold_col + llm_col if v is not None})
    # the categories `agree` counts (every declared code, Other when used): the bootstrap
    # then takes the same path as there and prints the same interval for the same labels
    declared = list(codes or [])
    if codes is not None and OTHER not in declared and OTHER in used:
        declared.append(OTHER)
    categories = declared + [c for c in used if c not in declared and c != INVALID]
    seen = [c for c in categories if c in used]
    if INVALID in llm_col:
        categories.append(INVALID)
        seen.append(INVALID)
    return ids, gold_col, llm_col, categories, seen


def cell_reports(
    question: Question,
    item_ids: Sequence[str],
    gold: Mapping[str, Mapping[str, Answer]],
    llm: Mapping[str, Mapping[str, Answer] | None],
    groups: Mapping[str, tuple[str, ...]],
    *,
    llm_name: str,
    gold_name: str,
    min_n: int = MIN_CELL,
) -> list[CellReport]:
    """Accuracy and Fleiss' kappa (LLM + gold; the function `annotate agree` uses) of one
    question within each group of items (``groups``: item id -> its group)."""
    ids, gold_col, llm_col, categories, _ = _columns(question, item_ids, gold, llm)
    cells: dict[tuple[str, ...], list[int]] = {}
    for k, i in enumerate(ids):
        if gold_col[k] is not None and llm_col[k] is not None:  # as a missing rating overall
            cells.setdefault(groups.get(i, ("-",)), []).append(k)
    out = []
    for group in sorted(cells):
        rows = cells[group]
        if len(rows) < min_n:
            out.append(
                CellReport(question.id, group, len(rows), None, None, f"n < {min_n}: no figure")
            )
            continue
        g = [gold_col[k] for k in rows]
        m = [llm_col[k] for k in rows]
        scores = classification_scores(g, m, categories=categories)
        pair = pd.DataFrame({gold_name: g, llm_name: m}, dtype=object)
        kappa = fleiss_kappa(pair, categories=categories)
        out.append(
            CellReport(
                question.id, group, len(rows), scores.accuracy, kappa.kappa,
                kappa.undefined_reason or "" if kappa.kappa is None else "",
            )
        )  # fmt: skip
    return out


def question_report(
    question: Question,
    item_ids: Sequence[str],
    gold: Mapping[str, Mapping[str, Answer]],
    llm: Mapping[str, Mapping[str, Answer] | None],
    humans: Mapping[str, Mapping[str, Mapping[str, Answer]]],
    *,
    llm_name: str,
    gold_name: str,
) -> QuestionReport:
    ids, gold_col, llm_col, categories, seen = _columns(question, item_ids, gold, llm)
    n_invalid = sum(v == INVALID for v in llm_col)
    human_names = tuple(sorted(humans))
    columns = {
        name: [category(question, humans[name].get(i, {}).get(question.id)) for i in ids]
        for name in human_names
    }
    # the humans may use codes neither gold nor the LLM used (no kappa changes for a category
    # nobody used, so the gold/LLM tables keep the short list)
    with_humans = categories + sorted(
        {v for col in columns.values() for v in col if v is not None} - set(categories)
    )
    notes: list[str] = []
    if n_invalid:
        notes.append(f"{n_invalid} replies stayed invalid after a retry; counted as '{INVALID}'")
    pair = pd.DataFrame({gold_name: gold_col, llm_name: llm_col}, index=ids, dtype=object)
    if ids:
        fleiss = fleiss_kappa(pair, categories=categories)
        fleiss_ci = bootstrap_fleiss_ci(
            pair, categories=categories, ci=DEFAULT_CI, n_boot=BOOTSTRAP, seed=SEED,
            method=DEFAULT_CI_METHOD,
        )  # fmt: skip
        # the confusion matrix and per-label scores: the categories used (no empty rows)
        versus = compare_to_reference(
            pair, llm_name, gold_name, categories=seen, n_boot=BOOTSTRAP, seed=SEED
        )
        for value, reason in (
            (fleiss.kappa, fleiss.undefined_reason),
            (versus.kappa.kappa, versus.kappa.undefined_reason),
        ):
            if value is None and reason:
                notes.append(reason)
        labels, counts = versus.confusion.labels, versus.confusion.counts
        per_label = tuple(s for s in versus.per_label if s.support or s.predicted)
        accuracy = versus.accuracy
        fleiss_value, cohen_value = fleiss.kappa, versus.kappa.kappa
        valid = pair[pair[llm_name] != INVALID]
        if n_invalid and len(valid):
            plain = [c for c in categories if c != INVALID]
            fleiss_valid = fleiss_kappa(valid, categories=plain).kappa
            fleiss_valid_ci = _interval(bootstrap_fleiss_ci(
                valid, categories=plain, ci=DEFAULT_CI, n_boot=BOOTSTRAP, seed=SEED,
                method=DEFAULT_CI_METHOD,
            ))  # fmt: skip
        # Cohen's interval as `agree` gives it for the pair (asymptotic, clipped to [-1, 1])
        f_ci, c_ci = _interval(fleiss_ci), _interval(versus.kappa.ci)
    else:
        notes.append("no held-out item has both a gold and an LLM answer")
        labels, counts, accuracy, per_label = (), (), None, ()
        fleiss_value = cohen_value = None
        f_ci = c_ci = (None, None)

    if not n_invalid or not ids:
        fleiss_valid, fleiss_valid_ci = None, (None, None)
    # Human coders of the held-out items, with and without the LLM as one more coder.
    fleiss_humans = fleiss_with = None
    n_humans_items = 0
    if len(human_names) >= 2:
        frame = pd.DataFrame(columns, index=ids, dtype=object)
        result = fleiss_kappa(frame, categories=with_humans)
        fleiss_humans, n_humans_items = result.kappa, result.n_items
    else:
        notes.append(
            f"Fleiss' kappa of the humans needs two human coders of these items; found "
            f"{len(human_names)}" + (f" ({', '.join(human_names)})" if human_names else "")
        )
    if len(human_names) >= 2:  # with one human this is LLM vs one coder, not a panel
        frame = pd.DataFrame({**columns, llm_name: llm_col}, index=ids, dtype=object)
        result = fleiss_kappa(frame, categories=with_humans)
        fleiss_with = result.kappa
    return QuestionReport(
        question=question.id,
        n_items=len(ids),
        n_invalid=n_invalid,
        fleiss=fleiss_value,
        fleiss_ci=f_ci,
        cohen=cohen_value,
        cohen_ci=c_ci,
        accuracy=accuracy,
        per_label=per_label,
        confusion_labels=tuple(labels),
        confusion=tuple(tuple(r) for r in counts),
        humans=human_names,
        fleiss_humans=fleiss_humans,
        fleiss_humans_llm=fleiss_with,
        n_items_humans=n_humans_items,
        notes=tuple(notes),
        fleiss_valid=fleiss_valid,
        fleiss_valid_ci=fleiss_valid_ci,
        n_valid=len(ids) - n_invalid,
    )


def build_report(
    codebook: Codebook,
    item_ids: Sequence[str],
    gold: Mapping[str, Mapping[str, Answer]],
    llm: Mapping[str, Mapping[str, Answer] | None],
    humans: Mapping[str, Mapping[str, Mapping[str, Answer]]],
    *,
    llm_name: str,
    gold_name: str,
    by: Sequence[str] = (),
    groups: Mapping[str, tuple[str, ...]] | None = None,
) -> ValidationReport:
    coded = [q for q in codebook.questions if q.kind != "text"]  # text has no codes to agree on
    questions = tuple(
        question_report(q, item_ids, gold, llm, humans, llm_name=llm_name, gold_name=gold_name)
        for q in coded
    )
    cells: tuple[CellReport, ...] = ()
    if by and groups is not None:
        cells = tuple(
            c
            for q in coded
            for c in cell_reports(
                q, item_ids, gold, llm, groups, llm_name=llm_name, gold_name=gold_name
            )
        )
    return ValidationReport(llm_name, gold_name, len(item_ids), questions, tuple(by), cells)


def validation_report(
    store: LLMStore, job: LabelJob, results: Sequence[ItemResult]
) -> ValidationReport:
    """Gather gold, LLM and human answers of the held-out items from a finished phase."""
    codebook = job.codebook
    ids = [r.action_id for r in results if r.failed is None]
    llm = {r.action_id: r.answers for r in results if r.failed is None}
    gold_coder = job.split.gold_coder
    gold = store.coder_answers(codebook, gold_coder, ids)
    humans: dict[str, dict[str, dict[str, Answer]]] = {}
    for coder in store.coders(codebook.name):
        if coder.startswith("llm:") or coder == GOLD_NAME:
            continue  # the adjudicated gold is not an independent coder
        answers = store.coder_answers(codebook, coder, ids)
        if answers:
            humans[coder] = answers
    order = [i for i in job.heldout_ids if i in llm]
    by = tuple(job.options.by)
    groups = store.action_groups(order, by) if by else None
    return build_report(
        codebook, order, gold, llm, humans, llm_name=job.coder, gold_name=gold_coder,
        by=by, groups=groups,
    )  # fmt: skip
