"""`annotate agree` after issue 21: --ci-method (BCa by default) named in every output, a
floor on --n-boot, and codebook questions declared ordinal (or interval, ratio)."""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path

import pytest

from annotate.codebook import find_codebook, parse_codebook
from annotate.errors import CodebookError
from annotate.store import Store
from tests.conftest import DEMO, REPO

CONFIDENCE = """\
name: confidence
title: Speaker confidence
version: '1'
questions:
  - id: sure
    prompt: How sure is the speaker?
    level: {level}
    options:
      - {{code: '{a}', label: Low, key: '1'}}
      - {{code: '{b}', label: Middle, key: '2'}}
      - {{code: '{c}', label: High, key: '3'}}
"""


@pytest.fixture
def demo(cli, db_path):
    assert cli("import", str(DEMO)).exit_code == 0
    r = cli("import-labels", str(REPO / "data" / "demo_labels.csv"), "--codebook", "traum")
    assert r.exit_code == 0, r.output
    return db_path


def _ordinal_project(cli, db_path: Path, tmp_path: Path, level: str = "ordinal") -> None:
    codes = ("low", "mid", "high") if level == "ordinal" else ("1", "2", "3")
    book = tmp_path / "confidence.yaml"
    book.write_text(CONFIDENCE.format(level=level, a=codes[0], b=codes[1], c=codes[2]))
    assert cli("import", str(DEMO)).exit_code == 0
    with Store(db_path) as s:
        ids = [r["id"] for r in s.actions.action_rows()][:60]
    rng = random.Random(1)
    rows = ["action_id,coder,question,value"]
    for i in ids:
        truth = rng.randrange(3)
        for coder in ("ana", "ben", "caro"):
            v = truth if rng.random() < 0.6 else max(0, min(2, truth + rng.choice([-1, 1])))
            rows.append(f"{i},{coder},sure,{codes[v]}")
    labels = tmp_path / "sure.csv"
    labels.write_text("\n".join(rows) + "\n")
    r = cli("import-labels", str(labels), "--codebook", str(book))
    assert r.exit_code == 0, r.output


def test_bca_is_the_default_and_every_output_names_the_method(cli, demo):
    out = json.loads(cli("agree", "-f", "json").stdout)
    assert out["settings"]["ci_method"] == "bca"
    ci = out["results"][0]["value"]["fleiss_ci"]
    assert ci["method"] == "BCa bootstrap over items" and ci["n_valid"] == 1000
    assert (round(ci["low"], 3), round(ci["high"], 3)) == (0.534, 0.630)

    percentile = json.loads(cli("agree", "-f", "json", "--ci-method", "percentile").stdout)
    assert percentile["settings"]["ci_method"] == "percentile"
    ci = percentile["results"][0]["value"]["fleiss_ci"]
    assert ci["method"] == "percentile bootstrap over items"
    assert (round(ci["low"], 3), round(ci["high"], 3)) == (0.530, 0.625)

    table = cli("agree").stdout
    assert (
        "Fleiss' kappa CI: BCa bootstrap over items, 1,000 resamples (1,000 usable), seed 0."
        in table
    )
    markdown = cli("agree", "-f", "markdown", "--ci-method", "percentile").stdout
    assert "95% percentile bootstrap confidence interval over items" in markdown
    assert "Fleiss' kappa CI: percentile bootstrap over items, 1,000 resamples" in markdown
    assert (
        "bias-corrected and accelerated (BCa; Efron, 1987)" in cli("agree", "-f", "markdown").stdout
    )

    rows = list(csv.DictReader(io.StringIO(cli("agree", "-f", "csv").stdout)))
    by = {(r["statistic"], r["subject"]): r for r in rows}
    assert by[("fleiss_kappa", "")]["ci_method"] == "BCa bootstrap over items"
    assert by[("cohen_kappa", "ana|ben")]["ci_method"] == "asymptotic"
    assert by[("krippendorff_alpha", "nominal")]["estimate"]

    runs = json.loads(cli("agree", "--runs", "-f", "json").stdout)
    stored = cli("agree", "--run", str(runs[-1]["id"])).stdout  # a stored run says it too
    assert "Fleiss' kappa CI: " in stored and "over items, 1,000 resamples" in stored


def test_too_few_resamples_are_refused(cli, demo):
    r = cli("agree", "--n-boot", "5")
    assert r.exit_code != 0
    assert "--n-boot must be at least 200 for a 95% interval" in r.output
    assert (
        "--n-boot must be at least 100 for a 90% interval"
        in cli("agree", "--n-boot", "99", "--ci", "0.9").output
    )
    few = json.loads(cli("agree", "-f", "json", "--n-boot", "300").stdout)
    note = few["results"][0]["value"]["fleiss_ci"]["note"]
    assert note.startswith("Only 300 usable resamples: Efron & Tibshirani (1993) recommend")
    bad = cli("agree", "--ci-method", "basic")
    assert bad.exit_code != 0 and "'basic' is not one of 'bca', 'percentile'" in bad.output


def test_an_ordinal_question_reports_its_level(cli, db_path, tmp_path):
    _ordinal_project(cli, db_path, tmp_path)
    out = json.loads(cli("agree", "-f", "json").stdout)
    q = out["results"][0]
    assert q["level"] == "ordinal"
    value = q["value"]
    assert value["level"] == "ordinal" and value["alpha"]["metric"] == "ordinal"
    assert value["alpha_nominal"]["metric"] == "nominal"
    assert value["alpha"]["alpha"] > value["alpha_nominal"]["alpha"]  # near misses count
    assert [p["weights"] for p in value["pairwise_weighted"]] == ["linear"] * 3
    table = cli("agree").stdout
    assert "ordinal; 60 items" in table and "nominal alpha" in table
    assert "Level: ordinal (ranks in the codebook's option order): ordinal alpha" in table
    assert "Pairwise weighted Cohen's kappa (linear weights, ordinal)" in table
    markdown = cli("agree", "-f", "markdown").stdout
    assert "Krippendorff's alpha for ordinal (sure) data" in markdown
    assert "weighted (Cohen, 1968)" in markdown
    rows = list(csv.DictReader(io.StringIO(cli("agree", "-f", "csv").stdout)))
    assert {r["subject"] for r in rows if r["statistic"] == "krippendorff_alpha"} == {
        "ordinal",
        "nominal",
    }
    assert sum(r["statistic"] == "weighted_kappa" for r in rows) == 3


def test_an_interval_question_uses_quadratic_weights(cli, db_path, tmp_path):
    _ordinal_project(cli, db_path, tmp_path, level="interval")
    value = json.loads(cli("agree", "-f", "json").stdout)["results"][0]["value"]
    assert value["alpha"]["metric"] == "interval"
    assert [p["weights"] for p in value["pairwise_weighted"]] == ["quadratic"] * 3


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"level": "interval"}, "level interval: option code 'low' is not a number"),
        ({"level": "likert"}, "Input should be 'nominal', 'ordinal', 'interval' or 'ratio'"),
        ({"level": "ordinal", "kind": "multi"}, "level ordinal needs kind single"),
        ({"level": "ordinal", "allow_other": "true"}, "'other' has no rank"),
    ],
)
def test_the_level_is_validated(change, message):
    text = CONFIDENCE.format(level=change["level"], a="low", b="mid", c="high")
    for key in ("kind", "allow_other"):
        if key in change:
            text = text.replace("    level:", f"    {key}: {change[key]}\n    level:")
    with pytest.raises(CodebookError) as err:
        parse_codebook(text, "confidence.yaml")
    assert message in str(err.value)


def test_nominal_is_the_default_and_keeps_every_hash():
    for name in ("traum", "mental_model", "hcrc_moves"):
        book = find_codebook(name).codebook
        assert all(q.level == "nominal" for q in book.questions)
    assert find_codebook("traum").codebook.version_hash == "df387c5b9632"
    ordinal = parse_codebook(CONFIDENCE.format(level="ordinal", a="l", b="m", c="h"), "c.yaml")
    nominal = parse_codebook(CONFIDENCE.format(level="nominal", a="l", b="m", c="h"), "c.yaml")
    assert ordinal.version_hash != nominal.version_hash
    assert ordinal.questions[0].level == "ordinal"


def test_a_code_used_only_on_items_left_out_says_so(cli, db_path, tmp_path):
    """Three coders; one of them also rated a 13th item, with a code used nowhere else."""
    assert cli("import", str(DEMO)).exit_code == 0
    with Store(db_path) as s:
        items = [r["id"] for r in s.actions.action_rows()][:13]
    rows = ["action_id,coder,value"]
    for k, item in enumerate(items[:12]):
        for coder in ("x", "y", "z"):
            rows.append(f"{item},{coder},{'Initiate' if (k + len(coder)) % 3 else 'Continue'}")
    rows.append(f"{items[12]},x,Cancel")
    path = tmp_path / "three.csv"
    path.write_text("\n".join(rows) + "\n")
    assert cli("import-labels", str(path), "--codebook", "traum").exit_code == 0
    value = json.loads(cli("agree", "-f", "json").stdout)["results"][0]["value"]
    per = {c["category"]: c for c in value["fleiss"]["per_category"]}
    assert per["Cancel"]["undefined_reason"] == (
        "Category 'Cancel' was used only on items left out (not rated by every coder), so "
        "its kappa is undefined."
    )
    assert per["Repair"]["undefined_reason"] == (
        "Category 'Repair' was never used, so its kappa is undefined."
    )
    assert "used only on items left out" in cli("agree").stdout
