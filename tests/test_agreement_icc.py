"""ICC(A,1) and ICC(A,k) against Shrout & Fleiss' (1979) Table 2 and McGraw & Wong's limits."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import agreement as ag

# Shrout & Fleiss (1979), Table 2: six targets rated by four judges.
SHROUT_FLEISS = [
    [9, 2, 5, 8],
    [6, 1, 3, 2],
    [8, 4, 6, 8],
    [7, 1, 2, 6],
    [10, 5, 6, 9],
    [6, 2, 4, 7],
]


def test_shrout_fleiss_table_2_published_values():
    r = ag.icc(SHROUT_FLEISS)
    # Table 3 of the paper: ICC(2,1) = .29, ICC(2,4) = .62; Table 2's mean squares.
    assert round(r.single, 2) == 0.29
    assert round(r.average, 2) == 0.62
    assert r.ms_rows == pytest.approx(11.24, abs=0.005)
    assert r.ms_columns == pytest.approx(32.49, abs=0.005)
    assert r.ms_error == pytest.approx(1.02, abs=0.005)
    assert (r.n_items, r.n_coders, r.n_items_incomplete) == (6, 4, 0)


def test_shrout_fleiss_confidence_limits_as_mcgraw_wong():
    # The 95% limits R's psych::ICC prints for this table (McGraw & Wong 1996, case 2A).
    r = ag.icc(SHROUT_FLEISS)
    assert (round(r.single_ci.low, 3), round(r.single_ci.high, 2)) == (0.019, 0.76)
    assert (round(r.average_ci.low, 3), round(r.average_ci.high, 2)) == (0.071, 0.93)
    assert r.single_ci.low < r.single < r.single_ci.high


def test_incomplete_items_are_set_aside_and_counted():
    table = pd.DataFrame([*SHROUT_FLEISS, [3, np.nan, 4, 5]], dtype=float)
    r = ag.icc(table)
    assert r.n_items == 6 and r.n_items_incomplete == 1
    assert r.single == pytest.approx(ag.icc(SHROUT_FLEISS).single)


def test_perfect_agreement_is_one_and_constant_ratings_undefined():
    r = ag.icc([[1, 1], [2, 2], [5, 5]])
    assert r.single == pytest.approx(1.0) and r.average == pytest.approx(1.0)
    flat = ag.icc([[3, 3], [3, 3]])
    assert flat.single is None and "same number" in flat.undefined_reason
    assert flat.to_dict()["single"] is None


def test_a_coder_shift_lowers_absolute_agreement():
    shifted = [[x, x + 3] for x in (1, 2, 3, 4, 5)]
    r = ag.icc(shifted)
    assert r.single < 0.5  # consistency would be 1; absolute agreement penalises the shift


def test_too_few_items_or_coders():
    assert "two or more items" in ag.icc([[1, 2, 3]]).undefined_reason
    assert "two or more coders" in ag.icc([[1], [2]]).undefined_reason
