"""The bootstrap of Fleiss' kappa over rating-pattern counts (a multinomial draw over the
distinct patterns) against the bootstrap over items: the same distribution of resampled
kappas (Monte-Carlo tests over many seeds, not timing), the same BCa jackknife, and the
same output for the same input."""

from __future__ import annotations

import numpy as np
import pytest

import agreement as ag
from agreement.bootstrap import (
    PATTERN_BOOTSTRAP_MIN_ITEMS,
    _bca_limits,
    _fleiss_kappas,
    complete_counts,
    complete_patterns,
    fleiss_bootstrap,
    fleiss_bootstrap_patterns,
    pattern_weights,
    resample_weights,
)


def coded(n_items: int, seed: int, k: int = 3, n_coders: int = 3, missing: float = 0.1):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, k, n_items)
    noise = rng.integers(0, k, (n_items, n_coders))
    codes = np.where(rng.random((n_items, n_coders)) < 0.55, truth[:, None], noise)
    codes[rng.random(codes.shape) < missing] = -1
    return codes.astype(np.int8)


def features(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float64)
    return np.column_stack([rows, (rows * (rows - 1.0)).sum(axis=1)])


def replicates_by_items(codes, k, n_boot, seeds):
    counts = complete_counts(codes, k)
    x = features(counts)
    n = float(codes.shape[1])
    return np.concatenate([
        _fleiss_kappas(w @ x, len(counts), n, k)
        for s in seeds for w in resample_weights(len(counts), n_boot, s)
    ])  # fmt: skip


def replicates_by_patterns(codes, k, n_boot, seeds):
    rows, freq = complete_patterns(codes, k)
    x = features(rows)
    n_items, n = int(freq.sum()), float(codes.shape[1])
    return np.concatenate([
        _fleiss_kappas(w @ x, n_items, n, k)
        for s in seeds for w in pattern_weights(n_items, freq, n_boot, s)
    ])  # fmt: skip


def test_complete_patterns_count_the_complete_items():
    codes = coded(300, 1)
    rows, freq = complete_patterns(codes, 3)
    counts = complete_counts(codes, 3)
    assert freq.sum() == len(counts)
    unique, expected = np.unique(counts, axis=0, return_counts=True)
    assert (rows == unique).all() and (freq == expected).all()


@pytest.mark.parametrize("n_items", [40, 200])
def test_pattern_resamples_have_the_item_resamples_distribution(n_items):
    """Two-sample Kolmogorov-Smirnov distance between 20,000 kappas of each bootstrap (20
    seeds x 1,000) below the 0.1% critical value 1.95 sqrt(2 / 20,000); means within four
    Monte-Carlo standard errors; the 2.5/50/97.5% quantiles of one at the other's level
    within four binomial SEs."""
    codes, k, seeds = coded(n_items, n_items), 3, range(20)
    a = replicates_by_items(codes, k, 1000, seeds)
    b = replicates_by_patterns(codes, k, 1000, [100 + s for s in seeds])
    a, b = np.sort(a[np.isfinite(a)]), np.sort(b[np.isfinite(b)])
    grid = np.union1d(a, b)
    ks = np.abs(
        np.searchsorted(a, grid, side="right") / len(a)
        - np.searchsorted(b, grid, side="right") / len(b)
    ).max()
    assert ks < 1.95 * np.sqrt(2.0 / 20_000)
    se = np.sqrt(a.var() / len(a) + b.var() / len(b))
    assert abs(a.mean() - b.mean()) < 4 * se
    for p in (0.025, 0.5, 0.975):
        q = np.quantile(a, p)
        below = (b < q).mean(), (b <= q).mean()  # kappa is discrete: a band at ties
        tol = 4 * np.sqrt(2 * p * (1 - p) / len(b))
        assert below[0] - tol <= p <= below[1] + tol


def test_pattern_draws_sum_to_the_items_and_average_to_the_counts():
    freq = np.array([5, 0, 30, 65])
    w = np.concatenate(list(pattern_weights(100, freq, 4000, 3)))
    assert (w.sum(axis=1) == 100).all() and (w[:, 1] == 0).all()
    assert np.allclose(w.mean(axis=0), freq, atol=0.5)
    # multinomial variance n p (1 - p), as item resampling counted by pattern
    assert np.allclose(w.var(axis=0), 100 * (freq / 100) * (1 - freq / 100), rtol=0.1)


def test_weighted_jackknife_equals_the_jackknife_over_items():
    rng = np.random.default_rng(4)
    valid = np.sort(rng.normal(0.5, 0.05, 999))
    jack = rng.normal(0.5, 0.01, 7)
    freq = rng.integers(1, 50, 7)
    by_pattern = _bca_limits(valid, 0.49, jack, 0.95, freq.astype(float))
    by_item = _bca_limits(valid, 0.49, np.repeat(jack, freq), 0.95)
    assert by_pattern == pytest.approx(by_item, rel=1e-12)


@pytest.mark.parametrize("method", ["bca", "percentile"])
def test_pattern_bootstrap_interval_near_item_bootstrap(method):
    codes = coded(3000, 9)
    by_items = fleiss_bootstrap(complete_counts(codes, 3), 0.95, 2000, 0, method)
    by_patterns = fleiss_bootstrap_patterns(*complete_patterns(codes, 3), 0.95, 2000, 0, method)
    width = by_items.high - by_items.low
    assert abs(by_items.low - by_patterns.low) < 0.1 * width
    assert abs(by_items.high - by_patterns.high) < 0.1 * width
    assert by_patterns.method == by_items.method


def test_equal_inputs_give_equal_intervals_on_the_pattern_path():
    n = 2 * PATTERN_BOOTSTRAP_MIN_ITEMS  # 73% complete: above the minimum
    codes = coded(n, 5)
    table = np.array(["a", "b", "c", None], dtype=object)[codes]
    cats = ["a", "b", "c"]
    first = ag.bootstrap_fleiss_ci(table, categories=cats, seed=7)
    assert ag.bootstrap_fleiss_ci(table, categories=cats, seed=7) == first
    # only the pattern counts matter: the items in another order give the same interval
    shuffled = table[np.random.default_rng(0).permutation(n)]
    assert ag.bootstrap_fleiss_ci(shuffled, categories=cats, seed=7) == first
    assert ag.bootstrap_fleiss_ci(table, categories=cats, seed=8) != first
    assert first.low < ag.fleiss_kappa(table).kappa < first.high


def test_small_data_keeps_item_resampling():
    codes = coded(120, 6)
    table = np.array(["a", "b", "c", None], dtype=object)[codes]
    expected = fleiss_bootstrap(complete_counts(codes, 3), 0.95, 1000, 0, "bca")
    assert ag.bootstrap_fleiss_ci(table) == expected
