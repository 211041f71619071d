"""The categories that enter the figures, and one question's labels as the matrices
:mod:`agreement` reads (codes, or the sets of codes or reasons)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from annotate.codebook import OTHER, Question
from annotate.errors import CodebookError
from annotate.reliability.question_labels import QuestionData
from annotate.store.item_ids import ItemIds

if TYPE_CHECKING:
    from agreement import LabelMatrix, SetLabelMatrix

FIGURES_OF_PART = {
    "value": "kappa, alpha and AC1",
    "codes": "MASI alpha and the per-code figures",
    "reasons": "MASI alpha and the per-reason figures",
}


@dataclass(frozen=True)
class Categories:
    """The categories one part of a question's figures used: the codes the codebook version
    declares, plus "other" when labels made under a version that offered it use it."""

    part: str
    """``value`` (kappa, alpha, AC1), ``codes`` (multi) or ``reasons`` (a 'no')."""
    declared: tuple[str, ...]
    undeclared: tuple[str, ...] = ()
    n_undeclared: int = 0
    """Answers that use an undeclared code."""

    @property
    def codes(self) -> tuple[str, ...]:
        return self.declared + self.undeclared

    @property
    def note(self) -> str | None:
        if not self.undeclared:
            return None
        return (
            f"'{OTHER}' is not declared by this codebook version, but {self.n_undeclared} "
            f"answer(s) made under a version that offered Other use it: it is counted as a "
            "category."
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "part": self.part,
            "n": len(self.codes),
            "codes": list(self.codes),
            "undeclared": list(self.undeclared),
            "note": self.note,
        }


def undeclared_other(declared: Sequence[str], used: Sequence[str]) -> tuple[str, ...]:
    """``("other",)`` when answers use "other" and the question does not declare it (labels
    made under a version that offered Other); the figures count it rather than lose it."""
    return (OTHER,) if OTHER not in declared and OTHER in used else ()


def value_categories(data: QuestionData) -> Categories:
    declared = tuple(data.question.codes)
    counts = data.value_counts()
    extra = undeclared_other(declared, list(counts))
    return Categories("value", declared, extra, counts.get(OTHER, 0) if extra else 0)


def set_categories(data: QuestionData) -> Categories:
    declared = tuple(data.question.set_codes)
    used = [c for s in data.sets.values() for c in s]
    extra = undeclared_other(declared, used)
    part = "reasons" if data.kind == "yes_no_reasons" else "codes"
    return Categories(part, declared, extra, used.count(OTHER) if extra else 0)


def categories_line(q: dict[str, Any]) -> str | None:
    """One sentence, e.g. "Categories: 5 (a, b, c, d, e) in kappa, alpha and AC1.", for a
    question's result (None for runs stored before the count was recorded)."""
    found = q.get("categories")
    if not found:
        return None
    parts = [
        f"{'Categories' if c['part'] == 'value' else c['part'].capitalize()}: {c['n']} "
        f"({', '.join(c['codes'])}) in {FIGURES_OF_PART[c['part']]}"
        for c in found
    ]
    return "; ".join(parts) + "." + "".join(f" {c['note']}" for c in found if c["note"])


def value_matrix(data: QuestionData) -> LabelMatrix:
    """The codes (yes/no for yes/no questions) as an :class:`agreement.LabelMatrix`, made
    from the integer table as it is (no label is looked at one by one)."""
    from agreement.matrix import (
        MISSING,
        _category_names,
        _code_dtype,
        _resolve_categories,
        _trusted,
        label_name,
    )

    categories = _category_names(value_categories(data).codes)
    try:
        named = [label_name(n) for n in data.names]
        given = data.codes[data.codes >= 0].ravel()
        used = {named[k] for k in np.flatnonzero(np.bincount(given, minlength=1)).tolist()}
        resolved = _resolve_categories(used, categories)
    except ValueError as exc:
        raise _outside(data.question, exc) from None
    position = {name: i for i, name in enumerate(resolved)}
    dtype = _code_dtype(len(resolved))
    lookup = np.array([position.get(n, MISSING) for n in named] + [MISSING], dtype=dtype)
    codes = lookup[data.codes] if data.codes.size else np.empty(data.codes.shape, dtype=dtype)
    items = data.items if isinstance(data.items, ItemIds) else np.array(data.items, dtype=object)
    return _trusted(codes, resolved, tuple(data.coders), items)


def set_matrix(data: QuestionData) -> SetLabelMatrix:
    """The chosen sets (multi) or the reasons of a ``no`` as a :class:`SetLabelMatrix`.

    For yes/no questions only items with at least one ``no`` are rows, and a ``yes`` counts
    as no rating: the reasons are compared among the coders who answered ``no``.
    """
    from agreement import sets_from_wide

    rows = [(data.items[i], list(data.set_row(i))) for i in sorted({i for i, _ in data.sets})]
    try:
        return sets_from_wide(
            [s for _, s in rows] or _empty(data),
            coders=data.coders,
            items=[i for i, _ in rows],
            categories=list(set_categories(data).codes),
        )
    except ValueError as exc:
        raise _outside(data.question, exc) from None


def _empty(data: QuestionData) -> Any:
    return np.empty((0, len(data.coders)), dtype=object)


def _outside(question: Question, exc: ValueError) -> CodebookError:
    return CodebookError(
        f"question {question.id}: {str(exc).rstrip('.')}",
        hint="the labels do not fit the stored codebook version; "
        "see `annotate status` for the versions in this file",
    )
