"""Agreement on number questions (``kind: number``): Krippendorff's alpha at the interval
(or declared ratio) level, which tolerates missing ratings, and the two-way
absolute-agreement ICC, single and average measures, on the items every coder answered."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from agreement.icc import ICC, icc
from agreement.krippendorff_alpha import KrippendorffAlpha, krippendorff_alpha
from annotate.codebook import Question
from annotate.reliability.text_agreement import answer_table

if TYPE_CHECKING:
    from annotate.reliability.selection import Selection
    from annotate.store import Store


@dataclass(frozen=True)
class NumberQuestionResult:
    question: Question
    coders: tuple[str, ...]
    alpha: KrippendorffAlpha
    icc: ICC
    n_items: int
    """Items answered by at least one selected coder."""

    def rows(self) -> list[dict[str, Any]]:
        """One row per figure: what `agree` prints and exports."""
        q, a, r = self.question.id, self.alpha, self.icc
        return [
            {"question": q, "measure": f"Krippendorff's alpha ({a.metric})", "value": a.alpha,
             "ci_low": None, "ci_high": None, "n_items": a.n_items,
             "note": a.undefined_reason},
            {"question": q, "measure": "ICC(A,1) single", "value": r.single,
             "ci_low": r.single_ci.low, "ci_high": r.single_ci.high, "n_items": r.n_items,
             "note": r.undefined_reason or _incomplete(r)},
            {"question": q, "measure": f"ICC(A,{r.n_coders}) average", "value": r.average,
             "ci_low": r.average_ci.low, "ci_high": r.average_ci.high, "n_items": r.n_items,
             "note": r.undefined_reason or _incomplete(r)},
        ]  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question.id,
            "kind": "number",
            "coders": list(self.coders),
            "n_items": self.n_items,
            "alpha": self.alpha.to_dict(),
            "icc": self.icc.to_dict(),
        }


def _incomplete(r: ICC) -> str | None:
    if not r.n_items_incomplete:
        return None
    return f"{r.n_items_incomplete} items not answered by every coder left out"


def number_table(store: Store, selection: Selection, question: Question) -> np.ndarray:
    """Items x coders, NaN where a coder gave no number."""
    table = answer_table(store, selection, question)
    column = {c: j for j, c in enumerate(selection.coders)}
    out = np.full((len(table), len(selection.coders)), np.nan)
    for i, answers in enumerate(table.values()):
        for coder, value in answers.items():
            out[i, column[coder]] = float(value)
    return out


def number_agreement(
    store: Store, selection: Selection, questions: Sequence[Question], *, ci: float = 0.95
) -> list[NumberQuestionResult]:
    results = []
    for q in questions:
        table = number_table(store, selection, q)
        alpha = krippendorff_alpha(
            np.where(np.isnan(table), None, table).astype(object), level=q.numeric_level
        )
        results.append(
            NumberQuestionResult(
                q, tuple(selection.coders), alpha, icc(table, level=ci), len(table)
            )
        )
    return results
