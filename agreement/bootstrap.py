"""Seeded percentile-bootstrap confidence intervals over items.

Each resample draws N items with replacement. All resamples are computed at once: a
resample is a row of item multiplicities ``W`` (drawn with ``np.bincount``) and every
statistic is a function of ``W @ X`` for a small per-item feature matrix ``X``. Resamples
are processed in chunks so that memory stays bounded for large N.

References
----------
Efron, B., & Tibshirani, R. J. (1993). *An Introduction to the Bootstrap*, ch. 13
(percentile intervals). Chapman & Hall.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from agreement._core import CHUNK_ELEMENTS, check_level, check_n_boot, ratings_per_item
from agreement.matrix import as_label_matrix
from agreement.results import Interval

__all__ = ["bootstrap_cohen_ci", "bootstrap_fleiss_ci"]

METHOD = "percentile bootstrap over items"


def check_seed(seed: int | None) -> int | None:
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
        raise ValueError(f"The bootstrap seed must be an integer or None; got {seed!r}.")
    return None if seed is None else int(seed)


def resample_weights(n_items: int, n_boot: int, seed: int | None) -> Iterator[np.ndarray]:
    """Yield chunks of bootstrap multiplicities, shape (chunk, n_items), float64.

    Row b holds how often each item was drawn in resample b (rows sum to ``n_items``).
    The stream depends only on ``seed``, ``n_items`` and ``n_boot``.
    """
    rng = np.random.default_rng(seed)
    chunk = max(1, min(n_boot, CHUNK_ELEMENTS // max(n_items, 1)))
    done = 0
    while done < n_boot:
        size = min(chunk, n_boot - done)
        draws = rng.integers(0, n_items, size=(size, n_items))
        draws += (np.arange(size) * n_items)[:, None]
        counts = np.bincount(draws.ravel(), minlength=size * n_items)
        yield counts.reshape(size, n_items).astype(np.float64)
        done += size


# Largest block (rows x inner x columns) multiplied at once: OpenBLAS runs products below
# about 2**18 multiply-adds on one thread; above, its thread hand-off can cost milliseconds
# on a busy machine, more than the product itself.
_SINGLE_THREAD_PRODUCT = 1 << 17


def _product(weights: np.ndarray, features: np.ndarray) -> np.ndarray:
    """``weights @ features`` in row blocks small enough for single-threaded BLAS.

    Both hold whole numbers far below 2**53, so every sum is exact and the result does not
    depend on the blocking.
    """
    rows = max(1, _SINGLE_THREAD_PRODUCT // max(weights.shape[1] * features.shape[1], 1))
    out = np.empty((weights.shape[0], features.shape[1]))
    for start in range(0, weights.shape[0], rows):
        np.matmul(weights[start : start + rows], features, out=out[start : start + rows])
    return out


def _interval(
    stats: np.ndarray, level: float, n_boot: int, seed: int | None, reason: str
) -> Interval:
    valid = stats[np.isfinite(stats)]
    if len(valid) == 0:
        why = f"Kappa is undefined in all {n_boot} resamples: {reason}"
        return Interval(None, None, level, METHOD, n_boot, 0, seed, why)
    low, high = np.quantile(valid, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    note = None
    if len(valid) < n_boot:
        note = f"{n_boot - len(valid)} of {n_boot} resamples were left out: {reason}"
    return Interval(float(low), float(high), level, METHOD, n_boot, len(valid), seed, None, note)


def _too_few(n_items: int, level: float, n_boot: int, seed: int | None) -> Interval | None:
    if n_items >= 2:
        return None
    reason = (
        f"A bootstrap over items needs at least two items; got {n_items}, "
        "so the interval is undefined."
    )
    return Interval(None, None, level, METHOD, n_boot, 0, seed, reason)


def fleiss_bootstrap(counts: np.ndarray, level: float, n_boot: int, seed: int | None) -> Interval:
    """Percentile CI of Fleiss' kappa from an items x categories count table."""
    n_items, k = counts.shape
    too_few = _too_few(n_items, level, n_boot, seed)
    if too_few is not None:
        return too_few
    n = float(counts[0].sum())
    features = np.empty((n_items, k + 1))
    features[:, :k] = counts
    features[:, k] = (counts * (counts - 1.0)).sum(axis=1)
    stats = []
    for weights in resample_weights(n_items, n_boot, seed):
        sums = _product(weights, features)
        p = sums[:, :k] / (n_items * n)
        observed = sums[:, k] / (n_items * n * (n - 1.0))
        expected = (p * p).sum(axis=1)
        single = (sums[:, :k] > 0).sum(axis=1) <= 1
        with np.errstate(divide="ignore", invalid="ignore"):
            kappa = (observed - expected) / (1.0 - expected)
        kappa[single] = np.nan
        stats.append(kappa)
    return _interval(
        np.concatenate(stats), level, n_boot, seed,
        "a resample that holds a single category has no kappa.",
    )  # fmt: skip


def cohen_bootstrap(
    a: np.ndarray, b: np.ndarray, k: int, level: float, n_boot: int, seed: int | None
) -> Interval:
    """Percentile CI of Cohen's kappa from two aligned code vectors (no missing)."""
    n_items = len(a)
    too_few = _too_few(n_items, level, n_boot, seed)
    if too_few is not None:
        return too_few
    features = np.zeros((n_items, 2 * k + 1))
    rows = np.arange(n_items)
    features[rows, a] = 1.0
    features[rows, k + b] = 1.0
    features[:, 2 * k] = a == b
    stats = []
    for weights in resample_weights(n_items, n_boot, seed):
        sums = _product(weights, features) / n_items
        first, second = sums[:, :k], sums[:, k : 2 * k]
        expected = (first * second).sum(axis=1)
        single = ((first + second) > 0).sum(axis=1) <= 1
        with np.errstate(divide="ignore", invalid="ignore"):
            kappa = (sums[:, 2 * k] - expected) / (1.0 - expected)
        kappa[single] = np.nan
        stats.append(kappa)
    return _interval(
        np.concatenate(stats), level, n_boot, seed,
        "a resample that holds a single category has no kappa.",
    )  # fmt: skip


def complete_counts(codes: np.ndarray, k: int) -> np.ndarray:
    """Items x categories counts of the rows of ``codes`` with no missing rating."""
    codes = codes[ratings_per_item(codes) == codes.shape[1]]
    n_items = codes.shape[0]
    rows = np.repeat(np.arange(n_items), codes.shape[1])
    return np.bincount(rows * k + codes.ravel().astype(np.intp), minlength=n_items * k).reshape(
        n_items, k
    )


def bootstrap_fleiss_ci(
    data: Any,
    *,
    categories: Iterable[Any] | None = None,
    coders: Sequence[str] | None = None,
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int | None = 0,
) -> Interval:
    """Percentile bootstrap CI of Fleiss' kappa, resampling items with replacement.

    Uses the same items as :func:`agreement.fleiss_kappa` (those every selected coder rated).

    Parameters
    ----------
    data : LabelMatrix, DataFrame or 2-D array_like
    categories : iterable of str, optional
    coders : sequence of str, optional
        Use only these coders.
    ci : float
        Confidence level.
    n_boot : int
        Number of resamples.
    seed : int or None
        Seed of ``numpy.random.default_rng``; the same seed gives the same interval.

    Returns
    -------
    Interval
        ``low``/``high`` None with a reason when there are fewer than two items or every
        resample is undefined. Resamples where kappa is undefined (a single category) are
        left out and counted in ``n_valid``.
    """
    level, n_boot, seed = check_level(ci), check_n_boot(n_boot), check_seed(seed)
    matrix = as_label_matrix(data, categories)
    if coders is not None:
        matrix = matrix.select(coders)
    if matrix.n_coders < 2:
        reason = f"Fleiss' kappa needs at least two coders; got {matrix.n_coders}."
        return Interval(None, None, level, METHOD, n_boot, 0, seed, reason)
    counts = complete_counts(matrix.codes, len(matrix.categories))
    return fleiss_bootstrap(counts, level, n_boot, seed)


def bootstrap_cohen_ci(
    data: Any,
    coder_a: str | None = None,
    coder_b: str | None = None,
    *,
    categories: Iterable[Any] | None = None,
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int | None = 0,
) -> Interval:
    """Percentile bootstrap CI of Cohen's kappa over the items both coders rated.

    Parameters
    ----------
    data : LabelMatrix, DataFrame or 2-D array_like
    coder_a, coder_b : str, optional
        The pair; may be omitted when ``data`` has exactly two coders.
    categories : iterable of str, optional
    ci : float
        Confidence level.
    n_boot : int
        Number of resamples.
    seed : int or None
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    Interval
    """
    level, n_boot, seed = check_level(ci), check_n_boot(n_boot), check_seed(seed)
    matrix = as_label_matrix(data, categories)
    if coder_a is None and coder_b is None and matrix.n_coders == 2:
        coder_a, coder_b = matrix.coders
    if coder_a is None or coder_b is None:
        raise ValueError(f"Name the two coders to compare: the data has {matrix.n_coders} coders.")
    pair = matrix.select([coder_a, coder_b]).codes
    both = (pair >= 0).all(axis=1)
    a = pair[both, 0].astype(np.intp)
    b = pair[both, 1].astype(np.intp)
    return cohen_bootstrap(a, b, len(matrix.categories), level, n_boot, seed)
