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

import numpy as np

from agreement._core import finite, mean_pair_agreement, ratings_per_item
from agreement.matrix import as_label_matrix
from agreement.results import ResultMixin

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
    """

    ac1: float | None
    observed_agreement: float | None
    expected_agreement: float | None
    n_items: int
    n_categories: int
    undefined_reason: str | None = None


def gwet_ac1(data: Any, *, categories: Iterable[Any] | None = None) -> GwetAC1:
    """Gwet's AC1 for nominal labels.

    Parameters
    ----------
    data : LabelMatrix, DataFrame or 2-D array_like
        Labels, items x coders (or long form); missing ratings allowed.
    categories : iterable of str, optional
        Allowed labels. They also set q: AC1 depends on the number of categories, so pass
        the codebook's list to count categories nobody used (as irrCAC's ``categ.labels``).

    Returns
    -------
    GwetAC1

    Notes
    -----
    With r_ik ratings of item i in category k and r_i = sum_k r_ik:
    ``p_a = mean_{i: r_i >= 2} sum_k r_ik (r_ik - 1) / (r_i (r_i - 1))``,
    ``pi_k = mean_{i: r_i >= 1} r_ik / r_i`` and
    ``p_e = sum_k pi_k (1 - pi_k) / (q - 1)`` (Gwet 2008, 2014).
    """
    matrix = as_label_matrix(data, categories)
    q = len(matrix.categories)
    codes = matrix.codes
    observed, n_items = mean_pair_agreement(codes, q)
    if observed is None:
        return GwetAC1(
            None, None, None, 0, q, "No item was rated by two or more coders, so AC1 has no data."
        )
    r = ratings_per_item(codes)
    if q < 2:
        return GwetAC1(
            None, observed, None, n_items, q,
            f"Only one category ({matrix.categories[0]!r}) exists, so AC1's chance agreement "
            "(divided by q - 1) is undefined; pass the codebook's categories to count the "
            "unused ones.",
        )  # fmt: skip
    rated = r >= 1
    share = np.zeros(len(r))
    np.divide(1.0, r, out=share, where=rated)
    pi = np.zeros(q)
    for j in range(codes.shape[1]):
        column = codes[:, j]
        present = column >= 0
        pi += np.bincount(column[present].astype(np.intp), weights=share[present], minlength=q)
    pi /= int(rated.sum())
    expected = float((pi * (1.0 - pi)).sum() / (q - 1))
    return GwetAC1(finite((observed - expected) / (1.0 - expected)), observed, expected, n_items, q)
