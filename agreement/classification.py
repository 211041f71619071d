"""One coder (e.g. an LLM) against a reference coder: accuracy, kappa, per-label scores.

References
----------
Sokolova, M., & Lapalme, G. (2009). A systematic analysis of performance measures for
classification tasks. *Information Processing & Management*, 45(4), 427-437.
https://doi.org/10.1016/j.ipm.2009.03.002
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agreement._core import check_level, check_n_boot
from agreement.bootstrap import DEFAULT_METHOD, check_seed, cohen_bootstrap
from agreement.cohen import CohenKappa, kappa_from_confusion
from agreement.matrix import as_label_matrix, confusion_from_codes, from_wide
from agreement.results import ConfusionMatrix, Interval, ResultMixin

__all__ = [
    "ClassificationScores",
    "LabelScores",
    "ReferenceComparison",
    "classification_scores",
    "compare_to_reference",
]


@dataclass(frozen=True)
class LabelScores(ResultMixin):
    """Precision, recall and F1 of one label, the reference being the truth.

    Attributes
    ----------
    label : str
    precision : float or None
        Of the items the coder gave this label, the share the reference agrees on.
    recall : float or None
        Of the items the reference gave this label, the share the coder found.
    f1 : float or None
        ``2 TP / (2 TP + FP + FN)`` (the harmonic mean of the two; 0 when either is 0).
    support : int
        Items the reference gave this label.
    predicted : int
        Items the coder gave this label.
    undefined_reason : str or None
        Why a score is None (the label was never predicted, or never in the reference).
    """

    label: str
    precision: float | None
    recall: float | None
    f1: float | None
    support: int
    predicted: int
    undefined_reason: str | None = None


@dataclass(frozen=True)
class ClassificationScores(ResultMixin):
    """Accuracy and per-label scores of a coder against a reference.

    Attributes
    ----------
    n_items : int
        Items both rated.
    accuracy : float or None
        Share of those items with the same label.
    macro_f1 : float or None
        Mean F1 over labels used by the reference or the coder.
    per_label : tuple of LabelScores
        One per category, in category order.
    confusion : ConfusionMatrix
        Rows: reference; columns: coder.
    undefined_reason : str or None
    """

    n_items: int
    accuracy: float | None
    macro_f1: float | None
    per_label: tuple[LabelScores, ...]
    confusion: ConfusionMatrix
    undefined_reason: str | None = None


@dataclass(frozen=True)
class ReferenceComparison(ResultMixin):
    """A coder compared with a reference coder over the items both rated.

    Attributes
    ----------
    coder, reference : str
    n_items : int
        Items both rated.
    n_unrated : int
        Items the reference rated but the coder did not (left out).
    accuracy : float or None
    kappa : CohenKappa
        Cohen's kappa (reference = ``coder_a``), with its asymptotic CI.
    kappa_ci : Interval
        Percentile bootstrap CI of kappa over items.
    macro_f1 : float or None
    per_label : tuple of LabelScores
    confusion : ConfusionMatrix
        Rows: reference; columns: coder.
    undefined_reason : str or None
    """

    coder: str
    reference: str
    n_items: int
    n_unrated: int
    accuracy: float | None
    kappa: CohenKappa
    kappa_ci: Interval
    macro_f1: float | None
    per_label: tuple[LabelScores, ...]
    confusion: ConfusionMatrix
    undefined_reason: str | None = None


def _scores(confusion: ConfusionMatrix) -> ClassificationScores:
    table = confusion.to_array()
    n = int(table.sum())
    if n == 0:
        reason = "No item was rated by both the coder and the reference."
        per_label = tuple(
            LabelScores(label, None, None, None, 0, 0, reason) for label in confusion.labels
        )
        return ClassificationScores(0, None, None, per_label, confusion, reason)
    true_positive = np.diag(table)
    support = table.sum(axis=1)
    predicted = table.sum(axis=0)
    per_label = []
    for j, label in enumerate(confusion.labels):
        tp, sup, pred = int(true_positive[j]), int(support[j]), int(predicted[j])
        reasons = []
        precision = recall = f1 = None
        if pred:
            precision = tp / pred
        else:
            reasons.append("the coder never gave this label, so precision is undefined")
        if sup:
            recall = tp / sup
        else:
            reasons.append("the reference never gave this label, so recall is undefined")
        if pred or sup:
            f1 = 2.0 * tp / (pred + sup)
        else:
            reasons.append("F1 is undefined")
        joined = "; ".join(reasons)
        reason = joined[:1].upper() + joined[1:] + "." if reasons else None
        per_label.append(LabelScores(label, precision, recall, f1, sup, pred, reason))
    f1s = [s.f1 for s in per_label if s.f1 is not None]
    return ClassificationScores(
        n_items=n,
        accuracy=float(true_positive.sum()) / n,
        macro_f1=float(np.mean(f1s)) if f1s else None,
        per_label=tuple(per_label),
        confusion=confusion,
    )


def classification_scores(
    reference: Sequence[Any],
    predicted: Sequence[Any],
    *,
    categories: Iterable[Any] | None = None,
    reference_name: str = "reference",
    predicted_name: str = "coder",
) -> ClassificationScores:
    """Accuracy, per-label precision/recall/F1 and confusion matrix of two label lists.

    Parameters
    ----------
    reference, predicted : sequence of str
        Aligned labels, one per item; items where either is missing are left out.
    categories : iterable of str, optional
        Allowed labels (also sets the order and includes labels nobody used).
    reference_name, predicted_name : str
        Names for the confusion matrix.

    Returns
    -------
    ClassificationScores

    Raises
    ------
    ValueError
        If the sequences differ in length or a label is not in ``categories``.
    """
    reference, predicted = list(reference), list(predicted)
    if len(reference) != len(predicted):
        raise ValueError(
            f"reference has {len(reference)} labels but predicted has {len(predicted)}; "
            "give one label per item in each."
        )
    table = np.empty((len(reference), 2), dtype=object)
    table[:, 0], table[:, 1] = reference, predicted
    matrix = from_wide(table, coders=[reference_name, predicted_name], categories=categories)
    codes = matrix.codes
    confusion = confusion_from_codes(
        codes[:, 0], codes[:, 1], matrix.categories, reference_name, predicted_name
    )
    return _scores(confusion)


def compare_to_reference(
    data: Any,
    coder: str,
    reference: str,
    *,
    categories: Iterable[Any] | None = None,
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int | None = 0,
    ci_method: str = DEFAULT_METHOD,
) -> ReferenceComparison:
    """Compare one coder (e.g. an LLM) with a reference coder.

    Parameters
    ----------
    data : LabelMatrix, DataFrame or 2-D array_like
        Labels, items x coders (or long form), holding both coders.
    coder : str
        The coder under test.
    reference : str
        The coder taken as the truth.
    categories : iterable of str, optional
        Allowed labels (the codebook's list makes per-label rows for unused labels).
    ci : float
        Level of both kappa intervals.
    n_boot : int
        Bootstrap resamples for ``kappa_ci``.
    seed : int or None
        Bootstrap seed.
    ci_method : {"bca", "percentile"}
        Bootstrap interval of ``kappa_ci``.

    Returns
    -------
    ReferenceComparison
    """
    level, n_boot, seed = check_level(ci), check_n_boot(n_boot), check_seed(seed)
    if coder == reference:
        raise ValueError(f"Compare {coder!r} with another coder, not with itself.")
    matrix = as_label_matrix(data, categories).select([reference, coder])
    ref, got = matrix.codes[:, 0], matrix.codes[:, 1]
    confusion = confusion_from_codes(ref, got, matrix.categories, reference, coder)
    scores = _scores(confusion)
    kappa = kappa_from_confusion(confusion, level)
    both = (ref >= 0) & (got >= 0)
    kappa_ci = cohen_bootstrap(
        ref[both].astype(np.intp), got[both].astype(np.intp), len(matrix.categories),
        level, n_boot, seed, ci_method,
    )  # fmt: skip
    return ReferenceComparison(
        coder=coder,
        reference=reference,
        n_items=scores.n_items,
        n_unrated=int(((ref >= 0) & (got < 0)).sum()),
        accuracy=scores.accuracy,
        kappa=kappa,
        kappa_ci=kappa_ci,
        macro_f1=scores.macro_f1,
        per_label=scores.per_label,
        confusion=confusion,
        undefined_reason=scores.undefined_reason,
    )
