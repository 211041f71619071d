"""Gwet's statistics for items with any number of ratings: the generalized Fleiss' kappa
and the variance of AC1 and of that kappa (private kernel, public function).

Both coefficients are functions of per-item category counts r_ik. An item is a row of
``counts`` with a multiplicity ``weight``: one row per item, or one row per distinct rating
pattern weighted by how many items show it (:func:`agreement._core.rating_patterns`); the
sums, and so the figures, are the same.

References
----------
Gwet, K. L. (2014). *Handbook of Inter-Rater Reliability*, 4th ed., ch. 2 and 5
(Fleiss' generalized kappa and AC1 with missing ratings, and their variances).
Advanced Analytics, LLC. Implemented in R by irrCAC's ``fleiss.kappa.raw`` and
``gwet.ac1.raw`` (population size N infinite: no finite-population correction).

Gwet, K. L. (2008). Computing inter-rater reliability and its variance in the presence of
high agreement. *British Journal of Mathematical and Statistical Psychology*, 61(1),
29-48. https://doi.org/10.1348/000711006X126600
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from agreement._core import (
    finite,
    pattern_tables,
    patterns_fit,
    rating_patterns,
)
from agreement.bands import landis_koch
from agreement.matrix import as_label_matrix
from agreement.results import Interval, ResultMixin

__all__ = ["FleissGeneralized", "fleiss_kappa_generalized"]

VARIANCE_METHOD = "Gwet (2014) linearization variance, Student t with N - 1 df"
"""``Interval.method`` of the asymptotic intervals of AC1 and the generalized kappa."""


# --- Student's t for integer degrees of freedom (no SciPy) -------------------------------


def t_central(t: float, df: int) -> float:
    """P(|T| <= t) for Student's t with ``df`` degrees of freedom (t >= 0).

    Exact finite series for integer df (Abramowitz & Stegun 26.7.3-4) up to 2,000 df;
    beyond, the normal approximation of A & S 26.7.8 (error far below 1e-6 there).
    """
    if df > 2000:
        z = t * (1.0 - 1.0 / (4.0 * df)) / math.sqrt(1.0 + t * t / (2.0 * df))
        return math.erf(z / math.sqrt(2.0))
    theta = math.atan(t / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    s = math.sin(theta)
    if df % 2 == 1:
        if df == 1:
            return 2.0 * theta / math.pi
        term, total = 1.0, 1.0
        for j in range(1, (df - 3) // 2 + 1):
            term *= c2 * (2 * j) / (2 * j + 1)
            total += term
        return 2.0 / math.pi * (theta + s * math.cos(theta) * total)
    term, total = 1.0, 1.0
    for j in range(1, (df - 2) // 2 + 1):
        term *= c2 * (2 * j - 1) / (2 * j)
        total += term
    return s * total


def t_quantile(level: float, df: int) -> float:
    """The t with P(|T| <= t) = ``level`` (bisection on :func:`t_central`, to 1e-12; the
    Cornish-Fisher expansion beyond 2,000 df, A & S 26.7.5)."""
    if df > 2000:
        z = NormalDist().inv_cdf(0.5 + level / 2.0)
        return z + (z**3 + z) / (4.0 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96.0 * df**2)
    low, high = 0.0, 1.0
    while t_central(high, df) < level:
        high *= 2.0
    for _ in range(200):
        mid = 0.5 * (low + high)
        if t_central(mid, df) < level:
            low = mid
        else:
            high = mid
        if high - low < 1e-12:
            break
    return 0.5 * (low + high)


# --- The kernel ----------------------------------------------------------------------------


@dataclass(frozen=True)
class GwetSums:
    """Gwet's coefficient, its parts and its variance (kernel output)."""

    coefficient: float | None
    observed: float | None
    expected: float | None
    variance: float | None
    n_rated: int  # items with one or more ratings (pi's denominator, the variance's N)
    n_pairable: int  # items with two or more ratings (p_a's denominator)
    single: bool  # every rating in one category


def gwet_sums(counts: np.ndarray, weight: np.ndarray, q: int, kind: str) -> GwetSums:
    """Gwet's ``"fleiss"`` (generalized kappa) or ``"ac1"`` with its variance.

    Parameters
    ----------
    counts : ndarray, shape (R, q)
        r_ik, ratings of row i in category k.
    weight : ndarray, shape (R,)
        Items each row stands for (1 per item, or the items of a rating pattern).
    q : int
        Number of categories (AC1's chance agreement divides by q - 1).

    Notes
    -----
    With r_i ratings of item i, n items with r_i >= 1 and n2 with r_i >= 2:
    ``p_a = sum_{r_i >= 2} sum_k r_ik (r_ik - 1) / (r_i (r_i - 1)) / n2``,
    ``pi_k = sum_{r_i >= 1} (r_ik / r_i) / n``; Fleiss: ``p_e = sum_k pi_k**2``, AC1:
    ``p_e = sum_k pi_k (1 - pi_k) / (q - 1)``; ``c = (p_a - p_e) / (1 - p_e)``. Variance
    (Gwet 2014): ``c_i = (n / n2) (p_a,i - p_e [r_i >= 2]) / (1 - p_e)``,
    ``c*_i = c_i - 2 (1 - c) (p_e,i - p_e) / (1 - p_e)`` with
    ``p_e,i = sum_k r_ik pi_k / r_i`` (Fleiss) or ``sum_k r_ik (1 - pi_k) / (r_i (q - 1))``
    (AC1); ``var(c) = sum_i (c*_i - c)**2 / (n (n - 1))``.
    """
    counts = np.asarray(counts, dtype=np.float64)
    weight = np.asarray(weight, dtype=np.float64)
    r = counts.sum(axis=1)
    keep = (weight > 0) & (r >= 1)
    counts, weight, r = counts[keep], weight[keep], r[keep]
    n = float(weight.sum())
    pairable = r >= 2
    n2 = float(weight[pairable].sum())
    if n2 == 0:
        return GwetSums(None, None, None, None, int(n), 0, False)
    pa_i = np.zeros(len(r))
    pa_i[pairable] = (counts[pairable] * (counts[pairable] - 1.0)).sum(axis=1) / (
        r[pairable] * (r[pairable] - 1.0)
    )
    observed = float(weight @ pa_i) / n2
    pi = (weight @ (counts / r[:, None])) / n
    used = int((pi > 0).sum())
    if kind == "fleiss":
        expected = float(pi @ pi)
        pe_i = (counts @ pi) / r
    else:
        if q < 2:
            return GwetSums(None, observed, None, None, int(n), int(n2), used <= 1)
        expected = float((pi * (1.0 - pi)).sum() / (q - 1))
        pe_i = (counts @ (1.0 - pi)) / r / (q - 1)
    if expected >= 1.0 or (kind == "fleiss" and used <= 1):
        return GwetSums(None, observed, expected, None, int(n), int(n2), True)
    coefficient = (observed - expected) / (1.0 - expected)
    c_i = (n / n2) * (pa_i - expected * pairable) / (1.0 - expected)
    c_star = c_i - 2.0 * (1.0 - coefficient) * (pe_i - expected) / (1.0 - expected)
    variance = float(weight @ (c_star - coefficient) ** 2) / (n * (n - 1.0)) if n > 1 else None
    return GwetSums(finite(coefficient), observed, expected, variance, int(n), int(n2), used <= 1)


def item_counts(codes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of category counts and their multiplicities: one row per rating pattern when
    the patterns are few (:func:`agreement._core.patterns_fit`), else one per item."""
    n_items, n_coders = codes.shape
    if patterns_fit(k, n_coders):
        return pattern_tables(k, n_coders)[2], rating_patterns(codes, k)
    rows = np.broadcast_to(np.arange(n_items)[:, None], codes.shape)
    present = codes >= 0
    counts = np.bincount(
        rows[present] * k + codes[present].astype(np.intp), minlength=n_items * k
    ).reshape(n_items, k)
    return counts, np.ones(n_items)


def asymptotic(
    coefficient: float | None, variance: float | None, n_rated: int, level: float
) -> tuple[float | None, float | None, float | None, Interval, str | None]:
    """SE, t statistic, two-sided p-value (t with n - 1 df), interval as irrCAC gives them
    (the upper limit capped at 1), and why any of them is None."""
    if coefficient is None or variance is None or n_rated < 2:
        why = (
            "The coefficient is undefined, so it has no standard error."
            if coefficient is None
            else f"On {n_rated} rated item Gwet's variance is undefined (it divides by "
            "N - 1), so there is no standard error, interval or p-value."
        )
        return (
            None,
            None,
            None,
            Interval(None, None, level, VARIANCE_METHOD, undefined_reason=why),
            why,
        )
    se = math.sqrt(max(variance, 0.0))
    df = n_rated - 1
    half = se * t_quantile(level, df)
    ci = Interval(coefficient - half, min(1.0, coefficient + half), level, VARIANCE_METHOD)
    if se == 0:
        return se, None, None, ci, "The standard error is 0, so the t-test is undefined."
    t = coefficient / se
    return se, t, max(0.0, 1.0 - t_central(abs(t), df)), ci, None


# --- The generalized Fleiss' kappa ---------------------------------------------------------


@dataclass(frozen=True)
class FleissGeneralized(ResultMixin):
    """Gwet's generalized Fleiss' kappa: every item, whatever number of coders rated it.

    Attributes
    ----------
    kappa : float or None
        ``(p_a - p_e) / (1 - p_e)`` with ``p_e = sum_k pi_k**2``.
    se : float or None
        Gwet's (2014) linearization standard error (irrCAC's ``coeff.se``).
    ci : Interval
        ``kappa -/+ t(N - 1) se``, the upper limit capped at 1 (irrCAC's ``conf.int``).
    t, p_value : float or None
        ``kappa / se`` and its two-sided p-value on N - 1 df.
    observed_agreement, expected_agreement : float or None
        p_a (over items with two or more ratings) and p_e.
    band : str or None
        Landis & Koch band of ``kappa`` ("poor" below 0; with missing ratings the
        generalized kappa can fall below -1, as p_a and p_e use different items).
    n_items : int
        Items with at least one rating (they set pi_k and the variance's N).
    n_items_pairable : int
        Items with two or more ratings (they set p_a).
    categories : tuple of str
    uses : str
        Which items the figure uses, in words.
    undefined_reason : str or None
    """

    kappa: float | None
    se: float | None
    ci: Interval
    t: float | None
    p_value: float | None
    observed_agreement: float | None
    expected_agreement: float | None
    band: str | None
    n_items: int
    n_items_pairable: int
    categories: tuple[str, ...]
    uses: str = (
        "every item with two or more ratings for agreement, every rated item for the "
        "category shares (Gwet 2014)"
    )
    undefined_reason: str | None = None


def fleiss_generalized_from_codes(
    codes: np.ndarray, categories: tuple[str, ...], level: float = 0.95
) -> FleissGeneralized:
    """:func:`fleiss_kappa_generalized` on an items x coders code array."""
    counts, weight = item_counts(codes, len(categories))
    sums = gwet_sums(counts, weight, len(categories), "fleiss")
    se, t, p, ci, reason = asymptotic(sums.coefficient, sums.variance, sums.n_rated, level)
    if sums.n_pairable == 0:
        reason = "No item was rated by two or more coders, so the generalized kappa has no data."
    elif sums.coefficient is None:
        reason = (
            "Every rating is in one category, so chance agreement is 1 and kappa is undefined "
            "(0/0)."
        )
    return FleissGeneralized(
        kappa=sums.coefficient,
        se=se,
        ci=ci,
        t=finite(t) if t is not None else None,
        p_value=p,
        observed_agreement=sums.observed,
        expected_agreement=sums.expected,
        band=None if sums.coefficient is None else landis_koch(max(sums.coefficient, -1.0)),
        n_items=sums.n_rated,
        n_items_pairable=sums.n_pairable,
        categories=categories,
        undefined_reason=reason,
    )


def fleiss_kappa_generalized(
    data: Any,
    *,
    categories: Iterable[Any] | None = None,
    coders: Sequence[str] | None = None,
    ci: float = 0.95,
) -> FleissGeneralized:
    """Gwet's generalized Fleiss' kappa for missing ratings, with its variance.

    Unlike :func:`agreement.fleiss_kappa`, which keeps only the items every coder rated,
    this uses every item: agreement over the items with two or more ratings, category
    shares over the items with one or more (Gwet 2014; irrCAC's ``fleiss.kappa.raw``).
    With no missing rating both are the same kappa.

    Parameters
    ----------
    data : LabelMatrix, DataFrame or 2-D array_like
    categories : iterable of str, optional
    coders : sequence of str, optional
    ci : float
        Level of the interval.

    Returns
    -------
    FleissGeneralized

    Examples
    --------
    >>> round(fleiss_kappa_generalized([["a", "a", None], ["b", "b", "b"], ["a", "b", "a"],
    ...                                 ["b", None, "b"]]).kappa, 4)
    0.6571
    """
    from agreement._core import check_level

    level = check_level(ci)
    matrix = as_label_matrix(data, categories)
    if coders is not None:
        matrix = matrix.select(coders)
    return fleiss_generalized_from_codes(matrix.codes, matrix.categories, level)
