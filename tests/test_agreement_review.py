"""What a methods reviewer would catch (issue 21): reasons, minimum sizes for large-sample
tests and bootstraps, BCa intervals, label normalisation, levels of measurement."""

from __future__ import annotations

import unicodedata
from statistics import NormalDist

import krippendorff
import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

import agreement as ag
from agreement.bootstrap import MIN_ITEMS, RECOMMENDED_RESAMPLES, min_resamples


def labels(codes: np.ndarray) -> np.ndarray:
    return np.where(codes >= 0, codes.astype(str), None).astype(object)


def agreeing(n_items: int, n_coders: int = 3, k: int = 3, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, k, size=(n_items, n_coders))
    for j in range(1, n_coders):
        codes[:, j] = np.where(rng.random(n_items) < 0.6, codes[:, 0], codes[:, j])
    return codes


# --- 1. a category used only on items left out -------------------------------------------


def test_a_category_used_only_on_left_out_items_says_so():
    result = ag.fleiss_kappa([["a", "a", "b"], ["b", "b", "b"], ["a", "a", "a"], ["c", None, None]])
    c = result.per_category[2]
    assert c.category == "c" and c.kappa is None and c.proportion == 0.0
    assert c.undefined_reason == (
        "Category 'c' was used only on items left out (not rated by every coder), so its "
        "kappa is undefined."
    )
    unused = ag.fleiss_kappa([["a", "b"], ["a", "a"]], categories=["a", "b", "c"])
    assert unused.per_category[2].undefined_reason == (
        "Category 'c' was never used, so its kappa is undefined."
    )


# --- 2. a minimum of items for the large-sample z-tests ----------------------------------


def test_the_z_test_needs_2k_squared_items():
    one = ag.fleiss_kappa([["a", "b", "b"]])
    assert one.kappa == pytest.approx(-0.5)
    assert one.se0 is None and one.z is None and one.p_value is None
    assert one.undefined_reason == (
        "The large-sample z-test of Fleiss' kappa needs at least 8 items (2k² for k = 2 "
        "categories, Cicchetti & Fleiss 1977); got 1, so SE0, z and p are not given."
    )
    for c in one.per_category:
        assert c.kappa is not None and c.se0 is None and c.z is None
        assert "a category's kappa needs at least 8 items" in c.undefined_reason
    assert [ag.min_items_for_z(k) for k in (1, 2, 3, 5, 10)] == [8, 8, 18, 50, 200]


def test_the_z_test_is_given_from_the_minimum_on():
    three = labels(agreeing(18, k=3, seed=1))
    assert len({x for row in three for x in row}) == 3
    at = ag.fleiss_kappa(three)
    assert at.se0 is not None and at.z is not None and at.undefined_reason is None
    assert all(c.z is not None for c in at.per_category)
    below = ag.fleiss_kappa(three[:17])
    assert below.z is None and "needs at least 18 items" in below.undefined_reason
    assert all(c.z is not None for c in below.per_category)  # 17 >= 8
    forced = ag.fleiss_kappa(three[:17], min_items_z=0)
    assert forced.z == pytest.approx(forced.kappa / forced.se0)


def test_cohen_uses_the_same_minimum():
    pair = labels(agreeing(17, n_coders=2, k=3, seed=2))
    short = ag.cohen_kappa(pair)
    assert short.z is None and short.se0 is None and short.p_value is None
    assert "Cohen's kappa needs at least 18 items" in short.undefined_reason
    assert short.ci.low is not None  # the interval uses the ASE, not the z-test
    assert ag.cohen_kappa(pair, min_items_z=0).z is not None
    assert "single item" in ag.cohen_kappa([["x", "y"]]).undefined_reason


# --- 3. tiny bootstraps -------------------------------------------------------------------


def test_too_few_resamples_give_no_interval():
    data = labels(agreeing(40))
    five = ag.bootstrap_fleiss_ci(data, n_boot=5)
    assert five.low is None and five.n_valid == 5
    assert five.undefined_reason == (
        "Only 5 usable resamples: a 95% interval needs at least 5 beyond each limit, i.e. "
        "200 resamples (Efron & Tibshirani 1993 recommend 1,000 or more)."
    )
    assert min_resamples(0.95) == 200 and min_resamples(0.9) == 100
    assert ag.bootstrap_fleiss_ci(data, n_boot=199).low is None
    few = ag.bootstrap_fleiss_ci(data, n_boot=200)
    assert few.low is not None and few.n_valid == 200
    assert few.note.startswith("Only 200 usable resamples") and "1,000 or more" in few.note
    assert ag.bootstrap_fleiss_ci(data, n_boot=RECOMMENDED_RESAMPLES).note is None


def test_too_few_items_give_no_interval():
    for n in (2, MIN_ITEMS - 1):
        interval = ag.bootstrap_fleiss_ci(labels(agreeing(n)))
        assert interval.low is None and interval.n_valid == 0
        assert interval.undefined_reason == (
            f"A bootstrap over items needs at least {MIN_ITEMS} items; got {n}, too few "
            "distinct resamples for an interval."
        )
        assert ag.bootstrap_cohen_ci(labels(agreeing(n, n_coders=2))).low is None
    assert ag.bootstrap_fleiss_ci(labels(agreeing(MIN_ITEMS, seed=3))).low is not None


def test_the_usable_resamples_are_counted():
    codes = np.zeros((12, 3), dtype=int)
    codes[0] = [1, 1, 0]  # most resamples without item 0 hold a single category
    interval = ag.bootstrap_fleiss_ci(labels(codes), method="percentile")
    assert 0 < interval.n_valid < interval.n_boot == 1000
    left = interval.n_boot - interval.n_valid
    assert interval.note.startswith(f"{left} of 1000 resamples were left out")


# --- 4. BCa -----------------------------------------------------------------------------


def test_bca_is_the_textbook_interval():
    """Same draws, statsmodels' kappa on every resample and every jackknife sample."""
    from tests.test_agreement_properties import in_rating_order

    codes = agreeing(40, k=4, seed=5)
    result = ag.bootstrap_fleiss_ci(labels(codes), n_boot=2000, seed=9, method="bca")
    assert result.method == "BCa bootstrap over items"

    def kappa(rows: np.ndarray) -> float:
        return sm_fleiss_kappa(aggregate_raters(rows, n_cat=4)[0])

    estimate = kappa(codes)
    ordered = in_rating_order(codes, 4)  # the items as the bootstrap orders them
    draws = np.random.default_rng(9).integers(0, 40, size=(2000, 40))
    boot = np.array([kappa(ordered[d]) for d in draws])
    jack = np.array([kappa(np.delete(codes, i, axis=0)) for i in range(40)])
    normal = NormalDist()
    z0 = normal.inv_cdf(((boot < estimate).sum() + 0.5 * (boot == estimate).sum()) / 2000)
    d = jack.mean() - jack
    a = (d**3).sum() / (6 * (d**2).sum() ** 1.5)
    z = normal.inv_cdf(0.975)
    levels = [normal.cdf(z0 + (z0 + t) / (1 - a * (z0 + t))) for t in (-z, z)]
    assert (result.low, result.high) == pytest.approx(tuple(np.quantile(boot, levels)), abs=1e-12)


def test_bca_is_the_default_and_named_everywhere():
    data = labels(agreeing(60, seed=6))
    default = ag.bootstrap_fleiss_ci(data)
    assert default == ag.bootstrap_fleiss_ci(data, method="bca")
    assert default.method == "BCa bootstrap over items"
    percentile = ag.bootstrap_fleiss_ci(data, method="percentile")
    assert percentile.method == "percentile bootstrap over items"
    assert (percentile.low, percentile.high) != (default.low, default.high)
    report = ag.agreement_report(data, ci_method="percentile")
    assert report.fleiss_ci == percentile and report.to_dict()["fleiss_ci"]["method"] == (
        "percentile bootstrap over items"
    )
    assert ag.bootstrap_cohen_ci(data[:, :2], method="bca").method == "BCa bootstrap over items"
    with pytest.raises(ValueError, match="'percentile' or 'bca'"):
        ag.bootstrap_fleiss_ci(data, method="basic")


# --- 5. a zero-width Fleiss interval ------------------------------------------------------


def test_a_zero_width_fleiss_interval_says_so():
    data = [["a", "a", "a"], ["b", "b", "b"], ["c", "c", "c"]] * 5
    for method in ("bca", "percentile"):
        interval = ag.bootstrap_fleiss_ci(data, method=method)
        assert (interval.low, interval.high) == (1.0, 1.0)
        assert "kappa = 1.000, so the interval has no width" in interval.note
        assert "says nothing about how precise kappa is" in interval.note
    assert ag.bootstrap_fleiss_ci(labels(agreeing(30))).note is None


# --- 6. labels in the Python API: NFC, no blanks -------------------------------------------


def test_labels_are_nfc_normalised():
    composed, decomposed = "caf\u00e9", "cafe\u0301"
    assert composed != decomposed
    result = ag.fleiss_kappa([[composed, decomposed], ["tea", "tea"], [decomposed, "tea"]])
    assert result.categories == ("café", "tea")
    assert all(unicodedata.is_normalized("NFC", c) for c in result.categories)
    matrix = ag.from_wide([[decomposed, "tea"]], categories=[composed, "tea"])
    assert matrix.codes.tolist() == [[0, 1]]
    long = pd.DataFrame({"item": [1, 1], "coder": ["a", "b"], "value": [composed, decomposed]})
    assert ag.percent_agreement(ag.from_long(long)).proportion == 1.0
    assert ag.sets_from_wide([[{composed}, {decomposed}]]).categories == ("café",)


@pytest.mark.parametrize("blank", ["", " ", "\t", "\u00a0", "  \n"])
def test_blank_labels_are_refused(blank):
    with pytest.raises(ValueError, match=r"A label is blank .*: give every rating a code, or None"):
        ag.fleiss_kappa([["a", blank], ["a", "b"]])
    with pytest.raises(ValueError, match="A label is blank"):
        ag.from_wide([["a", "b"]], categories=["a", blank])
    with pytest.raises(ValueError, match="A label is blank"):
        ag.sets_from_wide([[{"a"}, {blank}]])


# --- 7. levels of measurement and weighted kappa --------------------------------------------


@pytest.mark.parametrize("level", ["ordinal", "interval", "ratio"])
def test_alpha_levels_match_krippendorff(level):
    rng = np.random.default_rng(7)
    for _ in range(20):
        codes = rng.integers(-1, 5, size=(25, 3))
        values = np.where(codes >= 0, codes + 1.0, np.nan)
        ours = ag.krippendorff_alpha(labels(codes + (codes >= 0)), level=level)
        theirs = krippendorff.alpha(
            values.T, level_of_measurement=level, value_domain=[1, 2, 3, 4, 5]
        )
        assert ours.alpha == pytest.approx(theirs, abs=1e-9)
        assert ours.metric == level


def test_ordinal_ranks_follow_the_category_order():
    data = [["low", "mid"], ["mid", "mid"], ["high", "high"], ["low", "low"], ["mid", "high"]]
    ranked = ag.krippendorff_alpha(data, categories=["low", "mid", "high"], level="ordinal")
    numbers = [[{"low": 1, "mid": 2, "high": 3}[x] for x in row] for row in data]
    assert ranked.alpha == pytest.approx(ag.krippendorff_alpha(numbers, level="ordinal").alpha)
    shuffled = ag.krippendorff_alpha(data, categories=["mid", "low", "high"], level="ordinal")
    assert shuffled.alpha != pytest.approx(ranked.alpha)
    with pytest.raises(ValueError, match="Interval alpha needs numeric labels; 'high'"):
        ag.krippendorff_alpha(data, level="interval")
    with pytest.raises(ValueError, match="level of measurement must be one of"):
        ag.krippendorff_alpha(data, level="likert")


@pytest.mark.parametrize("weights", ["linear", "quadratic"])
def test_weighted_cohen_matches_statsmodels(weights):
    rng = np.random.default_rng(8)
    for _ in range(20):
        table = rng.integers(0, 9, size=(4, 4)).astype(float)
        ours = ag.cohen_kappa_table(table, weights=weights, min_items_z=0)
        theirs = cohens_kappa(table, wt=weights)
        assert ours.weights == weights
        assert ours.kappa == pytest.approx(theirs.kappa, abs=1e-12)
        assert ours.ase == pytest.approx(theirs.std_kappa, abs=1e-12)
        assert ours.se0 == pytest.approx(theirs.std_kappa0, abs=1e-12)
        assert ours.z == pytest.approx(theirs.z_value, rel=1e-9)
    pair = [["1", "2"], ["2", "2"], ["3", "3"], ["1", "1"], ["2", "3"]]
    from_labels = ag.cohen_kappa(pair, weights=weights, categories=["1", "2", "3"])
    table = np.zeros((3, 3))
    for a, b in pair:
        table[int(a) - 1, int(b) - 1] += 1
    assert from_labels.kappa == pytest.approx(cohens_kappa(table, wt=weights).kappa)
    assert ag.cohen_kappa(pair).weights is None


def test_an_ordinal_report_has_its_level():
    codes = agreeing(40, k=4, seed=10)
    report = ag.agreement_report(labels(codes), level="ordinal")
    assert report.level == "ordinal" and report.alpha.metric == "ordinal"
    assert report.alpha == ag.krippendorff_alpha(labels(codes), level="ordinal")
    assert report.alpha_nominal == ag.krippendorff_alpha(labels(codes))
    assert [p.weights for p in report.pairwise_weighted] == ["linear"] * 3
    interval = ag.agreement_report(labels(codes), level="interval")
    assert [p.weights for p in interval.pairwise_weighted] == ["quadratic"] * 3
    nominal = ag.agreement_report(labels(codes))
    assert nominal.level == "nominal" and nominal.alpha_nominal is None
    assert nominal.pairwise_weighted == ()
