"""Seeded bootstrap confidence intervals over items: percentile and BCa.

Each resample draws N items with replacement. All resamples are computed at once: a
resample is a row of item multiplicities ``W`` (drawn with ``np.bincount``) and every
statistic is a function of ``W @ X`` for a small per-item feature matrix ``X``. Resamples
are processed in chunks so that memory stays bounded for large N.

With many items whose ratings take few distinct patterns, Fleiss' bootstrap draws the
pattern counts instead: resampling N items and counting them by pattern is one multinomial
draw of N over the patterns' shares, so ``W`` has a column per pattern, not per item, and
the cost does not grow with N (:func:`fleiss_bootstrap_codes`).

Two methods: the percentile interval, and the bias-corrected and accelerated (BCa)
interval, whose acceleration is the jackknife over items. At 30 items BCa's coverage is
closer to the nominal level (see benchmarks/README.md, ``bench_bootstrap_coverage.py``).

Safeguards: fewer than ``MIN_ITEMS`` items give no interval; fewer than
``MIN_TAIL_RESAMPLES`` usable resamples beyond either limit give none (at 95%, fewer than
200 resamples); fewer than ``RECOMMENDED_RESAMPLES`` usable resamples give a note.

References
----------
Efron, B. (1987). Better bootstrap confidence intervals. *Journal of the American
Statistical Association*, 82(397), 171-185. https://doi.org/10.1080/01621459.1987.10478410

Efron, B., & Tibshirani, R. J. (1993). *An Introduction to the Bootstrap*, ch. 13
(percentile intervals), ch. 14 (BCa) and ch. 19 (how many resamples). Chapman & Hall.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from statistics import NormalDist
from typing import Any

import numpy as np

from agreement._core import (
    CHUNK_ELEMENTS,
    check_level,
    check_n_boot,
    pattern_tables,
    patterns_fit,
    rating_patterns,
    ratings_per_item,
)
from agreement.matrix import as_label_matrix
from agreement.results import Interval

__all__ = ["bootstrap_cohen_ci", "bootstrap_fleiss_ci"]

METHOD = "percentile bootstrap over items"
METHODS = {"percentile": METHOD, "bca": "BCa bootstrap over items"}
"""``method`` name -> the ``Interval.method`` text."""
DEFAULT_METHOD = "bca"
"""BCa: its coverage is nearer the level at 30 and 60 items (benchmarks/README.md)."""

MIN_ITEMS = 10
"""Fewer items give no interval: 9 items have only 24,310 distinct resamples, most of them
repeating a few items, and the coverage is far below the level."""
MIN_TAIL_RESAMPLES = 5
"""Usable resamples needed beyond each limit (else a limit is one of a handful of draws)."""
RECOMMENDED_RESAMPLES = 1000
"""Fewer resamples give a note (Efron & Tibshirani 1993, ch. 19: B of 1,000 or more
for an interval)."""

_NORMAL = NormalDist()
_TIE = 1e-12  # resampled kappas this close to the estimate are the same kappa, up to rounding


def min_resamples(level: float) -> int:
    """Fewest resamples that leave ``MIN_TAIL_RESAMPLES`` beyond each limit of a ``level``
    interval (200 at 95%)."""
    return int(np.ceil(MIN_TAIL_RESAMPLES / ((1.0 - level) / 2.0) - 1e-9))


def check_method(method: str) -> str:
    """Validate a bootstrap interval method: ``"percentile"`` or ``"bca"``."""
    if method not in METHODS:
        raise ValueError(
            f"The bootstrap interval method must be 'percentile' or 'bca'; got {method!r}."
        )
    return method


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


def _fleiss_kappas(sums: np.ndarray, n_items: int | np.ndarray, n: float, k: int) -> np.ndarray:
    """Fleiss' kappa of each row of summed features (k category counts, agreeing pairs);
    NaN where the rows hold a single category."""
    p = sums[:, :k] / (np.asarray(n_items, dtype=np.float64)[..., None] * n)
    observed = sums[:, k] / (np.asarray(n_items, dtype=np.float64) * n * (n - 1.0))
    expected = (p * p).sum(axis=1)
    single = (sums[:, :k] > 0).sum(axis=1) <= 1
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = (observed - expected) / (1.0 - expected)
    kappa[single] = np.nan
    return kappa


def _cohen_kappas(shares: np.ndarray, k: int) -> np.ndarray:
    """Cohen's kappa of each row of feature shares (coder a's k, coder b's k, agreement)."""
    first, second = shares[:, :k], shares[:, k : 2 * k]
    expected = (first * second).sum(axis=1)
    single = ((first + second) > 0).sum(axis=1) <= 1
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = (shares[:, 2 * k] - expected) / (1.0 - expected)
    kappa[single] = np.nan
    return kappa


def _bca_limits(
    valid: np.ndarray,
    estimate: float,
    jackknife: np.ndarray,
    level: float,
    jackknife_weights: np.ndarray | None = None,
) -> tuple[float, float] | str:
    """The BCa quantile levels of the lower and upper limit, or why there are none.

    The bias correction counts ties with the estimate as half below (kappa is discrete on
    few items); the acceleration is the jackknife's skewness over items (Efron 1987, eq.
    6.6; Efron & Tibshirani 1993, eq. 14.15). ``jackknife_weights`` counts the items each
    jackknife value stands for (items of one rating pattern share one leave-one-out value).
    """
    tie = np.abs(valid - estimate) <= _TIE * max(1.0, abs(estimate))  # the same kappa
    below = float((valid[~tie] < estimate).sum()) + 0.5 * float(tie.sum())
    share = below / len(valid)
    if share <= 0.0 or share >= 1.0:
        side = "below" if share <= 0.0 else "above"
        return (
            f"every usable resample lies {side} the estimate, so BCa's bias correction is infinite"
        )
    z0 = _NORMAL.inv_cdf(share)
    usable = np.isfinite(jackknife)
    jack = jackknife[usable]
    weights = np.ones(len(jack)) if jackknife_weights is None else jackknife_weights[usable]
    spread = (weights @ jack) / weights.sum() - jack if len(jack) else np.zeros(0)
    squares = float(weights @ spread**2)
    accel = float(weights @ spread**3) / (6.0 * squares**1.5) if squares > 0 else 0.0
    out = []
    for tail in ((1.0 - level) / 2.0, (1.0 + level) / 2.0):
        z = z0 + _NORMAL.inv_cdf(tail)
        denominator = 1.0 - accel * z
        if denominator <= 0:
            return "the jackknife acceleration is too large for BCa's adjustment"
        out.append(_NORMAL.cdf(z0 + z / denominator))
    return out[0], out[1]


def _interval(
    stats: np.ndarray,
    level: float,
    n_boot: int,
    seed: int | None,
    reason: str,
    method: str = "percentile",
    estimate: float | None = None,
    jackknife: np.ndarray | None = None,
    jackknife_weights: np.ndarray | None = None,
) -> Interval:
    name = METHODS[method]
    valid = np.sort(stats[np.isfinite(stats)])
    if len(valid) == 0:
        why = f"Kappa is undefined in all {n_boot} resamples: {reason}"
        return Interval(None, None, level, name, n_boot, 0, seed, why)
    tail = len(valid) * (1.0 - level) / 2.0
    if tail < MIN_TAIL_RESAMPLES:
        why = (
            f"Only {len(valid)} usable resamples: a {100 * level:g}% interval needs at least "
            f"{MIN_TAIL_RESAMPLES} beyond each limit, i.e. {min_resamples(level):,} resamples "
            f"(Efron & Tibshirani 1993 recommend {RECOMMENDED_RESAMPLES:,} or more)."
        )
        return Interval(None, None, level, name, n_boot, len(valid), seed, why)
    notes = []
    if len(valid) < n_boot:
        notes.append(
            f"{n_boot - len(valid)} of {n_boot} resamples were left out: {reason.rstrip('.')}"
        )
    if n_boot < RECOMMENDED_RESAMPLES:
        notes.append(
            f"only {len(valid)} usable resamples: Efron & Tibshirani (1993) recommend "
            f"{RECOMMENDED_RESAMPLES:,} or more for an interval, so its limits move with the seed"
        )
    quantiles = ((1.0 - level) / 2.0, (1.0 + level) / 2.0)
    if method == "bca":
        if estimate is None or not np.isfinite(estimate) or (valid == valid[0]).all():
            limits: tuple[float, float] | str = quantiles
        else:
            limits = _bca_limits(
                valid, float(estimate), np.asarray(jackknife), level, jackknife_weights
            )
        if isinstance(limits, str):
            why = f"No BCa interval: {limits}; the percentile method gives one (--ci-method)."
            return Interval(None, None, level, name, n_boot, len(valid), seed, why)
        quantiles = limits
        thin = min(quantiles[0], 1.0 - quantiles[1]) * len(valid)
        if thin < MIN_TAIL_RESAMPLES:
            notes.append(
                f"BCa moved a limit to the {100 * min(quantiles[0], 1 - quantiles[1]):.2g}% "
                f"tail, beyond which only {thin:.0f} resamples lie; more resamples steady it"
            )
    low, high = (float(x) for x in np.quantile(valid, quantiles))
    if low == high:
        notes.append(
            f"every resample within the interval gives kappa = {low:.3f}, so the interval has "
            "no width; it says nothing about how precise kappa is"
        )
    note = "; ".join(notes) or None
    if note:
        note = note[0].upper() + note[1:] + ("" if note.endswith(".") else ".")
    return Interval(low, high, level, name, n_boot, len(valid), seed, None, note)


def _too_few(
    n_items: int, level: float, n_boot: int, seed: int | None, method: str
) -> Interval | None:
    if n_items >= MIN_ITEMS:
        return None
    reason = (
        f"A bootstrap over items needs at least {MIN_ITEMS} items; got {n_items}, too few "
        "distinct resamples for an interval."
    )
    return Interval(None, None, level, METHODS[method], n_boot, 0, seed, reason)


def fleiss_bootstrap(
    counts: np.ndarray,
    level: float,
    n_boot: int,
    seed: int | None,
    method: str = DEFAULT_METHOD,
) -> Interval:
    """Bootstrap CI of Fleiss' kappa from an items x categories count table."""
    method = check_method(method)
    n_items, k = counts.shape
    too_few = _too_few(n_items, level, n_boot, seed, method)
    if too_few is not None:
        return too_few
    n = float(counts[0].sum())
    features = np.empty((n_items, k + 1))
    features[:, :k] = counts
    features[:, k] = (counts * (counts - 1.0)).sum(axis=1)
    stats = [
        _fleiss_kappas(_product(weights, features), n_items, n, k)
        for weights in resample_weights(n_items, n_boot, seed)
    ]
    total = features.sum(axis=0)
    estimate = float(_fleiss_kappas(total[None, :], n_items, n, k)[0])
    jackknife = None
    if method == "bca":
        jackknife = _fleiss_kappas(total[None, :] - features, n_items - 1, n, k)
    return _interval(
        np.concatenate(stats), level, n_boot, seed,
        "a resample that holds a single category has no kappa.", method, estimate, jackknife,
    )  # fmt: skip


PATTERN_BOOTSTRAP_MIN_ITEMS = 5000
"""From this many items on, Fleiss' bootstrap draws pattern counts (a multinomial over the
distinct rating patterns) instead of items, when the patterns are few
(:func:`agreement._core.patterns_fit`). Below it, drawing items is as fast, and the intervals
are those of earlier versions for the same seed."""


def pattern_weights(
    n_items: int, freq: np.ndarray, n_boot: int, seed: int | None
) -> Iterator[np.ndarray]:
    """Yield chunks of resampled pattern counts, shape (chunk, n_patterns), float64.

    Drawing ``n_items`` items with replacement and counting them by pattern is a
    multinomial draw with probabilities ``freq / n_items``: the same distribution as
    :func:`resample_weights` summed by pattern, at a cost of (patterns x resamples),
    independent of the number of items. The stream depends only on ``seed``, ``freq`` and
    ``n_boot``.
    """
    rng = np.random.default_rng(seed)
    shares = np.asarray(freq, dtype=np.float64) / n_items
    chunk = max(1, min(n_boot, CHUNK_ELEMENTS // max(len(freq), 1)))
    done = 0
    while done < n_boot:
        size = min(chunk, n_boot - done)
        yield rng.multinomial(n_items, shares, size=size).astype(np.float64)
        done += size


def fleiss_bootstrap_patterns(
    rows: np.ndarray,
    freq: np.ndarray,
    level: float,
    n_boot: int,
    seed: int | None,
    method: str = DEFAULT_METHOD,
) -> Interval:
    """Bootstrap CI of Fleiss' kappa from distinct rows of category counts and how many
    items have each (the multinomial bootstrap of :func:`pattern_weights`).

    The jackknife of BCa leaves out one item: every item of a pattern gives the same value,
    so there is one value per pattern, weighted by its items.
    """
    method = check_method(method)
    keep = freq > 0
    rows, freq = np.asarray(rows, dtype=np.float64)[keep], np.asarray(freq)[keep]
    n_items, k = int(freq.sum()), rows.shape[1]
    too_few = _too_few(n_items, level, n_boot, seed, method)
    if too_few is not None:
        return too_few
    n = float(rows[0].sum())
    features = np.empty((len(rows), k + 1))
    features[:, :k] = rows
    features[:, k] = (rows * (rows - 1.0)).sum(axis=1)
    stats = [
        _fleiss_kappas(_product(weights, features), n_items, n, k)
        for weights in pattern_weights(n_items, freq, n_boot, seed)
    ]
    total = freq.astype(np.float64) @ features
    estimate = float(_fleiss_kappas(total[None, :], n_items, n, k)[0])
    jackknife = None
    if method == "bca":
        jackknife = _fleiss_kappas(total[None, :] - features, n_items - 1, n, k)
    return _interval(
        np.concatenate(stats), level, n_boot, seed,
        "a resample that holds a single category has no kappa.", method, estimate, jackknife,
        freq.astype(np.float64),
    )  # fmt: skip


def complete_patterns(codes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct category-count rows of the complete items (every coder rated) and how many
    items have each, from one ``bincount`` of rating-pattern keys; sorted rows."""
    n_coders = codes.shape[1]
    counts = rating_patterns(codes, k)
    m, _, per_category = pattern_tables(k, n_coders)
    use = (m == n_coders) & (counts > 0)
    rows, inverse = np.unique(per_category[use], axis=0, return_inverse=True)
    freq = np.bincount(inverse.ravel(), weights=counts[use], minlength=len(rows))
    return rows, freq.astype(np.int64)


def fleiss_bootstrap_codes(
    codes: np.ndarray,
    k: int,
    level: float,
    n_boot: int,
    seed: int | None,
    method: str = DEFAULT_METHOD,
) -> Interval:
    """Bootstrap CI of Fleiss' kappa over the complete items of an items x coders code
    array: by pattern counts (:func:`fleiss_bootstrap_patterns`) from
    ``PATTERN_BOOTSTRAP_MIN_ITEMS`` complete items on when the patterns are few, else by
    items (:func:`fleiss_bootstrap`)."""
    if patterns_fit(k, codes.shape[1]) and codes.shape[0] >= PATTERN_BOOTSTRAP_MIN_ITEMS:
        rows, freq = complete_patterns(codes, k)
        if freq.sum() >= PATTERN_BOOTSTRAP_MIN_ITEMS:
            return fleiss_bootstrap_patterns(rows, freq, level, n_boot, seed, method)
    return fleiss_bootstrap(complete_counts(codes, k), level, n_boot, seed, method)


def cohen_bootstrap(
    a: np.ndarray,
    b: np.ndarray,
    k: int,
    level: float,
    n_boot: int,
    seed: int | None,
    method: str = DEFAULT_METHOD,
) -> Interval:
    """Bootstrap CI of Cohen's kappa from two aligned code vectors (no missing)."""
    method = check_method(method)
    n_items = len(a)
    too_few = _too_few(n_items, level, n_boot, seed, method)
    if too_few is not None:
        return too_few
    features = np.zeros((n_items, 2 * k + 1))
    rows = np.arange(n_items)
    features[rows, a] = 1.0
    features[rows, k + b] = 1.0
    features[:, 2 * k] = a == b
    stats = [
        _cohen_kappas(_product(weights, features) / n_items, k)
        for weights in resample_weights(n_items, n_boot, seed)
    ]
    total = features.sum(axis=0)
    estimate = float(_cohen_kappas(total[None, :] / n_items, k)[0])
    jackknife = None
    if method == "bca":
        jackknife = _cohen_kappas((total[None, :] - features) / (n_items - 1), k)
    return _interval(
        np.concatenate(stats), level, n_boot, seed,
        "a resample that holds a single category has no kappa.", method, estimate, jackknife,
    )  # fmt: skip


def complete_counts(codes: np.ndarray, k: int) -> np.ndarray:
    """Items x categories counts of the rows of ``codes`` with no missing rating, in one
    canonical order (sorted by their counts): a resample then draws the same items whatever
    order the caller listed them in, so the interval depends on the ratings alone (`agree`
    in sample order and the LLM validation in held-out order print the same digits)."""
    codes = codes[ratings_per_item(codes) == codes.shape[1]]
    n_items = codes.shape[0]
    rows = np.repeat(np.arange(n_items), codes.shape[1])
    counts = np.bincount(
        rows * k + codes.ravel().astype(np.intp), minlength=n_items * k
    ).reshape(n_items, k)
    if n_items > 1:
        counts = counts[np.lexsort(counts.T[::-1])]
    return counts


def bootstrap_fleiss_ci(
    data: Any,
    *,
    categories: Iterable[Any] | None = None,
    coders: Sequence[str] | None = None,
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int | None = 0,
    method: str = DEFAULT_METHOD,
) -> Interval:
    """Bootstrap CI of Fleiss' kappa, resampling items with replacement.

    Uses the same items as :func:`agreement.fleiss_kappa` (those every selected coder rated).
    From ``PATTERN_BOOTSTRAP_MIN_ITEMS`` such items on, with few rating patterns, the
    resampled items are drawn as pattern counts (one multinomial per resample; the same
    distribution, a cost independent of the number of items).

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
    method : {"percentile", "bca"}
        Percentile interval, or bias-corrected and accelerated (jackknife over items).

    Returns
    -------
    Interval
        ``low``/``high`` None with a reason when there are fewer than ``MIN_ITEMS`` items,
        too few usable resamples for the level, or (BCa) an infinite bias correction.
        Resamples where kappa is undefined (a single category) are left out and counted in
        ``n_valid``; ``note`` says so, and warns below ``RECOMMENDED_RESAMPLES`` usable
        resamples and of an interval with no width.

    References
    ----------
    Efron & Tibshirani (1993), ch. 13-14; Efron (1987). See the module docstring.
    """
    level, n_boot, seed = check_level(ci), check_n_boot(n_boot), check_seed(seed)
    method = check_method(method)
    matrix = as_label_matrix(data, categories)
    if coders is not None:
        matrix = matrix.select(coders)
    if matrix.n_coders < 2:
        reason = f"Fleiss' kappa needs at least two coders; got {matrix.n_coders}."
        return Interval(None, None, level, METHODS[method], n_boot, 0, seed, reason)
    return fleiss_bootstrap_codes(matrix.codes, len(matrix.categories), level, n_boot, seed, method)


def bootstrap_cohen_ci(
    data: Any,
    coder_a: str | None = None,
    coder_b: str | None = None,
    *,
    categories: Iterable[Any] | None = None,
    ci: float = 0.95,
    n_boot: int = 1000,
    seed: int | None = 0,
    method: str = DEFAULT_METHOD,
) -> Interval:
    """Bootstrap CI of Cohen's kappa over the items both coders rated.

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
    method : {"percentile", "bca"}
        As in :func:`bootstrap_fleiss_ci`.

    Returns
    -------
    Interval
    """
    level, n_boot, seed = check_level(ci), check_n_boot(n_boot), check_seed(seed)
    method = check_method(method)
    matrix = as_label_matrix(data, categories)
    if coder_a is None and coder_b is None and matrix.n_coders == 2:
        coder_a, coder_b = matrix.coders
    if coder_a is None or coder_b is None:
        raise ValueError(f"Name the two coders to compare: the data has {matrix.n_coders} coders.")
    pair = matrix.select([coder_a, coder_b]).codes
    both = (pair >= 0).all(axis=1)
    a = pair[both, 0].astype(np.intp)
    b = pair[both, 1].astype(np.intp)
    return cohen_bootstrap(a, b, len(matrix.categories), level, n_boot, seed, method)
