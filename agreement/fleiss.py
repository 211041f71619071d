"""Fleiss' kappa for two or more coders, overall and per category, with the z-test.

References
----------
Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters.
*Psychological Bulletin*, 76(5), 378-382. https://doi.org/10.1037/h0031619

Cicchetti, D. V., & Fleiss, J. L. (1977). Comparison of the null distributions of weighted
kappa and the C ordinal statistic. *Applied Psychological Measurement*, 1(2), 195-201.
https://doi.org/10.1177/014662167700100206

Cicchetti, D. V. (1981). Testing the normal approximation and minimal sample size
requirements of weighted kappa when the number of categories is large. *Applied
Psychological Measurement*, 5(1), 101-104. https://doi.org/10.1177/014662168100500114

Fleiss, J. L., Nee, J. C. M., & Landis, J. R. (1979). Large sample variance of kappa in
the case of different sets of raters. *Psychological Bulletin*, 86(5), 974-977.
https://doi.org/10.1037/0033-2909.86.5.974
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agreement._core import (
    agreement_by_category,
    category_totals,
    finite,
    pattern_tables,
    patterns_fit,
    rating_patterns,
    ratings_per_item,
    two_sided_p,
)
from agreement.bands import landis_koch
from agreement.matrix import as_label_matrix, label_name
from agreement.results import ResultMixin

__all__ = [
    "CategoryKappa",
    "FleissKappa",
    "fleiss_kappa",
    "fleiss_kappa_counts",
    "min_items_for_z",
    "too_few_for_z",
]


def min_items_for_z(n_categories: int) -> int:
    """Fewest items for a large-sample z-test of kappa with ``n_categories`` categories.

    ``2 k**2`` (Cicchetti & Fleiss 1977; Cicchetti 1981): the smallest number of items for
    which the normal approximation to kappa's null distribution held in their simulations
    (about 20 items for 3 categories, 200 for 10). A per-category kappa (one category
    against the rest) has k = 2, so 8 items. ``k`` counts the categories in use: an unused
    one adds nothing to kappa or to its variance.
    """
    return 2 * max(int(n_categories), 2) ** 2


def too_few_for_z(
    n_items: int, n_categories: int, min_items: int | None, what: str = "kappa"
) -> str | None:
    """Why the z-test of ``what`` is withheld on ``n_items`` items, or None.

    ``min_items`` None applies :func:`min_items_for_z`; an int is the minimum itself (0 to
    always test).
    """
    needed = min_items_for_z(n_categories) if min_items is None else int(min_items)
    if n_items >= needed:
        return None
    basis = (
        f"2k² for k = {max(n_categories, 2)} categories, Cicchetti & Fleiss 1977"
        if min_items is None
        else "the minimum asked for"
    )
    return (
        f"The large-sample z-test of {what} needs at least {needed} items ({basis}); got "
        f"{n_items}, so SE0, z and p are not given."
    )


@dataclass(frozen=True)
class CategoryKappa(ResultMixin):
    """Fleiss' kappa of one category against all others (Fleiss 1971, eq. 10).

    Attributes
    ----------
    category : str
    kappa : float or None
    se0 : float or None
        Standard error under H0: kappa = 0, ``sqrt(2 / (N n (n - 1)))``; None on fewer
        than 8 items (:func:`min_items_for_z` with k = 2).
    z, p_value : float or None
        ``kappa / se0`` and its two-sided normal p-value.
    proportion : float or None
        Share of all ratings in this category (p_j).
    undefined_reason : str or None
        Why a statistic is None (e.g. the category was never used).
    """

    category: str
    kappa: float | None
    se0: float | None
    z: float | None
    p_value: float | None
    proportion: float | None
    undefined_reason: str | None = None


@dataclass(frozen=True)
class FleissKappa(ResultMixin):
    """Fleiss' kappa over the items every coder rated.

    Attributes
    ----------
    kappa : float or None
        ``(P̄ - P̄e) / (1 - P̄e)``.
    se0 : float or None
        Asymptotic standard error under H0: kappa = 0 (Fleiss, Nee & Landis 1979); None on
        fewer than ``2 k**2`` items for k categories in use (:func:`min_items_for_z`).
    z, p_value : float or None
        ``kappa / se0`` and its two-sided normal p-value.
    observed_agreement : float or None
        P̄, the mean share of agreeing coder pairs per item.
    expected_agreement : float or None
        P̄e, the chance agreement ``sum_j p_j**2``.
    band : str or None
        Landis & Koch band of ``kappa``.
    n_items : int
        Items used (rated by every coder).
    n_coders : int
        Coders per item (n).
    categories : tuple of str
    per_category : tuple of CategoryKappa
        One per category, in ``categories`` order.
    items_left_out : tuple
        Ids of items left out because not every coder rated them.
    undefined_reason : str or None
        Why a statistic is None.
    """

    kappa: float | None
    se0: float | None
    z: float | None
    p_value: float | None
    observed_agreement: float | None
    expected_agreement: float | None
    band: str | None
    n_items: int
    n_coders: int
    categories: tuple[str, ...]
    per_category: tuple[CategoryKappa, ...]
    items_left_out: tuple[Hashable, ...] = ()
    undefined_reason: str | None = None


def _undefined(
    reason: str,
    n_items: int,
    n_coders: int,
    categories: tuple[str, ...],
    items_left_out: tuple[Hashable, ...],
    observed: float | None = None,
    expected: float | None = None,
    proportions: np.ndarray | None = None,
) -> FleissKappa:
    shares = [None] * len(categories) if proportions is None else [float(x) for x in proportions]
    per_category = tuple(
        CategoryKappa(c, None, None, None, None, share, reason)
        for c, share in zip(categories, shares, strict=True)
    )
    return FleissKappa(
        None, None, None, None, observed, expected, None, n_items, n_coders, categories,
        per_category, items_left_out, reason,
    )  # fmt: skip


def _unused_reason(
    name: str, used_on_left_out: np.ndarray | None, categories: tuple[str, ...]
) -> str:
    """Why a category with no rating on the items used has no kappa."""
    if used_on_left_out is not None and used_on_left_out[categories.index(name)]:
        return (
            f"Category {name!r} was used only on items left out (not rated by every coder), "
            "so its kappa is undefined."
        )
    return f"Category {name!r} was never used, so its kappa is undefined."


def fleiss_from_sums(
    n_items: int,
    n_coders: int,
    totals: np.ndarray,
    agreeing_pairs: np.ndarray,
    categories: tuple[str, ...],
    items_left_out: tuple[Hashable, ...] = (),
    used_on_left_out: np.ndarray | None = None,
    min_items_z: int | None = None,
) -> FleissKappa:
    """Fleiss' kappa from sufficient statistics (used by the public functions).

    Parameters
    ----------
    n_items : int
        N, items with n ratings each.
    n_coders : int
        n, ratings per item.
    totals : ndarray, shape (k,)
        ``T_j = sum_i n_ij``, ratings per category.
    agreeing_pairs : ndarray, shape (k,)
        ``D_j = sum_i n_ij (n_ij - 1)``, ordered agreeing pairs per category.
    used_on_left_out : ndarray of bool, shape (k,), optional
        Whether each category was given on an item left out (not rated by every coder),
        so that an unused category's reason can say so.
    min_items_z : int, optional
        Fewest items for the z-tests (default :func:`min_items_for_z`; 0 always tests).
    """
    big_n, n = n_items, n_coders
    if n < 2:
        return _undefined(
            f"Fleiss' kappa needs at least two coders per item; got {n}.",
            big_n, n, categories, items_left_out,
        )  # fmt: skip
    if big_n == 0:
        return _undefined(
            "No item was rated by every coder, so Fleiss' kappa has no data.",
            0, n, categories, items_left_out,
        )  # fmt: skip
    totals = np.asarray(totals, dtype=np.float64)
    agreeing_pairs = np.asarray(agreeing_pairs, dtype=np.float64)
    pairs = big_n * n * (n - 1)
    p = totals / (big_n * n)
    observed = float(agreeing_pairs.sum() / pairs)
    expected = float((p * p).sum())
    used = np.flatnonzero(totals > 0)
    if len(used) == 1:
        only = categories[int(used[0])]
        return _undefined(
            f"Every rating is {only!r}, so chance agreement is 1 and kappa is undefined "
            "(0/0); observed agreement is 100%.",
            big_n, n, categories, items_left_out, observed, expected, p,
        )  # fmt: skip
    kappa = (observed - expected) / (1.0 - expected)
    pq = p * (1.0 - p)
    sum_pq = float(pq.sum())
    var0 = 2.0 / pairs * (sum_pq**2 - float((pq * (1.0 - 2.0 * p)).sum())) / sum_pq**2
    se0 = math.sqrt(var0) if var0 > 0 else None
    reason = None if se0 else "The standard error under H0 is 0, so the z-test is undefined."
    too_few = too_few_for_z(big_n, len(used), min_items_z, "Fleiss' kappa") if se0 else None
    if too_few:
        se0, reason = None, too_few
    z = kappa / se0 if se0 else None
    se0_category = math.sqrt(2.0 / pairs)
    too_few_category = too_few_for_z(big_n, 2, min_items_z, "a category's kappa")
    per_category = []
    rows = zip(categories, totals.tolist(), agreeing_pairs.tolist(), p.tolist(), strict=True)
    for name, total, agreeing, share in rows:
        if total == 0:
            per_category.append(
                CategoryKappa(name, None, None, None, None, 0.0,
                              _unused_reason(name, used_on_left_out, categories))
            )  # fmt: skip
            continue
        disagreeing = (n - 1) * total - agreeing  # sum_i n_ij (n - n_ij)
        kappa_j = 1.0 - disagreeing / (pairs * share * (1.0 - share))
        if too_few_category:
            per_category.append(
                CategoryKappa(name, finite(kappa_j), None, None, None, share, too_few_category)
            )
            continue
        z_j = kappa_j / se0_category
        per_category.append(
            CategoryKappa(name, finite(kappa_j), se0_category, finite(z_j),
                          two_sided_p(z_j), share)
        )  # fmt: skip
    return FleissKappa(
        kappa=finite(kappa),
        se0=se0,
        z=finite(z) if z is not None else None,
        p_value=two_sided_p(z) if z is not None else None,
        observed_agreement=observed,
        expected_agreement=expected,
        band=landis_koch(kappa),
        n_items=big_n,
        n_coders=n,
        categories=categories,
        per_category=tuple(per_category),
        items_left_out=items_left_out,
        undefined_reason=reason,
    )


def fleiss_kappa(
    data: Any,
    *,
    categories: Iterable[Any] | None = None,
    coders: Sequence[str] | None = None,
    min_items_z: int | None = None,
) -> FleissKappa:
    """Fleiss' kappa for two or more coders, with per-category kappas and z-tests.

    Only items rated by every (selected) coder are used; the others are listed in
    ``items_left_out``. With two coders this is Scott's pi.

    Parameters
    ----------
    data : LabelMatrix, DataFrame or 2-D array_like
        Labels, items x coders (or long form; see :func:`agreement.as_label_matrix`).
    categories : iterable of str, optional
        Allowed labels; a label outside the list is a ValueError naming it.
    coders : sequence of str, optional
        Use only these coders.
    min_items_z : int, optional
        Fewest items for the large-sample z-tests. Default: ``2 k**2`` for k categories in
        use, and 8 for a category against the rest (:func:`min_items_for_z`; Cicchetti &
        Fleiss 1977). Below it SE0, z and p are None with the reason. 0 always tests.

    Returns
    -------
    FleissKappa
        Statistics that cannot be computed are None with ``undefined_reason`` set: fewer
        than two coders, no complete item, one category used by everyone, or too few items
        for the z-test.

    Notes
    -----
    With N items, n ratings per item and n_ij ratings of item i in category j:
    ``p_j = sum_i n_ij / (N n)``, ``P_i = (sum_j n_ij**2 - n) / (n (n - 1))``,
    ``kappa = (mean(P_i) - sum_j p_j**2) / (1 - sum_j p_j**2)``. The variance under H0 is
    ``2 / (N n (n-1)) * ((sum pq)**2 - sum pq (q - p)) / (sum pq)**2`` (Fleiss, Nee &
    Landis 1979); per category ``kappa_j = 1 - sum_i n_ij (n - n_ij) / (N n (n-1) p_j q_j)``
    with variance ``2 / (N n (n - 1))`` under H0 (Fleiss 1971).

    References
    ----------
    Fleiss (1971); Fleiss, Nee & Landis (1979); Cicchetti & Fleiss (1977); Cicchetti
    (1981). See the module docstring.

    Examples
    --------
    >>> fleiss_kappa([["a", "a", "b"], ["b", "b", "b"], ["a", "a", "a"]]).kappa
    0.55
    """
    matrix = as_label_matrix(data, categories)
    if coders is not None:
        matrix = matrix.select(coders)
    codes = matrix.codes
    k = len(matrix.categories)
    if patterns_fit(k, matrix.n_coders):
        return _fleiss_by_pattern(matrix, min_items_z)
    complete = ratings_per_item(codes) == matrix.n_coders
    left_out: tuple[Hashable, ...] = ()
    used_on_left_out = None
    if not complete.all():
        left_out = tuple(matrix.items[~complete].tolist())
        used_on_left_out = category_totals(codes[~complete], k) > 0
        codes = codes[complete]
    totals = category_totals(codes, k)
    agreeing = agreement_by_category(codes, k)
    return fleiss_from_sums(
        codes.shape[0], matrix.n_coders, totals, agreeing, matrix.categories, left_out,
        used_on_left_out, min_items_z,
    )  # fmt: skip


def _fleiss_by_pattern(matrix: Any, min_items_z: int | None) -> FleissKappa:
    """:func:`fleiss_kappa` from items counted by rating pattern: one ``bincount`` of a
    per-item key (:func:`agreement._core.rating_patterns`), then whole-number sums over the
    patterns (int64, exact). Item ids are looked at only when some item is incomplete."""
    k, n_coders = len(matrix.categories), matrix.n_coders
    counts = rating_patterns(matrix.codes, k)
    m, _, per_category = pattern_tables(k, n_coders)
    complete = m == n_coders
    left_out: tuple[Hashable, ...] = ()
    used_on_left_out = None
    if counts[~complete].any():
        rated = ratings_per_item(matrix.codes) == n_coders
        left_out = tuple(matrix.items[~rated].tolist())
        used_on_left_out = (counts[~complete] @ per_category[~complete]) > 0
    full = counts[complete]
    table = per_category[complete]
    totals = full @ table
    agreeing = full @ (table * (table - 1))
    return fleiss_from_sums(
        int(full.sum()), n_coders, totals, agreeing, matrix.categories, left_out,
        used_on_left_out, min_items_z,
    )  # fmt: skip


def fleiss_kappa_counts(
    table: Any, *, categories: Iterable[Any] | None = None, min_items_z: int | None = None
) -> FleissKappa:
    """Fleiss' kappa from an items x categories table of counts.

    Parameters
    ----------
    table : 2-D array_like or DataFrame of non-negative integers
        ``table[i, j]`` coders who put item i in category j; every row must sum to the
        same number of coders (at least 2). A DataFrame's columns name the categories.
    categories : iterable of str, optional
        Category names, one per column.
    min_items_z : int, optional
        As in :func:`fleiss_kappa`.

    Returns
    -------
    FleissKappa

    Raises
    ------
    ValueError
        If the table is not 2-D, holds negative or fractional counts, or its rows sum to
        different numbers of coders (the rows are named).
    """
    names = list(table.columns) if hasattr(table, "columns") else None
    counts = np.asarray(table, dtype=np.float64)
    if counts.ndim != 2:
        raise ValueError(f"A count table must be 2-D (items x categories); got {counts.ndim}-D.")
    if np.isnan(counts).any() or (counts < 0).any() or (counts != np.round(counts)).any():
        raise ValueError("A count table must hold non-negative whole numbers.")
    if categories is not None:
        names = [label_name(c) for c in categories]
    if names is None:
        names = [str(j + 1) for j in range(counts.shape[1])]
    names = [label_name(c) for c in names]
    if len(names) != counts.shape[1]:
        raise ValueError(
            f"The count table has {counts.shape[1]} columns but {len(names)} category names."
        )
    raters = counts.sum(axis=1)
    if len(raters) and (raters != raters[0]).any():
        odd = np.flatnonzero(raters != raters[0])[:10]
        shown = ", ".join(f"row {i} has {int(raters[i])}" for i in odd)
        raise ValueError(
            f"Every item must be rated by the same number of coders; row 0 has "
            f"{int(raters[0]) if len(raters) else 0} but {shown}."
        )
    n = int(raters[0]) if len(raters) else 0
    totals = counts.sum(axis=0)
    agreeing = (counts * (counts - 1.0)).sum(axis=0)
    return fleiss_from_sums(
        counts.shape[0], n, totals, agreeing, tuple(names), min_items_z=min_items_z
    )
