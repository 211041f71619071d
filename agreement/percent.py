"""Percent agreement: the plain share of agreeing ratings, without chance correction."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from agreement._core import (
    mean_pair_agreement,
    pattern_tables,
    patterns_fit,
    rating_patterns,
    ratings_per_item,
)
from agreement.matrix import LabelMatrix, SetLabelMatrix, as_label_matrix
from agreement.results import ResultMixin

__all__ = ["PercentAgreement", "percent_agreement"]


@dataclass(frozen=True)
class PercentAgreement(ResultMixin):
    """Observed agreement without chance correction.

    Attributes
    ----------
    proportion : float or None
        Mean over items (with two or more ratings) of the share of coder pairs that gave
        the same label; for two coders, the share of items they agree on. In [0, 1];
        multiply by 100 for percent.
    unanimous : float or None
        Share of those items on which every coder who rated them gave the same label.
    n_items : int
        Items with two or more ratings.
    undefined_reason : str or None
        Why the proportions are None.
    """

    proportion: float | None
    unanimous: float | None
    n_items: int
    undefined_reason: str | None = None

    @property
    def percent(self) -> float | None:
        """``proportion`` x 100."""
        return None if self.proportion is None else 100.0 * self.proportion


def agreement_of_codes(codes: np.ndarray, n_values: int) -> PercentAgreement:
    """Percent agreement of an items x coders array of value indices (-1 missing).

    Items are counted by rating pattern when the patterns are few (one ``bincount``; the
    agreeing pairs summed as whole numbers per number of ratings), else item by item.
    """
    if patterns_fit(n_values, codes.shape[1]):
        return _agreement_by_pattern(codes, n_values)
    proportion, n_items = mean_pair_agreement(codes, n_values)
    if proportion is None:
        return PercentAgreement(
            None, None, 0, "No item was rated by two or more coders, so agreement has no data."
        )
    pairable = ratings_per_item(codes) >= 2
    high = np.where(codes >= 0, codes, -1).max(axis=1)
    low = np.where(codes >= 0, codes, np.iinfo(codes.dtype).max).min(axis=1)
    unanimous = float(((high == low) & pairable).sum()) / n_items
    return PercentAgreement(proportion, unanimous, n_items)


def _agreement_by_pattern(codes: np.ndarray, n_values: int) -> PercentAgreement:
    counts = rating_patterns(codes, n_values)
    m, agreeing, per_category = pattern_tables(n_values, codes.shape[1])
    pairable = m >= 2
    n_items = int(counts[pairable].sum())
    if n_items == 0:
        return PercentAgreement(
            None, None, 0, "No item was rated by two or more coders, so agreement has no data."
        )
    share = 0.0
    for r in range(2, codes.shape[1] + 1):
        with_r = m == r
        share += int(counts[with_r] @ agreeing[with_r]) / (r * (r - 1))
    unanimous = pairable & (per_category.max(axis=1) == m)
    return PercentAgreement(share / n_items, int(counts[unanimous].sum()) / n_items, n_items)


def percent_agreement(data: Any, *, categories: Iterable[Any] | None = None) -> PercentAgreement:
    """Share of agreeing coder pairs, averaged over items with two or more ratings.

    Parameters
    ----------
    data : LabelMatrix, SetLabelMatrix, DataFrame or 2-D array_like
        Labels, items x coders; missing ratings allowed. For a SetLabelMatrix two answers
        agree when they are the same set.
    categories : iterable of str, optional

    Returns
    -------
    PercentAgreement

    Examples
    --------
    >>> percent_agreement([["a", "a"], ["a", "b"]]).proportion
    0.5
    """
    if isinstance(data, SetLabelMatrix):
        return agreement_of_codes(data.codes, len(data.values))
    matrix: LabelMatrix = as_label_matrix(data, categories)
    return agreement_of_codes(matrix.codes, len(matrix.categories))
