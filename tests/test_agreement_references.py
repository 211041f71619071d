"""Published worked examples, reproduced from the read-only tables in ../shared/refs.

Each expected value is quoted in ../shared/refs/README.md with its source. The tables are
read in place and never copied into this repository.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import agreement as ag

REFS = Path(__file__).resolve().parents[1].parent / "shared" / "refs"

pytestmark = pytest.mark.skipif(
    not REFS.is_dir(),
    reason=f"the published reference tables are not available at {REFS}",
)


def read(name: str) -> pd.DataFrame:
    return pd.read_csv(REFS / name, index_col=0, dtype=str)


def approx(value: float, abs: float = 1e-6):
    return pytest.approx(value, abs=abs)


def counts_to_labels(counts: pd.DataFrame) -> pd.DataFrame:
    """Expand an items x categories count table into items x raters labels."""
    rows = []
    for _, row in counts.astype(int).iterrows():
        rows.append([c for c, n in row.items() for _ in range(n)])
    return pd.DataFrame(rows, index=counts.index)


def crosstab_to_labels(table: pd.DataFrame) -> pd.DataFrame:
    """Expand a rater-1 x rater-2 cross-tabulation into items x 2 labels."""
    pairs = [
        (str(r), str(c))
        for r, row in table.astype(int).iterrows()
        for c, n in row.items()
        for _ in range(n)
    ]
    return pd.DataFrame(pairs, columns=["rater1", "rater2"])


# --- Fleiss (1971): 30 patients, 6 psychiatrists, 5 diagnoses -------------------------


@pytest.fixture(scope="module")
def diagnoses() -> pd.DataFrame:
    return read("fleiss1971_diagnoses_raw.csv")


def test_fleiss_1971_kappa_se0_and_z(diagnoses):
    """30 items is below the 2k² = 50 items the z-test needs by default (Cicchetti &
    Fleiss 1977) for 5 categories; min_items_z=0 reproduces the published test."""
    default = ag.fleiss_kappa(diagnoses)
    assert default.kappa == approx(0.4302445)
    assert default.se0 is None and default.z is None and default.p_value is None
    assert "needs at least 50 items" in default.undefined_reason
    assert "got 30" in default.undefined_reason
    result = ag.fleiss_kappa(diagnoses, min_items_z=0)
    assert round(result.kappa, 3) == 0.430
    assert result.kappa == approx(0.4302445)
    assert result.observed_agreement == approx(0.5555556)
    assert result.expected_agreement == approx(0.2199383)
    assert result.se0 == approx(0.02437393, abs=1e-8)
    assert result.z == approx(17.65183, abs=1e-5)
    assert result.p_value < 1e-60
    assert result.n_items == 30 and result.n_coders == 6 and result.items_left_out == ()
    assert result.band == "moderate"
    assert result.undefined_reason is None


def test_fleiss_1971_per_category(diagnoses):
    result = ag.fleiss_kappa(diagnoses)
    assert [c.category for c in result.per_category] == ["1", "2", "3", "4", "5"]
    expected = [0.2447552, 0.2447552, 0.5200000, 0.4711273, 0.5661178]
    assert [c.kappa for c in result.per_category] == pytest.approx(expected, abs=1e-6)
    for category in result.per_category:
        assert category.se0 == approx(0.04714045, abs=1e-8)
        assert category.z == approx(category.kappa / 0.04714045207910317)


def test_fleiss_1971_from_the_count_table():
    counts = read("fleiss1971_counts_30x5.csv").astype(int)
    result = ag.fleiss_kappa_counts(counts, min_items_z=0)
    assert result.kappa == approx(0.4302445)
    assert result.se0 == approx(0.02437393, abs=1e-8)
    assert result.categories == tuple(counts.columns)
    assert [c.kappa for c in result.per_category] == pytest.approx(
        [0.2447552, 0.2447552, 0.52, 0.4711273, 0.5661178], abs=1e-6
    )


def test_fleiss_1971_alpha_and_ac1(diagnoses):
    assert round(ag.krippendorff_alpha(diagnoses).alpha, 4) == 0.4334
    assert ag.krippendorff_alpha(diagnoses).alpha == approx(0.4334098)
    assert round(ag.gwet_ac1(diagnoses).ac1, 4) == 0.4479
    assert ag.gwet_ac1(diagnoses).ac1 == approx(0.4478845)


def test_fleiss_1971_first_15_rows(diagnoses):
    first = diagnoses.iloc[:15]
    assert ag.fleiss_kappa(first).kappa == approx(0.4139265)
    assert ag.gwet_ac1(first).ac1 == approx(0.4448007)
    assert ag.krippendorff_alpha(first).alpha == approx(0.4204384)


def test_fleiss_1971_report(diagnoses):
    report = ag.agreement_report(diagnoses)
    assert report.fleiss.kappa == approx(0.4302445)
    assert report.alpha.alpha == approx(0.4334098)
    assert report.ac1.ac1 == approx(0.4478845)
    assert report.percent_agreement.proportion == approx(0.5555556)
    assert report.fleiss_ci.low < report.fleiss.kappa < report.fleiss_ci.high
    assert len(report.pairwise) == 15


def test_fleiss_1971_long_form_gives_the_same_kappa(diagnoses):
    long = diagnoses.reset_index().melt(id_vars="subject", var_name="coder", value_name="value")
    long = long.rename(columns={"subject": "item"})
    matrix = ag.from_long(long)
    assert matrix.n_items == 30 and matrix.coders == tuple(diagnoses.columns)
    assert ag.fleiss_kappa(long).kappa == approx(0.4302445)


# --- Wikipedia "Fleiss' kappa": 10 subjects, 14 raters --------------------------------


def test_wikipedia_example_from_counts_and_from_labels():
    counts = read("wikipedia_fleiss_10x5_counts.csv").astype(int)
    result = ag.fleiss_kappa_counts(counts)
    assert round(result.kappa, 3) == 0.210
    assert result.kappa == approx(0.2099307)
    assert result.observed_agreement == approx(0.3780220)
    assert result.expected_agreement == approx(0.2127551)
    assert ag.fleiss_kappa(counts_to_labels(counts)).kappa == approx(0.2099307)


# --- Krippendorff (2011): 4 observers, 12 units, missing ratings ----------------------


def test_krippendorff_2011_nominal_alpha():
    data = read("krippendorff2011_4obs_12units.csv")
    result = ag.krippendorff_alpha(data)
    assert round(result.alpha, 3) == 0.743
    assert result.alpha == approx(0.7434211)
    assert result.n_items == 11  # unit 12 has a single rating and does not count
    assert result.n_items_unpairable == 1
    assert result.n_values == 40


@pytest.mark.parametrize(
    ("level", "published", "exact"),
    [("ordinal", 0.815, 0.8153875), ("interval", 0.849, 0.8491071), ("ratio", 0.797, 0.7974028)],
)
def test_krippendorff_2011_levels(level, published, exact):
    """Krippendorff (2011), sections C-E: the same 4 observers x 12 units at every level."""
    data = read("krippendorff2011_4obs_12units.csv")
    result = ag.krippendorff_alpha(data, level=level)
    assert round(result.alpha, 3) == published
    assert result.alpha == approx(exact, abs=5e-8)
    assert result.metric == level and result.n_items == 11 and result.n_values == 40


# --- SAS PROC FREQ: two raters, 3 categories -------------------------------------------


def test_sas_cohen_kappa_from_the_table():
    table = read("sas_cohen_3x3.csv").astype(int)
    result = ag.cohen_kappa_table(table)
    assert round(result.kappa, 4) == 0.4842
    assert round(result.ase, 4) == 0.1380
    assert (round(result.ci.low, 4), round(result.ci.high, 4)) == (0.2137, 0.7547)
    assert round(result.se0, 4) == 0.1484
    assert round(result.z, 4) == 3.2626
    assert result.ci.method == "asymptotic" and result.ci.level == 0.95


def test_sas_cohen_kappa_from_labels_and_fleiss_equals_scott():
    labels = crosstab_to_labels(read("sas_cohen_3x3.csv"))
    result = ag.cohen_kappa(labels)
    assert result.kappa == approx(0.4841629)
    assert result.ase == approx(0.1380136)
    assert result.n_items == 19
    assert result.confusion.to_array().tolist() == [[0, 4, 1], [0, 8, 0], [0, 1, 5]]
    assert ag.fleiss_kappa(labels).kappa == approx(0.4532374)


def test_sas_cohen_ci_at_another_level():
    result = ag.cohen_kappa_table(read("sas_cohen_3x3.csv").astype(int), ci=0.90)
    half = 1.6448536269514722 * result.ase
    assert result.ci.low == approx(result.kappa - half, abs=1e-12)
    assert result.ci.high == approx(result.kappa + half, abs=1e-12)
    assert np.isclose(result.ci.level, 0.90)
