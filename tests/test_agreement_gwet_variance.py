"""Gwet's generalized Fleiss' kappa (missing ratings) and the variances of it and of AC1.

Published values: Gwet's irrCAC R package, README "Computing agreement coefficients from
raw ratings" (github.com/kgwet/irrCAC, README.md; the same output is in the CRAN vignette
"Calculating Chance-corrected Agreement Coefficients"), for ``cac.raw4raters``, which is
Krippendorff's (2011) 4-coder x 12-unit table with missing ratings
(../shared/refs/krippendorff2011_4obs_12units.csv):

    gwet.ac1.raw(cac.raw4raters)     pa 0.8181818  pe 0.1903212  coeff 0.77544  se 0.14295
                                     conf.int (0.461,1)  p.value 0.000208721
    fleiss.kappa.raw(cac.raw4raters) pa 0.8181818  pe 0.2387153  coeff 0.76117  se 0.15302
                                     conf.int (0.424,1)  p.value 0.000419173

(irrCAC prints the coefficient and SE rounded to 5 decimals.)
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

import agreement as ag
from agreement.generalized import gwet_sums, item_counts, t_central, t_quantile

REFS = Path(__file__).resolve().parents[1].parent / "shared" / "refs"


def krippendorff_table() -> list[list[str | None]]:
    with open(REFS / "krippendorff2011_4obs_12units.csv", newline="") as f:
        rows = list(csv.reader(f))[1:]
    return [[cell or None for cell in row[1:]] for row in rows]


def test_generalized_fleiss_reproduces_irrcac_on_krippendorff_2011():
    result = ag.fleiss_kappa_generalized(krippendorff_table())
    assert round(result.kappa, 5) == 0.76117
    assert round(result.se, 5) == 0.15302
    assert round(result.observed_agreement, 7) == 0.8181818
    assert round(result.expected_agreement, 7) == 0.2387153
    assert result.p_value == pytest.approx(0.000419173, abs=5e-10)
    assert round(result.ci.low, 3) == 0.424 and result.ci.high == 1.0
    assert result.n_items == 12 and result.n_items_pairable == 11
    assert result.undefined_reason is None


def test_ac1_variance_reproduces_irrcac_on_krippendorff_2011():
    result = ag.gwet_ac1(krippendorff_table())
    assert round(result.ac1, 5) == 0.77544
    assert round(result.se, 5) == 0.14295
    assert round(result.observed_agreement, 7) == 0.8181818
    assert round(result.expected_agreement, 7) == 0.1903212
    assert result.p_value == pytest.approx(0.000208721, abs=5e-10)
    assert round(result.ci.low, 3) == 0.461 and result.ci.high == 1.0
    assert result.n_items == 11 and result.n_items_rated == 12


def test_report_gives_complete_case_and_generalized_kappa():
    report = ag.agreement_report(krippendorff_table(), n_boot=200)
    # The complete-case kappa keeps the 8 items all four coders rated (the 0.6415).
    assert report.fleiss.n_items == 8 and round(report.fleiss.kappa, 4) == 0.6415
    assert round(report.fleiss_generalized.kappa, 5) == 0.76117
    assert round(report.ac1.se, 5) == 0.14295
    data = report.to_dict()
    assert data["fleiss_generalized"]["se"] == report.fleiss_generalized.se
    assert "every item" in data["fleiss_generalized"]["uses"]


def test_generalized_equals_fleiss_without_missing_ratings():
    rng = np.random.default_rng(3)
    for _ in range(20):
        codes = rng.integers(0, 4, size=(int(rng.integers(5, 60)), int(rng.integers(2, 6))))
        table = codes.astype(str)
        complete = ag.fleiss_kappa(table)
        general = ag.fleiss_kappa_generalized(table)
        if complete.kappa is None:
            assert general.kappa is None
            continue
        assert general.kappa == pytest.approx(complete.kappa, abs=1e-12)
        assert general.expected_agreement == pytest.approx(complete.expected_agreement)


def naive(table: list[list[int | None]], q: int, kind: str) -> tuple[float, float]:
    """irrCAC's fleiss.kappa.raw / gwet.ac1.raw, item by item in plain Python."""
    rows = [[sum(1 for x in row if x == k) for k in range(q)] for row in table]
    rows = [r for r in rows if sum(r) >= 1]
    n = len(rows)
    ri = [sum(r) for r in rows]
    n2 = sum(1 for x in ri if x >= 2)
    pa_i = [
        sum(c * (c - 1) for c in r) / (x * (x - 1)) if x >= 2 else 0.0
        for r, x in zip(rows, ri, strict=True)
    ]
    pa = sum(pa_i) / n2
    pi = [sum(r[k] / x for r, x in zip(rows, ri, strict=True)) / n for k in range(q)]
    if kind == "fleiss":
        pe = sum(p * p for p in pi)
        pe_i = [sum(r[k] * pi[k] for k in range(q)) / x for r, x in zip(rows, ri, strict=True)]
    else:
        pe = sum(p * (1 - p) for p in pi) / (q - 1)
        pe_i = [
            sum(r[k] * (1 - pi[k]) for k in range(q)) / x / (q - 1)
            for r, x in zip(rows, ri, strict=True)
        ]
    coef = (pa - pe) / (1 - pe)
    total = 0.0
    for a, e, x in zip(pa_i, pe_i, ri, strict=True):
        c = (n / n2) * (a - pe * (x >= 2)) / (1 - pe)
        c -= 2 * (1 - coef) * (e - pe) / (1 - pe)
        total += (c - coef) ** 2
    return coef, math.sqrt(total / (n * (n - 1)))


@pytest.mark.parametrize("kind", ["fleiss", "ac1"])
def test_kernel_matches_plain_python_on_random_tables(kind):
    rng = np.random.default_rng(11 if kind == "fleiss" else 12)
    for _ in range(30):
        n_items, n_coders, q = int(rng.integers(3, 40)), int(rng.integers(2, 6)), 4
        codes = rng.integers(0, q, size=(n_items, n_coders))
        codes[rng.random(codes.shape) < 0.3] = -1
        codes[0, :2] = [1, 1]  # at least one pairable item
        codes[1, :2] = [2, 3]  # two categories
        table = [[int(x) if x >= 0 else None for x in row] for row in codes]
        coef, se = naive(table, q, kind)
        sums = gwet_sums(*item_counts(codes, q), q, kind)
        assert sums.coefficient == pytest.approx(coef, abs=1e-12)
        assert math.sqrt(sums.variance) == pytest.approx(se, abs=1e-12)


@pytest.mark.parametrize("kind", ["fleiss", "ac1"])
def test_pattern_rows_equal_item_rows(kind):
    """Counting items by rating pattern gives the figures of one row per item."""
    rng = np.random.default_rng(5)
    for _ in range(10):
        codes = rng.integers(0, 3, size=(500, 3)).astype(np.int8)
        codes[rng.random(codes.shape) < 0.2] = -1
        by_pattern = gwet_sums(*item_counts(codes, 3), 3, kind)
        per_item = np.stack([(codes == k).sum(axis=1) for k in range(3)], axis=1)
        by_item = gwet_sums(per_item, np.ones(len(codes)), 3, kind)
        assert by_pattern.coefficient == pytest.approx(by_item.coefficient, abs=1e-13)
        assert by_pattern.variance == pytest.approx(by_item.variance, rel=1e-11)


def test_student_t_against_tables():
    # Two-sided 95% critical values of Student's t (any table): df 1, 11, 30, 120.
    for df, value in ((1, 12.7062), (11, 2.2010), (30, 2.0423), (120, 1.9799)):
        assert round(t_quantile(0.95, df), 4) == value
    assert t_central(t_quantile(0.9, 7), 7) == pytest.approx(0.9, abs=1e-12)
    assert t_quantile(0.95, 10**6) == pytest.approx(1.959966, abs=1e-6)


def test_no_pairable_item_says_why():
    result = ag.fleiss_kappa_generalized([["a", None], [None, "b"]])
    assert result.kappa is None and result.se is None and result.undefined_reason
    ac1 = ag.gwet_ac1([["a", None], [None, "b"]])
    assert ac1.ac1 is None and ac1.se is None and ac1.undefined_reason


def test_generalized_kappa_below_minus_one_is_reported_not_refused():
    """p_a uses the items with two or more ratings, p_e every rated item: with missing
    ratings the generalized kappa can fall below -1 (as irrCAC gives it)."""
    table = [["a", "b"], ["c", None], ["c", None], ["c", None], ["c", None]]
    result = ag.fleiss_kappa_generalized(table)
    assert result.kappa < -1 and result.band == "poor"
    assert result.ci.low < result.kappa < result.ci.high
    report = ag.agreement_report(table, n_boot=200)
    assert report.fleiss_generalized.kappa == result.kappa
