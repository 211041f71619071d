"""Edge cases return a value with a reason; the peers' known traps are not copied."""

from __future__ import annotations

import json
import math
import warnings

import krippendorff
import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

import agreement as ag


def no_nan(result) -> dict:
    """to_dict() must survive strict JSON (no NaN/inf anywhere)."""
    data = result.to_dict()
    json.dumps(data, allow_nan=False)
    return data


@pytest.fixture(autouse=True)
def _our_code_never_warns():
    """0/0 corners are handled, not left to NumPy: any RuntimeWarning is a failure."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        yield


# --- statsmodels traps ----------------------------------------------------------------


def test_trap_statsmodels_counts_nan_as_a_category():
    """aggregate_raters turns NaN into its own category and fleiss_kappa answers silently."""
    data = np.array(
        [[1, 1, 1], [2, 2, 2], [1, 2, np.nan], [2, 2, 1], [1, 1, np.nan], [3, 3, 3]],
        dtype=float,
    )
    table, levels = aggregate_raters(data)
    assert np.isnan(levels).any()  # NaN became a "category"...
    wrong = sm_fleiss_kappa(table)  # ...and a kappa comes back without a word.

    ours = ag.fleiss_kappa(data)
    assert ours.categories == ("1", "2", "3")
    assert ours.n_items == 4
    assert ours.items_left_out == (2, 4)
    right = sm_fleiss_kappa(aggregate_raters(data[[0, 1, 3, 5]].astype(int))[0])
    assert ours.kappa == pytest.approx(right, abs=1e-12)
    assert not math.isclose(wrong, right, abs_tol=1e-3)

    report = ag.agreement_report(data)
    assert [(x.item, x.rated_by, x.missing_coders) for x in report.items_left_out] == [
        (2, 2, ("coder3",)),
        (4, 2, ("coder3",)),
    ]
    assert report.items_left_out[0].reason == "Rated by 2 of 3 coders (not by 'coder3')."
    assert report.items_used == 4
    # Alpha, AC1 and percent agreement use every item with two or more ratings.
    assert report.alpha.n_items == 6
    assert report.percent_agreement.n_items == 6


def test_trap_statsmodels_asserts_without_a_message_on_unequal_raters():
    table = np.array([[3, 0], [1, 1], [0, 3]])
    with pytest.raises(AssertionError) as raised:
        sm_fleiss_kappa(table)
    assert str(raised.value) == ""

    with pytest.raises(ValueError, match=r"same number of coders; row 0 has 3 but row 1 has 2"):
        ag.fleiss_kappa_counts(table)
    # From labels, unequal raters per item are handled: incomplete items are left out.
    labels = [["a", "a", "a"], ["a", "b", None], ["b", "b", "b"], ["a", "b", "b"]]
    result = ag.fleiss_kappa(labels)
    assert result.n_items == 3 and result.items_left_out == (1,)
    assert result.kappa is not None


# --- krippendorff traps ---------------------------------------------------------------


def test_trap_krippendorff_raises_on_a_one_value_domain():
    data = [["ack", "ack", None], ["ack", "ack", "ack"], [None, "ack", "ack"]]
    with pytest.raises(ValueError, match="more than one value in the domain"):
        krippendorff.alpha(
            np.array([[1, 1, np.nan], [1, 1, 1], [np.nan, 1, 1]]).T,
            level_of_measurement="nominal",
        )
    ours = ag.krippendorff_alpha(data)
    assert ours.alpha is None
    assert ours.undefined_reason.startswith("Every pairable rating is 'ack'")
    assert ours.observed_disagreement == 0.0
    assert ours.n_items == 3
    no_nan(ours)


def test_trap_krippendorff_reads_the_string_nan_as_missing():
    """ "nan" is a real label (a code could be called that); only None/np.nan/pd.NA are missing."""
    labels = np.array(
        [
            ["nan", "nan", "ack"],
            ["ack", "ack", "ack"],
            ["nan", "nan", "nan"],
            ["query", "nan", "ack"],
            ["query", "query", "ack"],
        ],
        dtype=object,
    )
    renamed = np.where(labels == "nan", "zzz", labels)
    ours = ag.krippendorff_alpha(labels)
    assert ours.alpha == pytest.approx(ag.krippendorff_alpha(renamed).alpha, abs=1e-12)
    assert ours.n_values == 15
    assert ag.from_wide(labels).categories == ("ack", "nan", "query")

    # The package coerces to str and drops every "nan": a different, wrong figure.
    theirs = krippendorff.alpha(labels.T.astype(str), level_of_measurement="nominal")
    package_on_renamed = krippendorff.alpha(renamed.T.astype(str), level_of_measurement="nominal")
    assert ours.alpha == pytest.approx(package_on_renamed, abs=1e-12)
    assert not math.isclose(theirs, ours.alpha, abs_tol=1e-3)


@pytest.mark.parametrize("missing", [None, np.nan, pd.NA, float("nan")])
def test_only_none_nan_and_pd_na_are_missing(missing):
    data = np.array([["a", "a"], ["b", missing], ["nan", "nan"]], dtype=object)
    matrix = ag.from_wide(data)
    assert matrix.codes.tolist() == [[0, 0], [1, -1], [2, 2]]
    assert matrix.categories == ("a", "b", "nan")


# --- irrCAC trap: a single item -------------------------------------------------------


def test_trap_single_item_never_divides_by_zero():
    report = ag.agreement_report([["Initiate", "ack", "Initiate"]])
    data = no_nan(report)
    assert report.n_items == 1 and report.items_used == 1
    assert report.fleiss.kappa == pytest.approx(-0.5)
    assert report.alpha.alpha == pytest.approx(0.0)
    assert report.ac1.ac1 is not None
    assert report.fleiss_ci.low is None
    assert "at least 10 items; got 1" in report.fleiss_ci.undefined_reason
    assert data["fleiss_ci"]["undefined_reason"] == report.fleiss_ci.undefined_reason
    for pair in report.pairwise:  # a CI of Cohen's kappa too is absent with its reason
        assert pair.ci.low is None and pair.ci.undefined_reason
    assert "single item" in report.pairwise[0].ci.undefined_reason  # coder1 / coder2 differ
    assert unexplained(data) == []


STATISTICS = {"kappa", "ase", "se0", "z", "p_value", "low", "high", "alpha", "ac1", "proportion"}


def unexplained(value, path: str = "") -> list[str]:
    """Paths of statistics that are None in a to_dict() tree without an undefined_reason."""
    found = []
    if isinstance(value, dict):
        if "undefined_reason" in value and not value["undefined_reason"]:
            found += [f"{path}.{k}" for k in STATISTICS if k in value and value[k] is None]
        for key, item in value.items():
            found += unexplained(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += unexplained(item, f"{path}[{i}]")
    return found


def test_cohen_on_a_single_item_says_why_there_is_no_interval():
    result = ag.cohen_kappa([["x", "y"]])
    data = no_nan(result)
    assert result.n_items == 1 and result.kappa == 0.0
    assert result.ase is None and result.se0 is None and result.z is None
    assert result.ci.low is None and result.ci.high is None
    assert (
        result.ci.undefined_reason
        == result.undefined_reason
        == (
            "On a single item the asymptotic standard errors are undefined, so Cohen's kappa "
            "has no confidence interval and no z-test."
        )
    )
    assert unexplained(data) == []


def test_a_zero_width_cohen_interval_says_so():
    """SAS gives kappa 1 with ASE 0 the interval [1, 1]; we keep it and say what it means."""
    result = ag.cohen_kappa([["x", "x"], ["y", "y"]])
    assert result.kappa == 1.0 and result.ase == 0.0
    assert (result.ci.low, result.ci.high) == (1.0, 1.0)
    assert "has no width" in result.ci.note
    inside = [["x", "x"]] * 10 + [["y", "y"]] * 6 + [["x", "y"]] * 2 + [["y", "x"]] * 2
    assert ag.cohen_kappa(inside).ci.note is None


@pytest.mark.parametrize(
    ("data", "low", "high", "note"),
    [
        (  # kappa 2/3, ASE 0.2165: 0.6667 + 1.96 * 0.2165 = 1.088
            [["x", "x"]] * 5 + [["y", "y"]] * 5 + [["x", "y"], ["y", "x"]],
            0.24494956270611357,
            1.0,
            "CI clipped to [-1, 1] (kappa ± z·ASE is 0.245 to 1.088).",
        ),
        (  # kappa -1/2, ASE 0.3062: -0.5 - 1.96 * 0.3062 = -1.100
            [["x", "x"], ["y", "x"], ["x", "y"]],
            -1.0,
            0.10011395954441127,
            "CI clipped to [-1, 1] (kappa ± z·ASE is -1.100 to 0.100).",
        ),
    ],
)
def test_cohen_interval_is_clipped_to_the_range_of_kappa(data, low, high, note):
    result = ag.cohen_kappa(data)
    assert (result.ci.low, result.ci.high) == (pytest.approx(low, abs=1e-12), high)
    assert result.ci.note == note
    half = 1.959963984540054 * result.ase
    assert f"{result.kappa - half:.3f} to {result.kappa + half:.3f})." in note


@pytest.mark.parametrize(
    "data",
    [
        [["x", "y"]],
        [["Initiate", "ack", "Initiate"]],
        [["ack", "ack", "ack"]],
        [["ack"] * 3] * 6,
        [["a", None], [None, "b"]],
        [["a", "b"], ["a", "b"]],
    ],
)
def test_every_missing_statistic_has_a_reason(data):
    report = ag.agreement_report(data, n_boot=50)
    assert unexplained(no_nan(report)) == []


def test_single_item_where_everyone_agrees():
    report = ag.agreement_report([["ack", "ack", "ack"]])
    no_nan(report)
    assert report.fleiss.kappa is None and report.alpha.alpha is None
    assert report.percent_agreement.proportion == 1.0


# --- a single category used by everyone -------------------------------------------------


def test_single_category_kappa_is_undefined_with_percent_agreement():
    data = [["ack"] * 3] * 12
    report = ag.agreement_report(data)
    no_nan(report)
    assert report.fleiss.kappa is None
    assert report.fleiss.undefined_reason == (
        "Every rating is 'ack', so chance agreement is 1 and kappa is undefined (0/0); "
        "observed agreement is 100%."
    )
    assert report.fleiss.observed_agreement == 1.0
    assert report.fleiss.per_category[0].proportion == 1.0
    assert report.percent_agreement.proportion == 1.0
    assert report.percent_agreement.unanimous == 1.0
    assert report.alpha.alpha is None and "'ack'" in report.alpha.undefined_reason
    assert report.ac1.ac1 is None and "one category" in report.ac1.undefined_reason
    assert (
        report.fleiss_ci.low is None and "all 1000 resamples" in report.fleiss_ci.undefined_reason
    )
    for pair in report.pairwise:
        assert pair.kappa is None and pair.observed_agreement == 1.0
        assert "percent agreement is 100%" in pair.undefined_reason


def test_single_category_with_the_codebook_list():
    """With the allowed categories, AC1 is defined (q = 3) and unused ones say so."""
    result = ag.fleiss_kappa([["ack"] * 3] * 4, categories=["ack", "Initiate", "query"])
    assert result.kappa is None
    ac1 = ag.gwet_ac1([["ack"] * 3] * 4, categories=["ack", "Initiate", "query"])
    assert ac1.ac1 == 1.0 and ac1.n_categories == 3


def test_unused_category_has_a_reason():
    result = ag.fleiss_kappa([["a", "b"], ["a", "a"]], categories=["a", "b", "c"])
    c = result.per_category[2]
    assert (
        c.kappa is None
        and c.undefined_reason == "Category 'c' was never used, so its kappa is undefined."
    )
    assert c.proportion == 0.0


def test_cohen_with_a_coder_who_used_one_category():
    result = ag.cohen_kappa([["a", "a"], ["a", "b"], ["a", "a"]])
    no_nan(result)
    assert result.kappa == pytest.approx(0.0)
    assert result.se0 is None and result.z is None and result.p_value is None
    assert "z-test is undefined" in result.undefined_reason


# --- missing ratings --------------------------------------------------------------------


def test_fleiss_uses_complete_items_and_alpha_uses_all():
    data = pd.DataFrame(
        {"ann": ["a", "a", "b", "b", None], "bob": ["a", "b", "b", None, "a"], "cy": list("aabba")},
        index=["u1", "u2", "u3", "u4", "u5"],
    )
    fleiss = ag.fleiss_kappa(data)
    assert fleiss.n_items == 3 and fleiss.items_left_out == ("u4", "u5")
    alpha = ag.krippendorff_alpha(data)
    assert alpha.n_items == 5
    theirs = krippendorff.alpha(
        np.array([[0, 0, 1, 1, np.nan], [0, 1, 1, np.nan, 0], [0, 0, 1, 1, 0]]),
        level_of_measurement="nominal",
    )
    assert alpha.alpha == pytest.approx(theirs, abs=1e-12)


def test_fleiss_on_selected_coders():
    data = pd.DataFrame({"ann": ["a", "b", "a"], "bob": ["a", "b", None], "cy": ["a", "a", "a"]})
    assert ag.fleiss_kappa(data, coders=["ann", "cy"]).items_left_out == ()
    assert ag.fleiss_kappa(data, coders=["ann", "bob"]).items_left_out == (2,)
    with pytest.raises(ValueError, match="Unknown coders 'dan'"):
        ag.fleiss_kappa(data, coders=["ann", "dan"])


def test_no_item_rated_by_every_coder():
    data = [["a", None], [None, "b"]]
    result = ag.fleiss_kappa(data)
    assert result.kappa is None
    assert (
        result.undefined_reason == "No item was rated by every coder, so Fleiss' kappa has no data."
    )
    assert ag.krippendorff_alpha(data).alpha is None
    assert (
        ag.cohen_kappa(data).undefined_reason == "No item was rated by both 'coder1' and 'coder2'."
    )
    no_nan(ag.agreement_report(data))


def test_one_coder_and_no_items():
    for data in ([["a"], ["b"]], np.empty((0, 3), dtype=object), [[None, None]]):
        report = ag.agreement_report(data)
        no_nan(report)
        assert report.fleiss.kappa is None and report.fleiss.undefined_reason
        assert report.alpha.alpha is None and report.alpha.undefined_reason
        assert report.ac1.ac1 is None and report.ac1.undefined_reason


# --- bad input --------------------------------------------------------------------------


def test_labels_outside_the_allowed_categories_are_named():
    with pytest.raises(
        ValueError,
        match=r"outside the allowed categories: 'Initate', 'ak' \(allowed: 'Initiate', 'ack'\)\.",
    ):
        ag.agreement_report(
            [["Initiate", "Initate"], ["ak", "ack"]], categories=["Initiate", "ack"]
        )


def test_bad_arguments_are_sentences():
    with pytest.raises(ValueError, match="confidence level must be a number between 0 and 1"):
        ag.agreement_report([["a", "b"]], ci=95)
    with pytest.raises(ValueError, match="positive integer"):
        ag.bootstrap_fleiss_ci([["a", "b"]], n_boot=0)
    with pytest.raises(ValueError, match="must be 2-D"):
        ag.fleiss_kappa(["a", "b", "c"])
    with pytest.raises(ValueError, match="Name the two coders"):
        ag.cohen_kappa([["a", "b", "c"]])
    with pytest.raises(ValueError, match="categories lists these labels more than once: 'a'"):
        ag.fleiss_kappa([["a", "b"]], categories=["a", "b", "a"])
    with pytest.raises(ValueError, match="must be a list of labels"):
        ag.fleiss_kappa([["a", "b"]], categories="ab")
    with pytest.raises(ValueError, match="non-negative whole numbers"):
        ag.fleiss_kappa_counts([[1.5, 0.5]])
    with pytest.raises(ValueError, match="must be square"):
        ag.cohen_kappa_table([[1, 2, 3]])


def test_sets_in_a_single_label_matrix_are_refused():
    with pytest.raises(ValueError, match="use sets_from_long or sets_from_wide"):
        ag.fleiss_kappa(np.array([[frozenset({"a"}), frozenset({"b"})]], dtype=object))
    cells = np.empty((1, 2), dtype=object)
    cells[0, 0], cells[0, 1] = ["a"], ["b"]
    with pytest.raises(ValueError, match="multi-select"):
        ag.fleiss_kappa(cells)


def test_duplicate_ratings_in_long_form_are_refused():
    long = pd.DataFrame(
        {"item": [1, 1, 1], "coder": ["ann", "bob", "ann"], "value": ["a", "b", "b"]}
    )
    with pytest.raises(
        ValueError, match=r"1 rating\(s\) repeat an \(item, coder\) pair, e.g. \(1, 'ann'\)"
    ):
        ag.from_long(long)


def test_missing_long_form_columns_are_named():
    with pytest.raises(ValueError, match="missing 'value'"):
        ag.from_long(pd.DataFrame({"item": [1], "coder": ["a"], "label": ["x"]}))
    with pytest.raises(ValueError, match="The item column has missing values"):
        ag.from_long(pd.DataFrame({"item": [None], "coder": ["a"], "value": ["x"]}))
