"""ALMANAC's analyses in `annotate report` (issue 35): the participants' own reports as a
label source, Figure 4 (both panels, per condition) and Table 8, on the demo's
self-annotation data, every number recomputed here from `annotate export`."""

from __future__ import annotations

import io
import math
from pathlib import Path

import pandas as pd
import pytest

from annotate.analysis.figure4 import grounded_codes
from annotate.analysis.proportions import wilson
from annotate.codebook import find_codebook, parse_codebook
from tests.conftest import DEMO, REPO
from tests.test_analysis_support import DEMO_LABELS, mental_model_rows, write_csv

SELF_REPORTS = REPO / "data" / "demo_self_reports.jsonl"
MAPPING = REPO / "data" / "demo_self_report_mapping.yaml"
GROUNDED = {"Q1": "t3", "Q2": "p1", "Q3": "r1"}


@pytest.fixture
def almanac(cli, db_path) -> Path:
    """The demo with majority gold on traum, the self-reports on mental_model and a session
    split (one test session per condition)."""
    assert cli("import", str(DEMO)).exit_code == 0
    assert cli("import-labels", str(DEMO_LABELS), "--codebook", "traum").exit_code == 0
    assert cli("adjudicate", "--codebook", "traum", "--majority-only").exit_code == 0
    r = cli("import-labels", str(SELF_REPORTS), "--codebook", "mental_model", "--mapping",
            str(MAPPING))  # fmt: skip
    assert r.exit_code == 0, r.output
    r = cli("split-sessions", "--test", "1", "--per", "condition", "--name", "main")
    assert r.exit_code == 0, r.output
    return db_path


def exported(cli, *args: str) -> pd.DataFrame:
    r = cli("export", *args)
    assert r.exit_code == 0, r.output
    return pd.read_csv(io.StringIO(r.stdout), dtype={"value": str})


def own_reports_from_export(cli) -> pd.DataFrame:
    """One row per action with its own actor's answers (a column per question), its
    condition, split part and position in its session, from the exports alone."""
    actions = exported(cli, "--what", "actions", "--split", "main")
    actions = actions.sort_values(["session", "seq", "id"], kind="stable")
    actions["position"] = actions.groupby("session").cumcount()
    actions["length"] = actions.groupby("session")["id"].transform("size")
    labels = exported(cli, "--what", "labels", "--codebook", "mental_model")
    own = labels[labels["coder"] == "self:" + labels["participant"]]
    wide = own.pivot(index="action_id", columns="question", values="value")
    return wide.join(actions.set_index("id")[
        ["session", "condition", "split", "position", "length"]
    ])  # fmt: skip


def test_own_reports_are_the_default_source_and_each_action_takes_its_actors(
    cli, almanac, tmp_path
) -> None:
    out = tmp_path / "r"
    r = cli("report", "--codebook", "traum", "--out", str(out))
    assert r.exit_code == 0, r.output
    # Tom's actions take Tom's report, Maya's Maya's: each contributes all their own actions
    assert (
        "mental_model: each action's own report, by the coder self:<its actor> (self:Leo "
        "(22 actions), self:Maya (23 actions), self:Priya (34 actions), self:Tom (28 actions)) "
        "[its only labels are own reports]"
    ) in r.stdout
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "each action&#x27;s own report" in html
    # a codebook whose only labels are own reports is a report's codebook as any other
    r = cli("report", "--codebook", "mental_model", "--out", str(tmp_path / "mm"))
    assert r.exit_code == 0, r.output
    shares = pd.read_csv(tmp_path / "mm" / "mental_model_Q1_by_condition.csv").set_index("code")
    wide = own_reports_from_export(cli)
    expected = pd.crosstab(wide["Q1"], wide["condition"], normalize="columns")
    for code in expected.index:
        for condition in expected.columns:
            assert float(shares.loc[code, condition]) == pytest.approx(
                expected.loc[code, condition]
            )


def test_source_own_reports_beside_gold(cli, almanac, db_path, tmp_path) -> None:
    from annotate.store import Store

    with Store(db_path) as store:
        rows = mental_model_rows(store, {})
    assert cli("import-labels", str(write_csv(tmp_path / "mm.csv", rows)), "--codebook",
               "mental_model").exit_code == 0  # fmt: skip
    r = cli("report", "--codebook", "traum", "--out", str(tmp_path / "a"))
    assert "mental_model: labels by gold (343 actions)" in r.stdout
    r = cli("report", "--codebook", "traum", "--source", "own-reports", "--out",
            str(tmp_path / "b"))  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "self:Tom (28 actions)) [--source own-reports]" in r.stdout
    left = pd.read_csv(tmp_path / "b" / "figure4_left.csv")
    gold = exported(cli, "--what", "gold", "--codebook", "traum")["action_id"]
    wide = own_reports_from_export(cli)
    assert left["n"].sum() == wide.index.isin(set(gold)).sum()  # own reports on gold acts
    r = cli("report", "--codebook", "traum", "--source", "own-report", "--out", str(tmp_path))
    assert r.exit_code != 0 and "--source: unknown source 'own-report'" in r.output


def test_figure4_and_table8_recomputed_from_export(cli, almanac, tmp_path) -> None:
    out = tmp_path / "r"
    r = cli("report", "--codebook", "traum", "--split", "main", "--out", str(out))
    assert r.exit_code == 0, r.output
    wide = own_reports_from_export(cli)
    gold = exported(cli, "--what", "gold", "--codebook", "traum")
    wide["act"] = wide.index.map(gold.set_index("action_id")["value"])

    # left: Q4 = yes within each act, per condition, with n and a Wilson interval
    left = pd.read_csv(out / "figure4_left.csv").set_index(["act", "condition"])
    q4 = wide[wide["Q4"].notna() & wide["act"].notna()]
    expected = q4.assign(hit=q4["Q4"] == "yes").groupby(["act", "condition"])["hit"]
    assert set(left.index) == set(expected.size().index)
    assert set(left.index.get_level_values("condition")) == {"hidden", "visible"}
    for key, n in expected.size().items():
        k = int(expected.sum()[key])
        row = left.loc[key]
        assert (row["n"], row["grounded"]) == (n, k)
        assert row["share"] == pytest.approx(k / n)
        low, high = wilson(k, n)
        assert (row["ci_low"], row["ci_high"]) == (pytest.approx(low), pytest.approx(high))

    # right: three lines (Q1 t3, Q2 p1, Q3 r1) per condition over deciles
    right = pd.read_csv(out / "figure4_right.csv")
    assert set(zip(right["question"], right["codes"], strict=True)) == set(GROUNDED.items())
    assert set(right["condition"]) == {"hidden", "visible"} and len(right) == 3 * 2 * 10
    wide["decile"] = wide["position"] * 10 // wide["length"]
    for row in right.itertuples():
        i = int(row.progress.split("-")[0]) // 10
        cell = wide[(wide["condition"] == row.condition) & (wide["decile"] == i)]
        cell = cell[cell[row.question].notna()]
        assert row.n == len(cell)
        assert row.grounded == int((cell[row.question] == GROUNDED[row.question]).sum())

    # Table 8: per split part x condition, session-level mean and SD of each code's share
    table = pd.read_csv(out / "table8_mental_model.csv", dtype={"code": str})
    table = table.set_index(["question", "code"])
    for question in ("Q1", "Q2", "Q3", "Q4"):
        answered = wide[wide[question].notna()]
        per_session = pd.crosstab(answered["session"], answered[question], normalize="index")
        facts = answered.groupby("session")[["condition", "split"]].first()
        for condition in ("all", "hidden", "visible"):
            for part in ("all", "train", "test"):
                members = facts.index[
                    ((facts["condition"] == condition) | (condition == "all"))
                    & ((facts["split"] == part) | (part == "all"))
                ]
                column = f"{condition}, {part}"
                assert table.loc[(question, "sessions"), f"{column} mean"] == len(members)
                for code in per_session.columns:
                    values = per_session.loc[members, code]
                    got = table.loc[(question, code)]
                    if len(values) == 0:
                        assert math.isnan(got[f"{column} mean"])
                        continue
                    assert got[f"{column} mean"] == pytest.approx(values.mean())
                    if len(values) > 1:
                        assert got[f"{column} sd"] == pytest.approx(values.std(ddof=1))
                    else:
                        assert math.isnan(got[f"{column} sd"])
    # charts: both panels and a Table 8 chart per question
    pngs = {p.name.split("_", 1)[1] for p in out.glob("*.png")}
    assert {"figure4_left.png", "figure4_right.png"} <= pngs
    assert {f"table8_mental_model_{q}.png" for q in ("Q1", "Q2", "Q3", "Q4")} <= pngs
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "the ALMANAC defaults" in html and "Q1 t3, Q2 p1, Q3 r1, Q4 yes" in html


def test_progress_bins(cli, almanac, tmp_path) -> None:
    r = cli("report", "--codebook", "traum", "--progress-bins", "4", "--out", str(tmp_path))
    assert r.exit_code == 0, r.output
    right = pd.read_csv(tmp_path / "figure4_right.csv")
    assert list(right["progress"].unique()) == ["0-25%", "25-50%", "50-75%", "75-100%"]


BOOK = """\
name: mm
title: MM
version: "1"
questions:
  - id: Q1
    prompt: Goal
    grounded: [b]
    options:
      - {code: a, label: A, key: "1"}
      - {code: b, label: B, key: "2"}
  - id: Q4
    prompt: Same page
    kind: yes_no_reasons
    options:
      - {code: n1, label: N1, key: "1"}
"""


def test_grounded_codes_declared_in_the_codebook_else_almanacs() -> None:
    declared = grounded_codes(parse_codebook(BOOK, "mm.yaml"))
    assert declared is not None and declared.declared and declared.codes == {"Q1": ("b",)}
    assert "(declared in codebook mm): Q1 b" in declared.describe()
    assert declared.alignment is None  # Q4 declares nothing, so there is no left panel
    survey = grounded_codes(find_codebook("mental_model_self").codebook)
    assert survey is not None and not survey.declared
    assert survey.codes == {"Q1": ("t3",), "Q2": ("p1",), "Q3": ("r1",), "Q4": ("yes",)}
    assert "ALMANAC defaults" in survey.describe()
    # a grounded code must be a code of the question; declaring changes the version
    with pytest.raises(Exception, match="grounded: 'c' is not a code"):
        parse_codebook(BOOK.replace("grounded: [b]", "grounded: [c]"), "mm.yaml")
    plain = parse_codebook(BOOK.replace("    grounded: [b]\n", ""), "mm.yaml")
    assert plain.version_hash != parse_codebook(BOOK, "mm.yaml").version_hash


def test_wilson_interval() -> None:
    # Wilson (1927) / Newcombe (1998) worked example: 15 of 148 -> 0.0624 .. 0.1605
    low, high = wilson(15, 148)
    assert (round(low, 4), round(high, 4)) == (0.0624, 0.1605)
    assert wilson(0, 0) == (None, None)
    assert wilson(0, 10)[0] == 0.0 and wilson(10, 10)[1] == pytest.approx(1.0)
