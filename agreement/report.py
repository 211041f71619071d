"""Every agreement figure for one codebook question, in one result.

:func:`agreement_report` is for single-label questions, :func:`multi_select_report` for
multi-select ones (sets of codes). Both return frozen dataclasses with ``to_dict()``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from agreement._core import check_level, check_n_boot
from agreement.bootstrap import check_seed, complete_counts, fleiss_bootstrap
from agreement.cohen import CohenKappa, pairwise_cohen
from agreement.fleiss import FleissKappa, fleiss_kappa
from agreement.gwet import GwetAC1, gwet_ac1
from agreement.krippendorff_alpha import KrippendorffAlpha, krippendorff_alpha
from agreement.masi import CodeAgreement, masi_alpha, per_code_kappas
from agreement.matrix import as_label_matrix, as_set_matrix
from agreement.percent import PercentAgreement, agreement_of_codes
from agreement.results import Interval, ResultMixin

__all__ = [
    "AgreementReport",
    "LeftOutItem",
    "MultiSelectReport",
    "agreement_report",
    "multi_select_report",
]


@dataclass(frozen=True)
class LeftOutItem(ResultMixin):
    """An item left out of Fleiss' kappa, and why.

    Attributes
    ----------
    item
        The item id.
    rated_by : int
        How many coders rated it.
    missing_coders : tuple of str
        The coders who did not.
    reason : str
        One sentence, e.g. "Rated by 2 of 3 coders (not by 'carol')."
    """

    item: Hashable
    rated_by: int
    missing_coders: tuple[str, ...]
    reason: str


def _left_out(codes: np.ndarray, items: Any, coders: tuple[str, ...]) -> tuple[LeftOutItem, ...]:
    present = codes >= 0
    incomplete = np.flatnonzero(~present.all(axis=1))
    out = []
    for row in incomplete:
        missing = tuple(c for c, p in zip(coders, present[row], strict=True) if not p)
        rated = len(coders) - len(missing)
        item = items[row]
        item = item.item() if isinstance(item, np.generic) else item
        who = ", ".join(repr(c) for c in missing)
        reason = (
            "Rated by no coder."
            if rated == 0
            else f"Rated by {rated} of {len(coders)} coders (not by {who})."
        )
        out.append(LeftOutItem(item, rated, missing, reason))
    return tuple(out)


@dataclass(frozen=True)
class AgreementReport(ResultMixin):
    """Agreement among the coders of one single-label question.

    Attributes
    ----------
    n_items : int
        Items in the matrix.
    n_coders : int
    coders : tuple of str
    categories : tuple of str
    items_used : int
        Items every coder rated: those Fleiss' kappa uses. Alpha, AC1 and percent agreement
        use every item with two or more ratings; each Cohen pair the items both rated.
    items_left_out : tuple of LeftOutItem
        The other items, each with its reason.
    fleiss : FleissKappa
        Kappa, se0, z, p_value, band and per-category kappas.
    fleiss_ci : Interval
        Percentile bootstrap CI of Fleiss' kappa.
    alpha : KrippendorffAlpha
        Nominal alpha.
    ac1 : GwetAC1
    percent_agreement : PercentAgreement
    pairwise : tuple of CohenKappa
        Cohen's kappa (asymptotic CI) and confusion matrix for every pair of coders.
    """

    n_items: int
    n_coders: int
    coders: tuple[str, ...]
    categories: tuple[str, ...]
    items_used: int
    items_left_out: tuple[LeftOutItem, ...]
    fleiss: FleissKappa
    fleiss_ci: Interval
    alpha: KrippendorffAlpha
    ac1: GwetAC1
    percent_agreement: PercentAgreement
    pairwise: tuple[CohenKappa, ...]


def agreement_report(
    matrix: Any,
    categories: Iterable[Any] | None = None,
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int | None = 0,
) -> AgreementReport:
    """Every agreement figure for one single-label question.

    Parameters
    ----------
    matrix : LabelMatrix, DataFrame or 2-D array_like
        Labels, items x coders (or long form; see :func:`agreement.as_label_matrix`).
    categories : iterable of str, optional
        The question's allowed codes (labels outside it are a ValueError naming them). They
        also fix the order of per-category rows and the q of Gwet's AC1.
    ci : float
        Level of the confidence intervals (bootstrap for Fleiss, asymptotic for Cohen).
    n_boot : int
        Bootstrap resamples for Fleiss' kappa.
    seed : int or None
        Bootstrap seed.

    Returns
    -------
    AgreementReport
        Never NaN: every undefined figure is None with its ``undefined_reason``.
    """
    level, n_boot, seed = check_level(ci), check_n_boot(n_boot), check_seed(seed)
    labels = as_label_matrix(matrix, categories)
    fleiss = fleiss_kappa(labels)
    if labels.n_coders < 2:
        fleiss_ci = Interval(
            None, None, level, "percentile bootstrap over items", n_boot, 0, seed,
            fleiss.undefined_reason,
        )  # fmt: skip
    else:
        counts = complete_counts(labels.codes, len(labels.categories))
        fleiss_ci = fleiss_bootstrap(counts, level, n_boot, seed)
    return AgreementReport(
        n_items=labels.n_items,
        n_coders=labels.n_coders,
        coders=labels.coders,
        categories=labels.categories,
        items_used=fleiss.n_items,
        items_left_out=_left_out(labels.codes, labels.items, labels.coders),
        fleiss=fleiss,
        fleiss_ci=fleiss_ci,
        alpha=krippendorff_alpha(labels),
        ac1=gwet_ac1(labels),
        percent_agreement=agreement_of_codes(labels.codes, len(labels.categories)),
        pairwise=pairwise_cohen(labels, ci=level),
    )


@dataclass(frozen=True)
class MultiSelectReport(ResultMixin):
    """Agreement among the coders of one multi-select question (answers are sets).

    Attributes
    ----------
    n_items, n_coders : int
    coders : tuple of str
    categories : tuple of str
        Every code.
    items_used : int
        Items every coder answered (used by the per-code Fleiss kappas).
    items_left_out : tuple of LeftOutItem
    alpha_masi : KrippendorffAlpha
        Krippendorff's alpha with the MASI distance (all items with two or more answers).
    exact_agreement : PercentAgreement
        Agreement counting only identical sets as agreeing.
    per_code : tuple of CodeAgreement
        Present/absent Fleiss' kappa and alpha for every code.
    """

    n_items: int
    n_coders: int
    coders: tuple[str, ...]
    categories: tuple[str, ...]
    items_used: int
    items_left_out: tuple[LeftOutItem, ...]
    alpha_masi: KrippendorffAlpha
    exact_agreement: PercentAgreement
    per_code: tuple[CodeAgreement, ...]


def multi_select_report(matrix: Any, categories: Iterable[Any] | None = None) -> MultiSelectReport:
    """Every agreement figure for one multi-select question.

    Parameters
    ----------
    matrix : SetLabelMatrix, DataFrame or 2-D table of sets
        Answers, items x coders (or long form; see :func:`agreement.as_set_matrix`).
    categories : iterable of str, optional
        The question's codes; a code outside the list is a ValueError naming it, and codes
        nobody chose still get a (undefined, with reason) per-code row.

    Returns
    -------
    MultiSelectReport
    """
    answers = as_set_matrix(matrix, categories)
    left_out = _left_out(answers.codes, answers.items, answers.coders)
    return MultiSelectReport(
        n_items=answers.n_items,
        n_coders=answers.n_coders,
        coders=answers.coders,
        categories=answers.categories,
        items_used=answers.n_items - len(left_out),
        items_left_out=left_out,
        alpha_masi=masi_alpha(answers),
        exact_agreement=agreement_of_codes(answers.codes, len(answers.values)),
        per_code=per_code_kappas(answers),
    )
