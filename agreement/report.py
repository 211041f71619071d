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
from agreement.bootstrap import (
    DEFAULT_METHOD,
    METHODS,
    check_method,
    check_seed,
    fleiss_bootstrap_codes,
)
from agreement.cohen import CohenKappa, pairwise_cohen
from agreement.fleiss import FleissKappa, fleiss_kappa
from agreement.generalized import FleissGeneralized, fleiss_generalized_from_codes
from agreement.gwet import GwetAC1, gwet_ac1
from agreement.krippendorff_alpha import LEVELS, KrippendorffAlpha, krippendorff_alpha
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
    if codes.size == 0 or codes.min() >= 0:  # no missing rating: one pass, no mask
        return ()
    present = codes >= 0
    incomplete = np.flatnonzero(~present.all(axis=1))
    out = []
    # as Python lists: a NumPy row yields one NumPy bool per cell
    for row, flags in zip(incomplete.tolist(), present[incomplete].tolist(), strict=True):
        missing = tuple(c for c, p in zip(coders, flags, strict=True) if not p)
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
        Bootstrap CI of Fleiss' kappa (``method`` says percentile or BCa).
    alpha : KrippendorffAlpha
        Alpha at ``level``.
    ac1 : GwetAC1
    percent_agreement : PercentAgreement
    pairwise : tuple of CohenKappa
        Cohen's kappa (asymptotic CI) and confusion matrix for every pair of coders.
    level : str
        Level of measurement: ``"nominal"``, ``"ordinal"``, ``"interval"`` or ``"ratio"``.
    alpha_nominal : KrippendorffAlpha or None
        Nominal alpha as well, when ``level`` is not nominal.
    pairwise_weighted : tuple of CohenKappa
        Weighted Cohen's kappa of every pair when ``level`` is not nominal: linear weights
        at the ordinal level, quadratic at the interval and ratio levels.
    fleiss_generalized : FleissGeneralized or None
        Gwet's (2014) generalized Fleiss' kappa for missing ratings, beside the
        complete-case ``fleiss``: agreement over every item with two or more ratings,
        category shares over every rated item, with Gwet's SE and t interval (None only in
        reports built before it existed).
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
    level: str = "nominal"
    alpha_nominal: KrippendorffAlpha | None = None
    pairwise_weighted: tuple[CohenKappa, ...] = ()
    fleiss_generalized: FleissGeneralized | None = None


WEIGHTS_OF_LEVEL = {"ordinal": "linear", "interval": "quadratic", "ratio": "quadratic"}
"""The weights of the pairwise weighted kappas at each non-nominal level."""


def agreement_report(
    matrix: Any,
    categories: Iterable[Any] | None = None,
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int | None = 0,
    ci_method: str = DEFAULT_METHOD,
    level: str = "nominal",
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
    ci_method : {"bca", "percentile"}
        Bootstrap interval of Fleiss' kappa.
    level : {"nominal", "ordinal", "interval", "ratio"}
        Level of measurement of alpha (``categories`` order gives the ordinal ranks); a
        non-nominal level adds nominal alpha and weighted pairwise kappas.

    Returns
    -------
    AgreementReport
        Never NaN: every undefined figure is None with its ``undefined_reason``.
    """
    confidence, n_boot, seed = check_level(ci), check_n_boot(n_boot), check_seed(seed)
    method = check_method(ci_method)
    if level not in LEVELS:
        raise ValueError(
            f"The level of measurement must be one of {', '.join(LEVELS)}; got {level!r}."
        )
    labels = as_label_matrix(matrix, categories)
    fleiss = fleiss_kappa(labels)
    if labels.n_coders < 2:
        fleiss_ci = Interval(
            None, None, confidence, METHODS[method], n_boot, 0, seed, fleiss.undefined_reason,
        )  # fmt: skip
    else:
        fleiss_ci = fleiss_bootstrap_codes(
            labels.codes, len(labels.categories), confidence, n_boot, seed, method
        )
    nominal = level == "nominal"
    return AgreementReport(
        n_items=labels.n_items,
        n_coders=labels.n_coders,
        coders=labels.coders,
        categories=labels.categories,
        items_used=fleiss.n_items,
        items_left_out=_left_out(labels.codes, labels.items, labels.coders),
        fleiss=fleiss,
        fleiss_ci=fleiss_ci,
        alpha=krippendorff_alpha(labels, level=level),
        ac1=gwet_ac1(labels, ci=confidence),
        percent_agreement=agreement_of_codes(labels.codes, len(labels.categories)),
        pairwise=pairwise_cohen(labels, ci=confidence),
        level=level,
        alpha_nominal=None if nominal else krippendorff_alpha(labels),
        pairwise_weighted=()
        if nominal
        else pairwise_cohen(labels, ci=confidence, weights=WEIGHTS_OF_LEVEL[level]),
        fleiss_generalized=fleiss_generalized_from_codes(
            labels.codes, labels.categories, confidence
        ),
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
