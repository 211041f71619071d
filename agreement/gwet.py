"""Gwet's AC1 for two or more coders, tolerating missing ratings.

References
----------
Gwet, K. L. (2008). Computing inter-rater reliability and its variance in the presence of
high agreement. *British Journal of Mathematical and Statistical Psychology*, 61(1),
29-48. https://doi.org/10.1348/000711006X126600

Gwet, K. L. (2014). *Handbook of Inter-Rater Reliability* (4th ed.), ch. 4. Advanced
Analytics.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agreement._core import check_level
from agreement.generalized import asymptotic, gwet_sums, item_counts
from agreement.matrix import as_label_matrix
from agreement.results import Interval, ResultMixin

__all__ = ["GwetAC1", "gwet_ac1"]


@dataclass(frozen=True)
class GwetAC1(ResultMixin):
    """Gwet's first-order agreement coefficient.

    Attributes
    ----------
    ac1 : float or None
        ``(p_a - p_e) / (1 - p_e)``.
    observed_agreement : float or None
        p_a, mean share of agreeing pairs over items with two or more ratings.
    expected_agreement : float or None
        p_e, ``sum_k pi_k (1 - pi_k) / (q - 1)``.
    n_items : int
        Items with two or more ratings (used for p_a).
    n_categories : int
        q, the number of categories (the ``categories`` given, else those used).
    undefined_reason : str or None
        Why a statistic is None.
    se : float or None
        Gwet's (2014) linearization standard error over the items with one or more ratings
        (irrCAC's ``gwet.ac1.raw`` ``coeff.se``, population size infinite).
    ci : Interval or None
        ``ac1 -/+ t(N - 1) se``, the upper limit capped at 1 (irrCAC's ``conf.int``).
    p_value : float or None
        Two-sided p-value of ``ac1 / se`` on N - 1 df.
    n_items_rated : int
        Items with one or more ratings (they set pi_k and the variance's N).
    """

    ac1: float | None
    observed_agreement: float | None
    expected_agreement: float | None
    n_items: int
    n_categories: int
    undefined_reason: str | None = None
    se: float | None = None
    ci: Interval | None = None
    p_value: float | None = None
    n_items_rated: int = 0


def gwet_ac1(data: Any, *, categories: Iterable[Any] | None = None, ci: float = 0.95) -> GwetAC1:
    """Gwet's AC1 for nominal labels, with Gwet's standard error and interval.

    Parameters
    ----------
    data : LabelMatrix, DataFrame or 2-D array_like
        Labels, items x coders (or long form); missing ratings allowed.
    categories : iterable of str, optional
        Allowed labels. They also set q: AC1 depends on the number of categories, so pass
        the codebook's list to count categories nobody used (as irrCAC's ``categ.labels``).
    ci : float
        Level of the interval.

    Returns
    -------
    GwetAC1

    Notes
    -----
    With r_ik ratings of item i in category k and r_i = sum_k r_ik:
    ``p_a = mean_{i: r_i >= 2} sum_k r_ik (r_ik - 1) / (r_i (r_i - 1))``,
    ``pi_k = mean_{i: r_i >= 1} r_ik / r_i`` and
    ``p_e = sum_k pi_k (1 - pi_k) / (q - 1)`` (Gwet 2008, 2014). The variance is Gwet's
    (2014), see :func:`agreement.generalized.gwet_sums`. Items are counted by rating
    pattern when the patterns are few (one ``bincount``), else one row per item.
    """
    level = check_level(ci)
    matrix = as_label_matrix(data, categories)
    q = len(matrix.categories)
    counts, weight = item_counts(matrix.codes, q)
    sums = gwet_sums(counts, weight, q, "ac1")
    if sums.n_pairable == 0:
        return GwetAC1(
            None, None, None, 0, q, "No item was rated by two or more coders, so AC1 has no data.",
            n_items_rated=sums.n_rated,
        )  # fmt: skip
    if q < 2:
        return GwetAC1(
            None, sums.observed, None, sums.n_pairable, q,
            f"Only one category ({matrix.categories[0]!r}) exists, so AC1's chance agreement "
            "(divided by q - 1) is undefined; pass the codebook's categories to count the "
            "unused ones.",
            n_items_rated=sums.n_rated,
        )  # fmt: skip
    se, _, p_value, interval, reason = asymptotic(
        sums.coefficient, sums.variance, sums.n_rated, level
    )
    if sums.coefficient is None:
        reason = "Chance agreement is 1, so AC1 is undefined (0/0)."
    return GwetAC1(
        sums.coefficient, sums.observed, sums.expected, sums.n_pairable, q, reason,
        se, interval, p_value, sums.n_rated,
    )  # fmt: skip
