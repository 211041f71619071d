"""The one-call report, the coder-vs-reference comparison and multi-select agreement."""

from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd
import pytest

import agreement as ag
from agreement.masi import masi_distance

CODES = ["Initiate", "ack", "query", "instruct", "explain", "check", "align", "other"]


def simulated(n_items: int, n_coders: int, seed: int = 0, agree: float = 0.6) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.choice(len(CODES), size=n_items)
    noise = rng.choice(len(CODES), size=(n_items, n_coders))
    codes = np.where(rng.random((n_items, n_coders)) < agree, truth[:, None], noise)
    return np.array(CODES, dtype=object)[codes]


def test_report_fields_and_json():
    labels = simulated(120, 3)
    labels[5, 2] = None
    report = ag.agreement_report(labels, categories=CODES, n_boot=300, seed=7)
    data = report.to_dict()
    text = json.dumps(data, allow_nan=False)
    assert json.loads(text) == data
    assert report.n_items == 120 and report.n_coders == 3
    assert report.categories == tuple(CODES)
    assert report.items_used == 119 and [x.item for x in report.items_left_out] == [5]
    assert report.fleiss.kappa == ag.fleiss_kappa(labels, categories=CODES).kappa
    assert report.fleiss.band == ag.landis_koch(report.fleiss.kappa)
    assert report.fleiss_ci.n_boot == 300 and report.fleiss_ci.seed == 7
    assert report.fleiss_ci.low < report.fleiss.kappa < report.fleiss_ci.high
    assert report.fleiss_ci == ag.bootstrap_fleiss_ci(labels, categories=CODES, n_boot=300, seed=7)
    assert report.alpha == ag.krippendorff_alpha(labels, categories=CODES)
    assert report.ac1 == ag.gwet_ac1(labels, categories=CODES)
    assert report.percent_agreement == ag.percent_agreement(labels, categories=CODES)
    assert [(p.coder_a, p.coder_b) for p in report.pairwise] == [
        ("coder1", "coder2"),
        ("coder1", "coder3"),
        ("coder2", "coder3"),
    ]
    assert report.pairwise[1].n_items == 119
    assert set(data) == {
        "n_items", "n_coders", "coders", "categories", "items_used", "items_left_out",
        "fleiss", "fleiss_ci", "alpha", "ac1", "percent_agreement", "pairwise",
        "level", "alpha_nominal", "pairwise_weighted", "fleiss_generalized",
    }  # fmt: skip
    assert data["level"] == "nominal" and data["alpha_nominal"] is None


def test_report_is_reproducible_and_seed_matters():
    labels = simulated(60, 3, seed=1)
    a = ag.agreement_report(labels, n_boot=200, seed=3)
    assert a == ag.agreement_report(labels, n_boot=200, seed=3)
    assert a.fleiss_ci != ag.agreement_report(labels, n_boot=200, seed=4).fleiss_ci


def test_bootstrap_of_180_items_by_3_coders_is_fast():
    matrix = ag.from_wide(simulated(180, 3, seed=2))
    ag.bootstrap_fleiss_ci(matrix)  # warm up
    start = time.perf_counter()
    for _ in range(5):
        interval = ag.bootstrap_fleiss_ci(matrix, n_boot=1000, seed=0)
    elapsed = (time.perf_counter() - start) / 5
    assert interval.n_valid == 1000
    assert elapsed < 0.05, f"1,000 resamples took {elapsed * 1000:.1f} ms"


def test_bootstrap_drops_undefined_resamples_with_a_note():
    # One disagreement among many unanimous items: some resamples hold a single category.
    labels = [["a", "a"]] * 19 + [["a", "b"]]
    interval = ag.bootstrap_fleiss_ci(labels, n_boot=500, seed=0)
    assert 0 < interval.n_valid < 500
    assert interval.note.startswith(f"{500 - interval.n_valid} of 500 resamples were left out")
    assert interval.undefined_reason is None


def test_landis_koch_bands():
    assert [ag.landis_koch(k) for k in (-0.1, 0.0, 0.2, 0.21, 0.4, 0.6, 0.8, 0.81, 1.0)] == [
        "poor", "slight", "slight", "fair", "fair", "moderate", "substantial",
        "almost perfect", "almost perfect",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="between -1 and 1"):
        ag.landis_koch(float("nan"))


# --- one coder against a reference ------------------------------------------------------


def test_compare_to_reference_by_hand():
    frame = pd.DataFrame(
        {
            "gold": ["a", "a", "a", "b", "b", "c", "c", "a"],
            "llm": ["a", "a", "b", "b", "b", "b", None, "a"],
        }
    )
    result = ag.compare_to_reference(frame, "llm", "gold", categories=["a", "b", "c", "d"])
    assert result.n_items == 7 and result.n_unrated == 1
    assert result.accuracy == pytest.approx(5 / 7)
    assert result.confusion.rows_coder == "gold" and result.confusion.columns_coder == "llm"
    assert result.confusion.counts == ((3, 1, 0, 0), (0, 2, 0, 0), (0, 1, 0, 0), (0, 0, 0, 0))
    scores = {s.label: s for s in result.per_label}
    assert (scores["a"].precision, scores["a"].recall, scores["a"].f1) == pytest.approx(
        (1.0, 0.75, 6 / 7)
    )
    assert (scores["b"].precision, scores["b"].recall) == pytest.approx((0.5, 1.0))
    assert scores["b"].support == 2 and scores["b"].predicted == 4
    assert scores["c"].precision is None and scores["c"].recall == 0.0 and scores["c"].f1 == 0.0
    assert "never gave this label, so precision is undefined" in scores["c"].undefined_reason
    assert scores["d"].f1 is None and scores["d"].undefined_reason
    assert result.macro_f1 == pytest.approx((6 / 7 + 2 / 3 + 0.0) / 3)
    assert result.kappa.kappa == ag.cohen_kappa(frame, "gold", "llm").kappa
    assert result.kappa_ci.method == "BCa bootstrap over items"
    assert result.kappa_ci.low is None  # 7 items: too few to bootstrap
    assert "at least 10 items; got 7" in result.kappa_ci.undefined_reason
    json.dumps(result.to_dict(), allow_nan=False)


def test_classification_scores_on_lists():
    scores = ag.classification_scores(["x", "y", "y"], ["x", "y", "x"])
    assert scores.accuracy == pytest.approx(2 / 3)
    assert scores.confusion.counts == ((1, 0), (1, 1))
    with pytest.raises(ValueError, match="reference has 3 labels but predicted has 2"):
        ag.classification_scores(["x", "y", "y"], ["x", "y"])
    with pytest.raises(ValueError, match="not with itself"):
        ag.compare_to_reference([["a", "a"]], "coder1", "coder1")


# --- multi-select -------------------------------------------------------------------------


def test_masi_distance_cases():
    assert masi_distance({"a", "b"}, {"b", "a"}) == 0.0
    assert masi_distance({"a"}, {"a", "b"}) == pytest.approx(1 - 0.5 * 2 / 3)
    assert masi_distance({"a", "b"}, {"b", "c"}) == pytest.approx(1 - (1 / 3) * (1 / 3))
    assert masi_distance({"a"}, {"b"}) == 1.0
    assert masi_distance(set(), set()) == 0.0
    assert masi_distance(set(), {"a"}) == 1.0
    assert masi_distance("a", ["a"]) == 0.0


def test_masi_alpha_by_hand():
    # Two coders, three items: identical, subset, disjoint.
    rows = [[{"a", "b"}, {"a", "b"}], [{"a"}, {"a", "b"}], [{"c"}, {"a"}]]
    result = ag.masi_alpha(rows)
    values = [frozenset("a"), frozenset("c"), frozenset("ab")]
    d = np.array([[masi_distance(x, y) for y in values] for x in values])
    o = np.zeros((3, 3))
    for x, y in [(2, 2), (0, 2), (1, 0)]:
        o[x, y] += 1
        o[y, x] += 1
    n_v = o.sum(0)
    e = (np.outer(n_v, n_v) - np.diag(n_v)) / (n_v.sum() - 1)
    assert result.metric == "masi"
    assert result.alpha == pytest.approx(1 - (o * d).sum() / (e * d).sum(), abs=1e-12)
    assert result.n_items == 3


def test_multi_select_report():
    frame = pd.DataFrame(
        {
            "item": [1, 1, 2, 2, 3, 3, 4],
            "coder": ["ann", "bob"] * 3 + ["ann"],
            "value": [["late"], ["late"], ["late", "vague"], ["vague"], [], [], ["late"]],
        }
    )
    report = ag.multi_select_report(frame, categories=["late", "vague", "rude"])
    data = report.to_dict()
    json.dumps(data, allow_nan=False)
    assert report.n_items == 4 and report.items_used == 3
    assert report.items_left_out[0].reason == "Rated by 1 of 2 coders (not by 'bob')."
    assert report.alpha_masi.n_items == 3
    assert report.exact_agreement.proportion == pytest.approx(2 / 3)
    codes = {c.code: c for c in report.per_code}
    assert list(codes) == ["late", "vague", "rude"]
    assert codes["late"].fleiss.kappa == pytest.approx(1 / 3)
    assert codes["vague"].fleiss.kappa == pytest.approx(1.0)
    assert codes["rude"].fleiss.kappa is None
    assert codes["rude"].fleiss.undefined_reason.startswith("Every rating is 'absent'")
    assert codes["rude"].prevalence == 0.0
    assert codes["late"].prevalence == pytest.approx(4 / 7)
