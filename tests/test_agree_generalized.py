"""`annotate agree` reports Gwet's generalized Fleiss' kappa for missing ratings and AC1's
standard error, in every format, through the CLI on a real project file.

The data: Krippendorff's (2011) 4-coder x 12-unit table with missing ratings
(../shared/refs/krippendorff2011_4obs_12units.csv; irrCAC's ``cac.raw4raters``), imported as
the labels of four coders on mental_model Q1, whose five codes (t1-t4, other) stand for the
table's values 1-5, so q = 5 as in the table.

Published values, Gwet's own: irrCAC's README "Computing agreement coefficients from raw
ratings" (github.com/kgwet/irrCAC; the same output is in the CRAN vignette "Calculating
Chance-corrected Agreement Coefficients"), and the doctest of irrCAC's Python port
(``irrCAC.raw.CAC(raw_4raters())``):

    fleiss.kappa.raw(cac.raw4raters)  coeff 0.76117  se 0.15302  conf.int (0.42438, 1)
                                      pa 0.81818  pe 0.23872  p.value 0.00042
    gwet.ac1.raw(cac.raw4raters)      coeff 0.77544  se 0.14295  conf.int (0.46081, 1)
                                      pa 0.81818  pe 0.19032  p.value 0.00021

Complete-case Fleiss' kappa (the 8 units all four coders rated): 0.6415 (issue 20).
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from agreement import multi_select_report, sets_from_wide
from annotate.store import Store
from tests.conftest import DEMO, SHARED
from tests.narrow import assert_reads_at
from tests.test_output_80 import matches_golden, run

TABLE = SHARED / "refs" / "krippendorff2011_4obs_12units.csv"
CODE_OF_VALUE = {"1": "t1", "2": "t2", "3": "t3", "4": "t4", "5": "other"}


def write_krippendorff_labels(db: Path, folder: Path) -> Path:
    """The table's ratings as mental_model Q1 labels of coders A-D on the first 12 actions."""
    if not TABLE.is_file():
        pytest.skip(f"{TABLE} (../shared reference tables) is not beside this checkout")
    with Store(db) as s:
        items = [r["id"] for r in s.actions.action_rows()][:12]
    with TABLE.open(newline="") as fh:
        table = list(csv.reader(fh))
    coders = table[0][1:]
    path = folder / "krippendorff2011.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["action_id", "coder", "question", "value", "other_text"])
        for item, row in zip(items, table[1:], strict=True):
            for coder, value in zip(coders, row[1:], strict=True):
                if value:
                    code = CODE_OF_VALUE[value]
                    writer.writerow(
                        [item, coder, "Q1", code, "a fifth kind" if code == "other" else ""]
                    )
    return path


@pytest.fixture
def krippendorff(cli, db_path, tmp_path) -> Path:
    assert cli("import", str(DEMO)).exit_code == 0
    labels = write_krippendorff_labels(db_path, tmp_path)
    r = cli("import-labels", str(labels), "--codebook", "mental_model")
    assert r.exit_code == 0, r.output
    return db_path


def test_json_gives_gwets_generalized_kappa_beside_the_complete_case_one(cli, krippendorff):
    out = json.loads(cli("agree", "--question", "Q1", "--format", "json").stdout)
    value = out["results"][0]["value"]
    complete, general = value["fleiss"], value["fleiss_generalized"]
    assert complete["n_items"] == 8 and round(complete["kappa"], 4) == 0.6415
    assert round(general["kappa"], 5) == 0.76117  # Gwet's published figure
    assert round(general["se"], 5) == 0.15302
    assert round(general["ci"]["low"], 5) == 0.42438 and general["ci"]["high"] == 1.0
    assert round(general["p_value"], 5) == 0.00042
    assert round(general["observed_agreement"], 5) == 0.81818
    assert round(general["expected_agreement"], 5) == 0.23872
    assert general["n_items"] == 12 and general["n_items_pairable"] == 11
    assert "every item with two or more ratings" in general["uses"]
    assert general["ci"]["method"].startswith("Gwet (2014)")
    ac1 = value["ac1"]
    assert round(ac1["ac1"], 5) == 0.77544 and round(ac1["se"], 5) == 0.14295
    assert round(ac1["ci"]["low"], 5) == 0.46081 and ac1["ci"]["high"] == 1.0
    assert round(ac1["p_value"], 5) == 0.00021 and ac1["n_items_rated"] == 12


def test_csv_names_the_generalized_kappa_and_ac1_with_se_and_interval(cli, krippendorff):
    value = json.loads(cli("agree", "--question", "Q1", "-f", "json").stdout)
    value = value["results"][0]["value"]
    rows = list(csv.DictReader(io.StringIO(cli("agree", "--question", "Q1", "-f", "csv").stdout)))
    by_statistic = {r["statistic"]: r for r in rows}
    general = by_statistic["fleiss_kappa_generalized"]
    # Gwet's SE is the one the interval uses: the ase column (se0 is the z-test's, under H0)
    assert float(general["estimate"]) == value["fleiss_generalized"]["kappa"]
    assert float(general["ase"]) == value["fleiss_generalized"]["se"] and general["se0"] == ""
    assert float(general["ci_low"]) == value["fleiss_generalized"]["ci"]["low"]
    assert float(general["ci_high"]) == 1.0
    assert general["n_items"] == "12" and general["band"] == "substantial"
    assert (
        "11 with two or more ratings" in general["note"]
        and "t = 4.9743 on 11 df" in (general["note"])
    )
    assert general["ci_method"].startswith("Gwet (2014)") and general["z"] == ""
    ac1 = by_statistic["gwet_ac1"]
    assert round(float(ac1["estimate"]), 5) == 0.77544
    assert round(float(ac1["ase"]), 5) == 0.14295
    assert round(float(ac1["ci_low"]), 5) == 0.46081 and float(ac1["ci_high"]) == 1.0
    assert "SE over 12 items rated (t on 11 df)" in ac1["note"]
    complete = by_statistic["fleiss_kappa"]
    assert complete["n_items"] == "8" and complete["ci_method"] == "BCa bootstrap over items"


def test_table_and_markdown_show_both_kappas_and_say_which_items(cli, krippendorff):
    table = run("agree", "--question", "Q1", "--db", str(krippendorff))
    assert_reads_at(table, 80)
    lines = [" ".join(line.split()) for line in table.splitlines()]
    assert any(
        line.startswith("Fleiss' kappa 0.641 - substantial; 8 of 12 items") for line in lines
    )
    assert any(
        line.startswith("generalized (Gwet) 0.761 0.424 to 1.000 substantial; SE 0.153; 11")
        for line in lines
    )
    assert any(
        line.startswith("Gwet's AC1 0.775 0.461 to 1.000 SE 0.143; 11 items") for line in lines
    )
    words = " ".join(table.split())
    assert "items with 2+ answers (12 rated)" in words
    assert "(the generalized kappa, alpha, AC1 and percent agreement use every item" in words
    assert "Generalized kappa and AC1 CIs: Gwet's (2014) SE, Student t with N - 1 df" in words
    md = cli("agree", "--question", "Q1", "-f", "markdown").stdout
    assert (
        "| generalized (Gwet) | 0.761 | 0.424 to 1.000 | substantial; SE 0.153; 11 items with "
        "2+ answers (12 rated) |" in md
    )
    assert "| Gwet's AC1 | 0.775 | 0.461 to 1.000 | SE 0.143; 11 items |" in md
    assert "Gwet's generalized Fleiss' kappa for missing ratings (Gwet, 2014)" in md
    assert "- Gwet, K. L. (2014). Handbook of inter-rater reliability" in md


def test_report_with_missing_ratings_golden_at_80_columns(cli, krippendorff, monkeypatch):
    monkeypatch.chdir(krippendorff.parent)
    out = run("agree", "--question", "Q1", "--db", krippendorff.name)
    matches_golden("agree_missing_ratings", out)


def test_a_run_stored_before_the_generalized_kappa_is_shown_without_it(cli, krippendorff):
    """Runs stored before Gwet's figures have no fleiss_generalized and no AC1 SE: every
    format shows them again as they were, without inventing the missing figures."""
    assert cli("agree", "--question", "Q1").exit_code == 0
    with sqlite3.connect(krippendorff) as conn:
        (results,) = conn.execute("SELECT results FROM agreement_runs WHERE id = 1").fetchone()
        old = json.loads(results)
        value = old["results"][0]["value"]
        del value["fleiss_generalized"]
        for key in ("se", "ci", "p_value", "n_items_rated"):
            del value["ac1"][key]
        conn.execute("UPDATE agreement_runs SET results = ? WHERE id = 1", (json.dumps(old),))
    table = cli("agree", "--run", "1")
    assert table.exit_code == 0, table.output
    assert "generalized" not in table.stdout and "Gwet's AC1" in table.stdout
    assert "Generalized kappa and AC1 CIs" not in table.stdout
    rows = list(csv.DictReader(io.StringIO(cli("agree", "--run", "1", "-f", "csv").stdout)))
    assert "fleiss_kappa_generalized" not in {r["statistic"] for r in rows}
    ac1 = next(r for r in rows if r["statistic"] == "gwet_ac1")
    assert ac1["ase"] == "" and ac1["ci_low"] == "" and round(float(ac1["estimate"]), 5) == 0.77544
    md = cli("agree", "--run", "1", "-f", "markdown")
    assert md.exit_code == 0 and "| Gwet's AC1 | 0.775 |  | 11 items |" in md.stdout


def test_a_yes_no_question_nobody_answered_beside_one_answered(cli, krippendorff):
    """Only Q1 has labels: Q4's reasons have no item, which used to stop the whole report."""
    r = cli("agree", "-f", "json")
    assert r.exit_code == 0, r.output
    by_q = {q["question"]: q for q in json.loads(r.stdout)["results"]}
    assert by_q["Q4"]["n_items"] == 0 and by_q["Q1"]["n_items"] == 12


def test_an_empty_answer_table_keeps_its_coders() -> None:
    answers = sets_from_wide(
        np.empty((0, 3), dtype=object), coders=["a", "b", "c"], items=[], categories=["x", "y"]
    )
    assert answers.codes.shape == (0, 3) and answers.coders == ("a", "b", "c")
    report = multi_select_report(answers)
    assert report.n_items == 0 and report.alpha_masi.alpha is None


@pytest.mark.parametrize("width", [50, 64])
def test_a_narrow_terminal_splits_no_word(cli, krippendorff, width):
    """Too narrow for the table's words: the rows are printed one after another, whole."""
    out = run("agree", "--question", "Q1", "--db", str(krippendorff), width=width)
    phrases = [
        "substantial; 8 of 12 items (every coder answered); no CI:",
        "The large-sample z-test of Fleiss' kappa needs at least 32 items",
        "Category 'other' was used only on items left out",
        "almost perfect; CI clipped to [-1, 1]",
    ]
    assert_reads_at(out, width, phrases)
    words = " ".join(out.split())
    assert "generalized (Gwet)" in words and "0.424 to 1.000" in words
    assert "substantial; SE 0.153; 11 items with 2+ answers (12 rated)" in words


def test_the_list_of_runs_shows_whole_names_at_80_columns(cli, krippendorff):
    assert cli("agree", "--question", "Q1").exit_code == 0
    assert cli("agree", "--question", "Q4").exit_code == 0
    out = run("agree", "--runs", "--db", str(krippendorff))
    assert_reads_at(out, 80, ["mental_model"])
    assert "…" not in out and "41" in out and "Q4" in out
