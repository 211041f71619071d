"""Krippendorff's alpha at the nominal, ordinal, interval and ratio levels, computed from
the coincidence matrix.

Missing ratings are allowed: every item with two or more ratings counts, items with one
rating do not (Krippendorff 2011). The coincidence matrix is accumulated with
``np.bincount`` one pair of coder columns at a time, so memory stays O(items) instead of the
O(items x values²) of the ``krippendorff`` package, and the result matches that package.

The levels differ only in the distance between two values (Krippendorff 2011, sec. E):
nominal 0 or 1; ordinal the squared count of pairable values between two ranks (the
categories' order gives the ranks); interval the squared difference; ratio the squared
difference over the squared sum. Interval and ratio need numeric labels.

References
----------
Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Departmental Papers
(ASC), University of Pennsylvania. https://repository.upenn.edu/asc_papers/43

Krippendorff, K. (2004). *Content Analysis: An Introduction to Its Methodology* (2nd ed.),
ch. 11. Sage.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from agreement._core import (
    SMALL_TABLE,
    agreement_by_category,
    finite,
    pair_counts,
    pairable_totals,
    pattern_tables,
    patterns_fit,
    rating_patterns,
    ratings_per_item,
)
from agreement.matrix import as_label_matrix
from agreement.results import ResultMixin

__all__ = ["LEVELS", "KrippendorffAlpha", "coincidence_matrix", "krippendorff_alpha"]

LEVELS = ("nominal", "ordinal", "interval", "ratio")
"""Levels of measurement :func:`krippendorff_alpha` knows."""


@dataclass(frozen=True)
class KrippendorffAlpha(ResultMixin):
    """Krippendorff's alpha.

    Attributes
    ----------
    alpha : float or None
        ``1 - D_o / D_e``.
    metric : str
        ``"nominal"``, ``"ordinal"``, ``"interval"``, ``"ratio"`` or ``"masi"``.
    observed_disagreement, expected_disagreement : float or None
        D_o and D_e.
    n_items : int
        Pairable items (rated by two or more coders).
    n_items_unpairable : int
        Items with a single rating, which do not count.
    n_values : int
        Pairable ratings (n..).
    undefined_reason : str or None
        Why ``alpha`` is None.
    """

    alpha: float | None
    metric: str
    observed_disagreement: float | None
    expected_disagreement: float | None
    n_items: int
    n_items_unpairable: int
    n_values: int
    undefined_reason: str | None = None


def _pairable_weights(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Per-item weights 1 / (m_u - 1) (0 if unpairable), m, #pairable, #single-rating."""
    m = ratings_per_item(codes)
    n_coders = codes.shape[1]
    by_m = np.zeros(n_coders + 1)
    by_m[2:] = 1.0 / np.arange(1, n_coders)
    hist = np.bincount(m, minlength=n_coders + 1)
    n_single = int(hist[1]) if n_coders >= 1 else 0
    return by_m[m], m, int(hist[2:].sum()), n_single


@functools.lru_cache(maxsize=32)
def _pattern_sums_table(k: int, n_coders: int) -> np.ndarray:
    """Per rating pattern, the whole numbers nominal alpha sums (float, read-only).

    Columns: ``n_c`` if the pattern is pairable (k columns), then its ordered agreeing
    pairs if it has m = 2, 3, ..., n_coders ratings (n_coders - 1 columns), then 1 if
    pairable, then 1 if it has a single rating.
    """
    m, agreeing, counts = pattern_tables(k, n_coders)
    pairable = m >= 2
    by_m = agreeing[:, None] * (m[:, None] == np.arange(2, n_coders + 1))
    table = np.column_stack([counts * pairable[:, None], by_m, pairable, m == 1])
    table = table.astype(np.float64)
    table.flags.writeable = False
    return table


def _sums_by_pattern(codes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Nominal alpha's sums from items counted by rating pattern (few coders and categories).

    Returns the weighted agreeing pairs by number of ratings m (their total is the sum of
    the coincidence matrix's diagonal), the margins n_c, and the numbers of pairable and of
    single-rating items. The pattern counts times a table of whole numbers give exact
    integer sums (below 2**53); only then does 1 / (m - 1) weigh each m's agreeing pairs.
    """
    n_coders = codes.shape[1]
    sums = rating_patterns(codes, k).astype(np.float64) @ _pattern_sums_table(k, n_coders)
    matched = sums[k : k + n_coders - 1] / np.arange(1, n_coders)
    return matched, sums[:k], int(sums[-2]), int(sums[-1])


def coincidence_matrix(data: Any, *, categories: Iterable[Any] | None = None) -> np.ndarray:
    """Krippendorff's coincidence matrix of nominal labels.

    Parameters
    ----------
    data : LabelMatrix, DataFrame or 2-D array_like
        Labels, items x coders; missing ratings allowed.
    categories : iterable of str, optional

    Returns
    -------
    ndarray of float, shape (k, k)
        ``o[c, k] = sum_u #{ordered pairs of ratings (c, k) in u by different coders} /
        (m_u - 1)`` over items u with m_u >= 2 ratings, in ``categories`` order.
    """
    matrix = as_label_matrix(data, categories)
    weights, _, _, _ = _pairable_weights(matrix.codes)
    return pair_counts(matrix.codes, len(matrix.categories), weights)


def alpha_from_coincidences(
    coincidences: np.ndarray,
    distance: np.ndarray,
    metric: str,
    n_items: int,
    n_items_unpairable: int,
    labels: tuple[str, ...],
) -> KrippendorffAlpha:
    """Alpha from a coincidence matrix and a distance matrix (zero diagonal)."""

    def undefined(reason: str, observed: float | None = None) -> KrippendorffAlpha:
        return KrippendorffAlpha(
            None, metric, observed, None if observed is None else 0.0,
            n_items, n_items_unpairable, n_total, reason,
        )  # fmt: skip

    n_v = coincidences.sum(axis=0)
    n_total = round(float(n_v.sum()))
    if n_items == 0:
        return undefined("No item was rated by two or more coders, so alpha has no data.")
    n = float(n_v.sum())
    expected_pairs = (np.outer(n_v, n_v) - np.diag(n_v)) / (n - 1.0)
    observed_sum = float((coincidences * distance).sum())
    expected_sum = float((expected_pairs * distance).sum())
    if expected_sum <= 0.0:
        used = [labels[i] for i in np.flatnonzero(n_v > 0)]
        what = f"is {used[0]!r}" if len(used) == 1 else "is at zero distance from the others"
        return undefined(
            f"Every pairable rating {what}, so expected disagreement is 0 and alpha is "
            "undefined (0/0); observed agreement is 100%.",
            observed_sum / n,
        )
    return KrippendorffAlpha(
        alpha=finite(1.0 - observed_sum / expected_sum),
        metric=metric,
        observed_disagreement=observed_sum / n,
        expected_disagreement=expected_sum / n,
        n_items=n_items,
        n_items_unpairable=n_items_unpairable,
        n_values=n_total,
    )


def level_distance(level: str, labels: tuple[str, ...], margins: np.ndarray) -> np.ndarray:
    """Krippendorff's (2011) squared distance between every two categories at ``level``.

    Parameters
    ----------
    level : {"nominal", "ordinal", "interval", "ratio"}
    labels : tuple of str
        The categories, in rank order (ordinal); numbers as text (interval, ratio).
    margins : ndarray, shape (k,)
        n_c, the pairable values per category (the coincidence matrix's margins), which
        the ordinal distance counts.

    Raises
    ------
    ValueError
        For an unknown level, or a label that is not a number at the interval or ratio
        level (or a negative one at the ratio level).
    """
    k = len(labels)
    if level == "nominal":
        return 1.0 - np.eye(k)
    if level == "ordinal":
        cumulative = np.concatenate([[0.0], np.cumsum(margins)])
        low = np.minimum.outer(np.arange(k), np.arange(k))
        high = np.maximum.outer(np.arange(k), np.arange(k))
        between = cumulative[high + 1] - cumulative[low] - (margins[:, None] + margins) / 2.0
        distance = between**2
        np.fill_diagonal(distance, 0.0)
        return distance
    if level not in LEVELS:
        raise ValueError(
            f"The level of measurement must be one of {', '.join(LEVELS)}; got {level!r}."
        )
    values = []
    for label in labels:
        try:
            values.append(float(label))
        except ValueError:
            raise ValueError(
                f"{level.capitalize()} alpha needs numeric labels; {label!r} is not a number "
                "(use the ordinal level for ranked codes)."
            ) from None
    v = np.array(values)
    if not np.isfinite(v).all():
        raise ValueError(f"{level.capitalize()} alpha needs finite numbers as labels.")
    difference = v[:, None] - v[None, :]
    if level == "interval":
        return difference**2
    if (v < 0).any():
        raise ValueError("Ratio alpha needs non-negative numbers as labels.")
    total = v[:, None] + v[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(total > 0, difference / np.where(total > 0, total, 1.0), 0.0)
    return ratio**2


def krippendorff_alpha(
    data: Any, *, categories: Iterable[Any] | None = None, level: str = "nominal"
) -> KrippendorffAlpha:
    """Krippendorff's alpha at a level of measurement, tolerating missing ratings.

    Parameters
    ----------
    data : LabelMatrix, DataFrame or 2-D array_like
        Labels, items x coders (or long form; see :func:`agreement.as_label_matrix`).
        ``None``/``np.nan``/``pd.NA`` are missing; the string ``"nan"`` is a label.
    categories : iterable of str, optional
        Allowed labels; a label outside the list is a ValueError naming it. At the ordinal
        level their order is the rank order (default: the labels' natural order, so "2"
        before "10").
    level : {"nominal", "ordinal", "interval", "ratio"}
        Level of measurement. Interval and ratio read every category as a number.

    Returns
    -------
    KrippendorffAlpha
        ``alpha`` is None, with a reason, when no item has two ratings or every pairable
        rating is the same label (the ``krippendorff`` package raises in both cases).

    Notes
    -----
    ``alpha = 1 - (n - 1) * sum_ck o_ck d_ck / sum_ck n_c n_k d_ck`` with ``o`` the
    coincidence matrix, ``n_c`` its margins, ``n`` the number of pairable ratings and
    ``d`` the squared distance of the level (:func:`level_distance`): nominal 1 off the
    diagonal; ordinal ``(sum_{g=c..k} n_g - (n_c + n_k) / 2)**2``; interval ``(c - k)**2``;
    ratio ``((c - k) / (c + k))**2``. On Krippendorff's (2011) 4-observer example: nominal
    0.743, ordinal 0.815, interval 0.849, ratio 0.797.

    References
    ----------
    Krippendorff (2011), sections C-E. See the module docstring.

    Examples
    --------
    >>> round(krippendorff_alpha([["a", "a"], ["b", "b"], ["a", "b"]]).alpha, 4)
    0.4444
    >>> round(krippendorff_alpha([[1, 1], [2, 2], [3, 3], [1, 3]], level="interval").alpha, 4)
    0.4167
    """
    if level not in LEVELS:
        raise ValueError(
            f"The level of measurement must be one of {', '.join(LEVELS)}; got {level!r}."
        )
    matrix = as_label_matrix(data, categories)
    if level != "nominal":
        weights, _, n_items, n_single = _pairable_weights(matrix.codes)
        coincidences = pair_counts(matrix.codes, len(matrix.categories), weights)
        if n_items == 0:
            return KrippendorffAlpha(
                None, level, None, None, 0, n_single, 0,
                "No item was rated by two or more coders, so alpha has no data.",
            )  # fmt: skip
        distance = level_distance(level, matrix.categories, coincidences.sum(axis=0))
        return alpha_from_coincidences(
            coincidences, distance, level, n_items, n_single, matrix.categories
        )
    k = len(matrix.categories)
    codes = matrix.codes
    # Nominal distance is 1 off the diagonal, so only the coincidence matrix's diagonal
    # (o_cc) and margins (n_c) are needed: sum_{c != k} o_ck = n - sum_c o_cc and
    # sum_{c != k} n_c n_k = n**2 - sum_c n_c**2.
    if patterns_fit(k, matrix.n_coders):
        matched, n_c, n_items, n_single = _sums_by_pattern(codes, k)
    else:
        weights, m, n_items, n_single = _pairable_weights(codes)
        if (k + 1) ** 2 <= SMALL_TABLE:
            coincidences = pair_counts(codes, k, weights)
            matched = np.diagonal(coincidences)
            n_c = np.rint(coincidences.sum(axis=0))  # whole numbers, up to rounding
        else:
            matched = agreement_by_category(codes, k, weights)
            n_c = pairable_totals(codes, k, m).astype(np.float64)
    # n_c holds whole numbers: Python sums of them (and of their squares) are exact.
    totals = n_c.tolist()
    n = float(sum(totals))
    if n_items == 0:
        return KrippendorffAlpha(
            None, "nominal", None, None, 0, n_single, 0,
            "No item was rated by two or more coders, so alpha has no data.",
        )  # fmt: skip
    observed_sum = max(n - float(matched.sum()), 0.0)
    expected_sum = (n * n - float(sum(t * t for t in totals))) / (n - 1.0)
    if expected_sum <= 0.0:
        only = matrix.categories[next(i for i, t in enumerate(totals) if t)]
        return KrippendorffAlpha(
            None, "nominal", 0.0, 0.0, n_items, n_single, int(n),
            f"Every pairable rating is {only!r}, so expected disagreement is 0 and alpha is "
            "undefined (0/0); observed agreement is 100%.",
        )  # fmt: skip
    return KrippendorffAlpha(
        alpha=finite(1.0 - observed_sum / expected_sum),
        metric="nominal",
        observed_disagreement=observed_sum / n,
        expected_disagreement=expected_sum / n,
        n_items=n_items,
        n_items_unpairable=n_single,
        n_values=int(n),
    )
