"""Property tests against the peers (statsmodels, krippendorff) where the peers are right."""

from __future__ import annotations

import itertools
import warnings

import krippendorff
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

import agreement as ag
from agreement import _core
from agreement.masi import masi_distance

# The peers warn on their own 0/0 and sqrt(-0) corners; ours must not (see the edge tests).
pytestmark = [
    pytest.mark.filterwarnings("ignore::RuntimeWarning:statsmodels.*"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning:krippendorff.*"),
]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LABELS = ["Initiate", "ack", "nan", "query", "Q4", "other", "x", "y"]


@st.composite
def label_codes(draw, min_coders=2, max_coders=8, missing=False):
    """An items x coders int array of category indices (-1 = missing)."""
    n_items = draw(st.integers(1, 40))
    n_coders = draw(st.integers(min_coders, max_coders))
    n_cats = draw(st.integers(1, 6))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    # Skewed category weights make agreement (and single-category corners) likely.
    weights = rng.dirichlet(np.full(n_cats, 0.7))
    codes = rng.choice(n_cats, size=(n_items, n_coders), p=weights)
    if missing:
        rate = draw(st.sampled_from([0.0, 0.1, 0.3, 0.6]))
        codes = np.where(rng.random(codes.shape) < rate, -1, codes)
    return codes


def as_labels(codes: np.ndarray) -> np.ndarray:
    """Object array of string labels, None where missing."""
    lookup = np.array([*LABELS[: codes.max() + 1 if codes.size else 0], None], dtype=object)
    return lookup[codes]


def as_floats(codes: np.ndarray) -> np.ndarray:
    return np.where(codes >= 0, codes, np.nan).astype(float)


@SETTINGS
@given(label_codes())
def test_fleiss_matches_statsmodels_on_complete_matrices(codes):
    ours = ag.fleiss_kappa(as_labels(codes))
    table, _ = aggregate_raters(codes)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        theirs = sm_fleiss_kappa(table)
    if len(np.unique(codes)) == 1:
        assert ours.kappa is None and "undefined" in ours.undefined_reason
        assert ours.observed_agreement == 1.0
    else:
        assert ours.kappa == pytest.approx(theirs, abs=1e-9)
    assert ours.n_items == codes.shape[0]
    assert ours.items_left_out == ()


@SETTINGS
@given(label_codes(missing=True))
def test_fleiss_with_missing_equals_statsmodels_on_the_complete_rows(codes):
    ours = ag.fleiss_kappa(as_labels(codes))
    complete = (codes >= 0).all(axis=1)
    assert ours.n_items == int(complete.sum())
    assert list(ours.items_left_out) == list(np.flatnonzero(~complete))
    kept = codes[complete]
    assume(kept.size and len(np.unique(kept)) > 1)
    table, _ = aggregate_raters(kept)
    assert ours.kappa == pytest.approx(sm_fleiss_kappa(table), abs=1e-9)


@SETTINGS
@given(label_codes(missing=True))
def test_alpha_matches_krippendorff_with_missing_ratings(codes):
    ours = ag.krippendorff_alpha(as_labels(codes))
    try:
        theirs = krippendorff.alpha(as_floats(codes).T, level_of_measurement="nominal")
    except ValueError:
        # The package raises for a one-value domain or no pairable unit; we explain.
        assert ours.alpha is None and ours.undefined_reason
        return
    if np.isnan(theirs):
        assert ours.alpha is None and ours.undefined_reason
    else:
        assert ours.alpha == pytest.approx(float(theirs), abs=1e-9)


@SETTINGS
@given(label_codes(missing=True))
def test_alpha_on_strings_matches_krippendorff_on_numbers(codes):
    """Our string labels give the package's value on the same data coded as numbers."""
    strings = as_labels(codes)
    numbers = as_floats(codes)
    pairable = codes[(codes >= 0).sum(axis=1) >= 2]
    assume(len(np.unique(pairable[pairable >= 0])) > 1)
    theirs = krippendorff.alpha(numbers.T, level_of_measurement="nominal")
    assert ag.krippendorff_alpha(strings).alpha == pytest.approx(float(theirs), abs=1e-9)


@SETTINGS
@given(label_codes(max_coders=2, min_coders=2, missing=True))
def test_cohen_matches_statsmodels(codes):
    k = int(codes.max()) + 1 if codes.max() >= 0 else 1
    ours = ag.cohen_kappa(as_labels(codes))
    both = (codes >= 0).all(axis=1)
    table = np.zeros((k, k))
    np.add.at(table, (codes[both, 0], codes[both, 1]), 1)
    assert ours.n_items == int(both.sum())
    assume(both.sum() >= 1 and ((table.sum(0) + table.sum(1)) > 0).sum() > 1)
    theirs = cohens_kappa(table)
    assert ours.kappa == pytest.approx(theirs.kappa, abs=1e-9)
    if ours.n_items == 1:  # statsmodels gives a zero-width interval; we say why there is none
        assert ours.ase is None and ours.ci.low is None and ours.z is None
        assert "single item" in ours.ci.undefined_reason and ours.undefined_reason
        return
    # Compare variances: a variance that is 0 comes out as ±1e-17, whose square root
    # (1e-8, or NaN in statsmodels) would swamp a tolerance on the standard errors.
    their_var = 0.0 if np.isnan(theirs.var_kappa) else max(theirs.var_kappa, 0.0)
    assert ours.ase**2 == pytest.approx(their_var, abs=1e-12)
    if ours.se0 is not None:
        assert ours.se0**2 == pytest.approx(theirs.var_kappa0, abs=1e-12)
        if ours.se0 > 1e-6:
            assert ours.z == pytest.approx(theirs.z_value, rel=1e-9)
    elif "needs at least" in (ours.undefined_reason or ""):  # too few items for the z-test
        used = int(((table.sum(0) + table.sum(1)) > 0).sum())
        assert ours.n_items < ag.min_items_for_z(used) and ours.z is None
        forced = ag.cohen_kappa(as_labels(codes), min_items_z=0)
        assert forced.se0**2 == pytest.approx(theirs.var_kappa0, abs=1e-12)
    else:
        assert theirs.var_kappa0 == pytest.approx(0.0, abs=1e-12)
        assert "z-test is undefined" in ours.undefined_reason
    if not np.isnan(theirs.std_kappa):
        tolerance = 1e-9 if ours.ase > 1e-6 else 1e-6
        # the same interval, clipped to kappa's range [-1, 1] (and a note says so)
        assert ours.ci.low == pytest.approx(max(theirs.kappa_low, -1.0), abs=tolerance)
        assert ours.ci.high == pytest.approx(min(theirs.kappa_upp, 1.0), abs=tolerance)
        clipped = theirs.kappa_low < -1 - tolerance or theirs.kappa_upp > 1 + tolerance
        if clipped:
            assert ours.ci.note.startswith("CI clipped to [-1, 1]")


def naive_ac1(codes: np.ndarray, q: int) -> float:
    """Gwet (2014) AC1, item by item."""
    rated = [row[row >= 0] for row in codes]
    pairable = [r for r in rated if len(r) >= 2]
    pa = np.mean([sum(((r == k).sum() * ((r == k).sum() - 1)) for k in range(q))
                  / (len(r) * (len(r) - 1)) for r in pairable])  # fmt: skip
    pi = np.mean([[(r == k).sum() / len(r) for k in range(q)] for r in rated if len(r)], axis=0)
    pe = (pi * (1 - pi)).sum() / (q - 1)
    return (pa - pe) / (1 - pe)


@SETTINGS
@given(label_codes(missing=True))
def test_ac1_matches_an_item_by_item_implementation(codes):
    used = np.unique(codes[codes >= 0])
    assume(len(used) >= 2 and (codes >= 0).sum(axis=1).max() >= 2)
    # Pass the categories so unused ones count in q, like irrCAC's categ.labels.
    q = int(codes.max()) + 1
    ours = ag.gwet_ac1(as_labels(codes), categories=LABELS[:q])
    assert ours.ac1 == pytest.approx(naive_ac1(codes, q), abs=1e-9)


@SETTINGS
@given(label_codes(missing=True))
def test_percent_agreement_matches_pair_counting(codes):
    ours = ag.percent_agreement(as_labels(codes))
    shares = []
    for row in codes:
        r = row[row >= 0]
        if len(r) >= 2:
            pairs = list(itertools.combinations(r, 2))
            shares.append(np.mean([a == b for a, b in pairs]))
    if shares:
        assert ours.proportion == pytest.approx(np.mean(shares), abs=1e-12)
    else:
        assert ours.proportion is None and ours.undefined_reason


@SETTINGS
@given(label_codes(min_coders=2, max_coders=9, missing=True))
def test_pair_counts_both_code_paths_agree(codes):
    """The per-coder-pair bincount path and the chunked count-table path are the same sum."""
    n_values = int(codes.max()) + 1 if codes.max() >= 0 else 1
    weights = np.random.default_rng(0).random(codes.shape[0])
    pairwise = _core.pair_counts(codes, n_values, weights)
    # Force the other path with a huge n_values padding (unused extra values).
    padded = _core.pair_counts(codes, n_values + 200, weights)[:n_values, :n_values]
    assert pairwise == pytest.approx(padded, abs=1e-9)
    assert (
        _core.agreeing_pairs(codes, n_values) == _core.agreeing_pairs(codes, n_values + 200)
    ).all()


def test_pair_counts_chunked_path_with_small_chunks(monkeypatch):
    rng = np.random.default_rng(5)
    codes = np.where(rng.random((500, 12)) < 0.2, -1, rng.integers(0, 3, (500, 12)))
    expected = _core.pair_counts(codes, 3)
    monkeypatch.setattr(_core, "CHUNK_ELEMENTS", 64)
    assert _core.pair_counts(codes, 3) == pytest.approx(expected)


@st.composite
def answer_sets(draw):
    n_items = draw(st.integers(1, 25))
    n_coders = draw(st.integers(2, 4))
    codes = ["a", "b", "c", "d"]
    answer = st.one_of(st.none(), st.frozensets(st.sampled_from(codes), min_size=0, max_size=3))
    return [[draw(answer) for _ in range(n_coders)] for _ in range(n_items)]


@SETTINGS
@given(answer_sets())
def test_masi_alpha_matches_krippendorff_with_a_masi_metric(rows):
    matrix = ag.sets_from_wide(rows)
    ours = ag.masi_alpha(matrix)
    values = list(matrix.values)
    data = np.where(matrix.codes >= 0, matrix.codes, np.nan).astype(float).T

    def metric(v1, v2, i1, i2, n_v, dtype=np.float64):
        lookup = np.array([[masi_distance(a, b) for b in values] for a in values])
        return lookup[v1.astype(int), v2.astype(int)].astype(dtype)

    try:
        theirs = krippendorff.alpha(
            data, value_domain=list(range(len(values))), level_of_measurement=metric
        )
    except ValueError:
        assert ours.alpha is None and ours.undefined_reason
        return
    if np.isnan(theirs):
        assert ours.alpha is None
    else:
        assert ours.alpha == pytest.approx(float(theirs), abs=1e-9)


def test_bootstrap_equals_a_loop_over_resampled_items():
    """The vectorised resampling is the textbook one: same draws, same kappas."""
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 4, size=(60, 3))
    codes[:, 1] = np.where(rng.random(60) < 0.5, codes[:, 0], codes[:, 1])
    result = ag.bootstrap_fleiss_ci(as_labels(codes), n_boot=200, seed=11, method="percentile")
    ordered = in_rating_order(codes, 4)  # the items are drawn in one order, whatever the input's
    draws = np.random.default_rng(11).integers(0, 60, size=(200, 60))
    kappas = [sm_fleiss_kappa(aggregate_raters(ordered[d], n_cat=4)[0]) for d in draws]
    low, high = np.quantile(kappas, [0.025, 0.975])
    assert (result.low, result.high) == pytest.approx((low, high), abs=1e-12)
    assert result.n_valid == 200 and result.seed == 11
    shuffled = codes[np.random.default_rng(0).permutation(60)]
    again = ag.bootstrap_fleiss_ci(as_labels(shuffled), n_boot=200, seed=11, method="percentile")
    assert (again.low, again.high) == (result.low, result.high)


def in_rating_order(codes: np.ndarray, k: int) -> np.ndarray:
    """The rows sorted by their counts per category (agreement.bootstrap.complete_counts)."""
    counts = np.stack([(codes == j).sum(axis=1) for j in range(k)], axis=1)
    return codes[np.lexsort(counts.T[::-1])]


def test_cohen_bootstrap_equals_a_loop_over_resampled_items():
    rng = np.random.default_rng(4)
    codes = rng.integers(0, 3, size=(50, 2))
    codes[:, 1] = np.where(rng.random(50) < 0.6, codes[:, 0], codes[:, 1])
    result = ag.bootstrap_cohen_ci(as_labels(codes), n_boot=200, seed=2, method="percentile")
    draws = np.random.default_rng(2).integers(0, 50, size=(200, 50))
    kappas = []
    for d in draws:
        table = np.zeros((3, 3))
        np.add.at(table, (codes[d, 0], codes[d, 1]), 1)
        kappas.append(cohens_kappa(table, return_results=False))
    low, high = np.quantile(kappas, [0.025, 0.975])
    assert (result.low, result.high) == pytest.approx((low, high), abs=1e-12)


@SETTINGS
@given(label_codes(missing=True))
def test_many_category_path_gives_the_same_alpha_and_fleiss(codes):
    """Above SMALL_TABLE categories only the diagonal and margins are binned: same figures."""
    import agreement.krippendorff_alpha as alpha_module

    labels = as_labels(codes)
    small_alpha, small_fleiss = ag.krippendorff_alpha(labels), ag.fleiss_kappa(labels)
    original, original_patterns = _core.SMALL_TABLE, _core.PATTERN_LIMIT
    try:
        _core.SMALL_TABLE, alpha_module.SMALL_TABLE, _core.PATTERN_LIMIT = 0, 0, 0
        big_alpha, big_fleiss = ag.krippendorff_alpha(labels), ag.fleiss_kappa(labels)
    finally:
        _core.SMALL_TABLE = alpha_module.SMALL_TABLE = original
        _core.PATTERN_LIMIT = original_patterns
    assert (big_alpha.alpha is None) == (small_alpha.alpha is None)
    if small_alpha.alpha is not None:
        assert big_alpha.alpha == pytest.approx(small_alpha.alpha, abs=1e-12)
    assert big_alpha.n_values == small_alpha.n_values
    if small_fleiss.kappa is not None:
        assert big_fleiss.kappa == pytest.approx(small_fleiss.kappa, abs=1e-12)


@SETTINGS
@given(label_codes(max_coders=4, missing=True))
def test_counting_items_by_rating_pattern_gives_the_coincidence_matrix_alpha(codes):
    """Few coders and categories: alpha from pattern counts equals alpha from the full
    coincidence matrix (pattern path off), exactly as the sums are of whole numbers."""
    labels = as_labels(codes)
    matrix = ag.from_wide(labels)
    assume(matrix.categories)  # no label at all: neither path has anything to count
    assert _core.patterns_fit(len(matrix.categories), matrix.n_coders)
    by_pattern = ag.krippendorff_alpha(matrix)
    original = _core.PATTERN_LIMIT
    try:
        _core.PATTERN_LIMIT = 0
        assert not _core.patterns_fit(len(matrix.categories), matrix.n_coders)
        by_pairs = ag.krippendorff_alpha(matrix)
    finally:
        _core.PATTERN_LIMIT = original
    assert by_pattern.n_items == by_pairs.n_items
    assert by_pattern.n_items_unpairable == by_pairs.n_items_unpairable
    assert by_pattern.n_values == by_pairs.n_values
    assert (by_pattern.alpha is None) == (by_pairs.alpha is None)
    if by_pairs.alpha is not None:
        assert by_pattern.alpha == pytest.approx(by_pairs.alpha, abs=1e-12)
        # The same D_o and D_e as the coincidence matrix's definition.
        o = ag.coincidence_matrix(matrix)
        n = o.sum()
        observed = (o.sum() - np.trace(o)) / n
        assert by_pattern.observed_disagreement == pytest.approx(observed, abs=1e-12)


def test_rating_patterns_count_items_by_their_ratings_in_chunks(monkeypatch):
    codes = np.array([[0, 1, -1], [0, 1, -1], [-1, -1, -1], [2, 2, 2], [0, 1, -1]])
    expected = np.zeros(4**3, dtype=np.int64)
    for row in codes:  # digits are code + 1, first coder most significant
        expected[(row[0] + 1) * 16 + (row[1] + 1) * 4 + (row[2] + 1)] += 1
    assert _core.rating_patterns(codes, 3).tolist() == expected.tolist()
    monkeypatch.setattr(_core, "CHUNK_ELEMENTS", 2)
    assert _core.rating_patterns(codes, 3).tolist() == expected.tolist()
    m, agreeing, counts = _core.pattern_tables(3, 3)
    pattern = 3 * 16 + 3 * 4 + 3  # every coder gave code 2
    assert (m[pattern], agreeing[pattern], counts[pattern].tolist()) == (3, 6, [0, 0, 3])
    assert (m[0], agreeing[0], counts[0].tolist()) == (0, 0, [0, 0, 0])


def test_hundreds_of_categories_match_the_peers():
    rng = np.random.default_rng(9)
    codes = rng.integers(0, 300, size=(400, 3))
    codes[:, 1] = np.where(rng.random(400) < 0.5, codes[:, 0], codes[:, 1])
    codes[rng.random(codes.shape) < 0.1] = -1
    labels = np.where(codes >= 0, codes.astype(str).astype(object), None)
    matrix = ag.from_wide(labels)
    assert matrix.codes.dtype == np.int16 and (len(matrix.categories) + 1) ** 2 > _core.SMALL_TABLE
    theirs = krippendorff.alpha(as_floats(codes).T, level_of_measurement="nominal")
    assert ag.krippendorff_alpha(matrix).alpha == pytest.approx(theirs, abs=1e-9)
    complete = codes[(codes >= 0).all(axis=1)]
    expected = sm_fleiss_kappa(aggregate_raters(complete)[0])
    assert ag.fleiss_kappa(matrix).kappa == pytest.approx(expected, abs=1e-9)
