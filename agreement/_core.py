"""Numerical helpers shared by the agreement modules (private)."""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

import numpy as np

MISSING = -1  # the code of a missing rating (as agreement.matrix.MISSING)

# Memory budget (array elements) of one chunk in the chunked code paths.
CHUNK_ELEMENTS = 1 << 20

# Largest (V + 1) x (V + 1) table binned at once; with more categories only the diagonal
# and the margins of the coincidence matrix are computed.
SMALL_TABLE = 1 << 16

# Largest number of rating patterns, (V + 1) ** n_coders, for which items are counted by
# pattern (see rating_patterns).
PATTERN_LIMIT = 1 << 12


def finite(value: float) -> float | None:
    """Return ``value`` as a Python float, or None when it is NaN or infinite."""
    value = float(value)
    return value if math.isfinite(value) else None


def two_sided_p(z: float) -> float:
    """Two-sided p-value of a standard normal statistic."""
    return math.erfc(abs(z) / math.sqrt(2.0))


def normal_quantile(level: float) -> float:
    """The z with P(|Z| <= z) = level for a standard normal Z."""
    return NormalDist().inv_cdf(0.5 + level / 2.0)


def check_level(ci: float) -> float:
    """Validate a confidence level strictly between 0 and 1."""
    if isinstance(ci, bool) or not isinstance(ci, (int, float)) or not 0.0 < float(ci) < 1.0:
        raise ValueError(f"The confidence level must be a number between 0 and 1; got {ci!r}.")
    return float(ci)


def check_n_boot(n_boot: int) -> int:
    """Validate a number of bootstrap resamples."""
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise ValueError(
            f"The number of bootstrap resamples must be a positive integer; got {n_boot!r}."
        )
    return int(n_boot)


def pair_counts(codes: np.ndarray, n_values: int, weights: np.ndarray | None = None) -> np.ndarray:
    """Weighted counts of ordered pairs of ratings given to the same item by different coders.

    Parameters
    ----------
    codes : ndarray of int, shape (n_items, n_coders)
        Category indices in ``range(n_values)``; negative means missing.
    n_values : int
        Number of categories V.
    weights : ndarray of float, shape (n_items,), optional
        Weight of each item's pairs (default 1).

    Returns
    -------
    ndarray of float, shape (V, V)
        ``out[c, k] = sum_u w_u * #{(a, b): a != b, codes[u, a] == c, codes[u, b] == k}``.
        With ``w_u = 1 / (m_u - 1)`` this is Krippendorff's coincidence matrix.

    Notes
    -----
    Memory is bounded by blocks of ``CHUNK_ELEMENTS`` rows' worth of cells, never
    O(n_items * V * V): with few coders each pair of coder columns is one ``np.bincount``
    per block; with many coders the per-item value counts of a block are multiplied.
    """
    n_items, n_coders = codes.shape
    if n_items == 0 or n_coders < 2 or n_values == 0:
        return np.zeros((n_values, n_values))
    if n_coders * (n_coders - 1) // 2 <= n_coders + n_values:
        # Codes shifted by one so that a missing rating is 0: pair (a, b) falls in cell
        # (a + 1, b + 1) of a (V + 1) x (V + 1) table whose row and column 0 are dropped.
        side = n_values + 1
        sums = np.zeros(side * side)
        step = max(1, CHUNK_ELEMENTS // n_coders)
        for start in range(0, n_items, step):
            block = codes[start : start + step]
            w = None if weights is None else weights[start : start + step]
            shifted = [block[:, j].astype(np.intp) + 1 for j in range(n_coders)]
            for a in range(n_coders):
                rows = shifted[a] * side
                for b in range(a + 1, n_coders):
                    sums += np.bincount(rows + shifted[b], weights=w, minlength=side * side)
        out = sums.reshape(side, side)[1:, 1:]
        return out + out.T
    out = np.zeros((n_values, n_values))
    step = max(1, CHUNK_ELEMENTS // max(n_values, n_coders))
    for start in range(0, n_items, step):
        block = codes[start : start + step]
        rows = block.shape[0]
        present = block >= 0
        row_index = np.broadcast_to(np.arange(rows)[:, None], block.shape)[present]
        counts = np.bincount(
            row_index * n_values + block[present], minlength=rows * n_values
        ).reshape(rows, n_values)
        counts = counts.astype(np.float64)
        weighted = counts if weights is None else counts * weights[start : start + step, None]
        out += weighted.T @ counts
        out[np.diag_indices(n_values)] -= weighted.sum(axis=0)
    return out


def agreeing_pairs(codes: np.ndarray, n_values: int) -> np.ndarray:
    """Number of unordered pairs of coders who gave each item the same label.

    Parameters
    ----------
    codes : ndarray of int, shape (n_items, n_coders)
        Category indices; negative means missing.
    n_values : int
        Number of categories.

    Returns
    -------
    ndarray of int64, shape (n_items,)
    """
    n_items, n_coders = codes.shape
    out = np.zeros(n_items, dtype=np.int64)
    if n_coders < 2:
        return out
    if n_coders * (n_coders - 1) // 2 <= n_coders + n_values:
        for a in range(n_coders):
            column = codes[:, a]
            rated = column >= 0
            for b in range(a + 1, n_coders):
                out += (column == codes[:, b]) & rated
        return out
    step = max(1, CHUNK_ELEMENTS // max(n_values, n_coders))
    for start in range(0, n_items, step):
        block = codes[start : start + step]
        rows = block.shape[0]
        present = block >= 0
        row_index = np.broadcast_to(np.arange(rows)[:, None], block.shape)[present]
        counts = np.bincount(
            row_index * n_values + block[present], minlength=rows * n_values
        ).reshape(rows, n_values)
        out[start : start + step] = (counts * (counts - 1) // 2).sum(axis=1)
    return out


def mean_pair_agreement(codes: np.ndarray, n_values: int) -> tuple[float | None, int]:
    """Mean share of agreeing coder pairs over items with two or more ratings, and their count."""
    r = ratings_per_item(codes)
    pairable = r >= 2
    n_items = int(pairable.sum())
    if n_items == 0:
        return None, 0
    pairs = r[pairable] * (r[pairable] - 1) // 2
    return float((agreeing_pairs(codes[pairable], n_values) / pairs).mean()), n_items


def agreement_by_category(
    codes: np.ndarray, n_values: int, weights: np.ndarray | None = None
) -> np.ndarray:
    """The diagonal of :func:`pair_counts`, computed without the off-diagonal cells.

    ``out[c] = sum_u w_u * n_uc (n_uc - 1)``: weighted ordered pairs of different coders
    who both gave item u the label c.
    """
    n_items, n_coders = codes.shape
    out = np.zeros(n_values)
    if n_items == 0 or n_coders < 2 or n_values == 0:
        return out
    if n_coders * (n_coders - 1) // 2 <= n_coders + n_values:
        if (n_values + 1) ** 2 <= SMALL_TABLE:
            return np.diagonal(pair_counts(codes, n_values, weights)).copy()
        # Many categories: bin only the agreeing pairs (V + 1 bins, not (V + 1)**2).
        if n_values >= np.iinfo(codes.dtype).max:
            codes = codes.astype(np.int64)
        sums = np.zeros(n_values + 1)
        step = max(1, CHUNK_ELEMENTS // n_coders)
        for start in range(0, n_items, step):
            block = codes[start : start + step]
            w = None if weights is None else weights[start : start + step]
            shifted = [block[:, j] + 1 for j in range(n_coders)]  # 0 = missing
            for a in range(n_coders):
                for b in range(a + 1, n_coders):
                    key = np.where(shifted[a] == shifted[b], shifted[a], 0)
                    sums += np.bincount(key, weights=w, minlength=n_values + 1)
        return 2.0 * sums[1:]
    step = max(1, CHUNK_ELEMENTS // max(n_values, n_coders))
    for start in range(0, n_items, step):
        block = codes[start : start + step]
        rows = block.shape[0]
        present = block >= 0
        row_index = np.broadcast_to(np.arange(rows)[:, None], block.shape)[present]
        counts = np.bincount(
            row_index * n_values + block[present], minlength=rows * n_values
        ).reshape(rows, n_values)
        pairs = (counts * (counts - 1)).astype(np.float64)
        if weights is not None:
            pairs *= weights[start : start + step, None]
        out += pairs.sum(axis=0)
    return out


def ratings_per_item(codes: np.ndarray) -> np.ndarray:
    """Number of ratings (non-negative codes) in each row, as intp.

    Summing boolean columns one by one is several times faster than
    ``(codes >= 0).sum(axis=1)`` for the few columns a label matrix has.
    """
    n_items, n_coders = codes.shape
    if n_coders == 0:
        return np.zeros(n_items, dtype=np.intp)
    present = codes >= 0
    out = present[:, 0].astype(np.intp)
    for j in range(1, n_coders):
        out += present[:, j]
    return out


def category_totals(codes: np.ndarray, n_values: int) -> np.ndarray:
    """Ratings per category over all items."""
    out = np.zeros(n_values, dtype=np.int64)
    for j in range(codes.shape[1]):
        column = codes[:, j]
        out += np.bincount(column[column >= 0], minlength=n_values)
    return out


def pairable_totals(codes: np.ndarray, n_values: int, m: np.ndarray) -> np.ndarray:
    """Ratings per category over items with two or more ratings (``m`` ratings per item)."""
    pairable = m >= 2
    out = np.zeros(n_values, dtype=np.int64)
    for j in range(codes.shape[1]):
        column = codes[:, j]
        out += np.bincount(column[(column >= 0) & pairable], minlength=n_values)
    return out


def patterns_fit(n_values: int, n_coders: int) -> bool:
    """Whether items with ``n_coders`` ratings from ``n_values`` categories (or missing)
    have few enough distinct patterns to be counted by pattern."""
    return n_values >= 1 and n_coders >= 1 and (n_values + 1) ** n_coders <= PATTERN_LIMIT


@functools.lru_cache(maxsize=32)
def pattern_tables(n_values: int, n_coders: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per rating pattern: ratings m, ordered agreeing pairs, and ratings per category.

    Pattern ``p`` is the base-(V + 1) number whose digit j is coder j's code plus one
    (0 = missing), first coder most significant. Returns ``m`` (shape P),
    ``agreeing`` (shape P, ``sum_c n_c (n_c - 1)``) and ``counts`` (shape P x V, ``n_c``);
    all int64 and read-only.
    """
    side = n_values + 1
    digits = np.indices((side,) * n_coders).reshape(n_coders, -1).T - 1  # P x coders
    counts = np.zeros((len(digits), n_values), dtype=np.int64)
    for j in range(n_coders):
        rated = np.flatnonzero(digits[:, j] >= 0)
        counts[rated, digits[rated, j]] += 1
    m = counts.sum(axis=1)
    agreeing = (counts * (counts - 1)).sum(axis=1)
    for table in (m, agreeing, counts):
        table.flags.writeable = False
    return m, agreeing, counts


def rating_patterns(codes: np.ndarray, n_values: int) -> np.ndarray:
    """How many items have each rating pattern (see :func:`pattern_tables`).

    One ``np.bincount`` over a per-item key replaces per-pair binning; only for
    :func:`patterns_fit` shapes. Memory: one intp per item.
    """
    n_items, n_coders = codes.shape
    side = n_values + 1
    n_patterns = side**n_coders
    shift = (n_patterns - 1) // (side - 1)  # adds one to every digit: missing -1 -> 0
    out = None
    for start in range(0, max(n_items, 1), CHUNK_ELEMENTS):
        block = codes[start : start + CHUNK_ELEMENTS]
        key = block[:, 0].astype(np.intp)
        for j in range(1, n_coders):
            key *= side
            key += block[:, j]
        key += shift
        counts = np.bincount(key, minlength=n_patterns)
        out = counts if out is None else out + counts
    return out
