"""`annotate agree` on the demo data (3 coders on Traum), yes/no questions with reasons
(mental_model Q4), the store's migration 3, and what the report says on edge cases."""

from __future__ import annotations

import csv
import io
import json
import random
import sqlite3
import subprocess
import sys

import pandas as pd
import pytest

import agreement
from annotate.codebook import Answer, find_codebook
from annotate.store import Store
from annotate.store.migrations import m001_initial, m002_llm
from tests.conftest import DEMO, REPO

TRAUM = find_codebook("traum").codebook.questions[0].codes
MENTAL = find_codebook("mental_model").codebook


@pytest.fixture
def demo(cli, db_path):
    assert cli("import", str(DEMO)).exit_code == 0
    r = cli("import-labels", str(REPO / "data" / "demo_labels.csv"), "--codebook", "traum")
    assert r.exit_code == 0, r.output
    return db_path


def test_demo_report_matches_the_published_description(cli, demo) -> None:
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    out = json.loads(cli("agree", "-f", "json").stdout)
    assert out["codebook"] == "traum" and out["coders"] == ["ana", "ben", "caro"]
    assert out["sample"] is None and out["n_labels"] == 1029
    value = out["results"][0]["value"]
    labels = pd.read_csv(REPO / "data" / "demo_labels.csv")
    wide = labels.pivot(index="action_id", columns="coder", values="value")
    table, _ = aggregate_raters(wide.to_numpy())
    assert value["fleiss"]["kappa"] == pytest.approx(fleiss_kappa(table), abs=1e-12)
    # data/README.md: alpha 0.58, pairwise Cohen 0.56-0.60, all three agree on 53%
    assert round(value["alpha"]["alpha"], 2) == 0.58
    assert [round(p["kappa"], 2) for p in value["pairwise"]] == [0.60, 0.56, 0.58]
    assert round(value["percent_agreement"]["unanimous"], 2) == 0.53
    assert value["fleiss"]["band"] == "moderate" and value["items_left_out"] == []


def test_demo_table_reads_in_80_columns(demo) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "annotate", "agree", "--db", str(demo)],
        capture_output=True,
        text=True,
        env={"COLUMNS": "80", "NO_COLOR": "1", "PATH": ""},
        check=True,
    )
    lines = out.stdout.splitlines()
    assert max(map(len, lines)) <= 80
    assert lines[0] == "Codebook traum df387c5b9632, every labelled item, coders ana, ben, caro."
    assert "Fleiss' kappa          0.580   0.534 to 0.630   moderate; 343 items" in out.stdout
    assert out.stderr.startswith("defaults: codebook traum (the only one with labels)")


def test_demo_disagreements_read_in_80_columns(demo) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "annotate", "agree", "--disagreements", "--context", "0",
         "--db", str(demo)],
        capture_output=True,
        text=True,
        env={"COLUMNS": "80", "NO_COLOR": "1", "PATH": ""},
        check=True,
    )
    lines = [line.rstrip() for line in out.stdout.splitlines()]
    assert max(map(len, out.stdout.splitlines())) <= 80
    assert lines[:12] == [
        "Codebook traum, every labelled item, coders ana, ben, caro.",
        "",
        "Coders differ on act: 160 items",
        "",
        "   #   Item       Text               ana            ben            caro",
        " " + "─" * 78,
        "   1   019aa7c6   below the crane    Acknowledge    Acknowledge    Continue",
        "                  bay",
        "   2   02ab11cf   [clears the        other          other          Initiate",
        "                  whole canvas]      (set-up        (set-up",
        "                                     click)         click)",
        "   3   02c5f49a   until you're       Repair         Initiate       Repair",
    ]
    assert "Fleiss" not in out.stdout and "stored" not in out.stdout
    with Store(demo) as s:
        assert s.db.query("SELECT count(*) FROM agreement_runs")[0][0] == 0


def test_the_same_labels_again_do_not_store_a_duplicate_run(cli, demo) -> None:
    def count() -> int:
        with Store(demo) as s:
            return s.db.query("SELECT count(*) FROM agreement_runs")[0][0]

    first = cli("agree")
    assert first.exit_code == 0 and "run 1 stored: 1029 labels, sha256 " in first.stdout
    again = cli("agree")
    assert again.exit_code == 0
    assert again.stdout.splitlines()[-1].startswith(
        "same as run 1, nothing new stored: 1029 labels, sha256 "
    )
    assert again.stdout.replace("same as run 1, nothing new", "run 1") == first.stdout
    as_json = cli("agree", "-f", "json")
    assert json.loads(as_json.stdout)["run_id"] == 1
    assert as_json.stderr.startswith("same as run 1, nothing new stored")
    assert count() == 1
    other = cli("agree", "--ci", "0.9")  # other settings: another run
    assert "run 2 stored" in other.stdout and count() == 2
    with Store(demo) as s:  # a changed label: another run, then that one again
        first = s.db.query("SELECT action_id, coder FROM labels ORDER BY id LIMIT 1")[0]
        traum = find_codebook("traum").codebook
        s.labels.save_answer(first[0], traum, "act", first[1], Answer("Repair"))
    assert "run 3 stored" in cli("agree").stdout
    assert "same as run 3, nothing new stored" in cli("agree").stdout
    md = cli("agree", "-f", "markdown").stdout
    assert "<!-- annotate agree run 3: 1029 labels" in md and count() == 3


def _mental_labels(db_path, tmp_path, n: int = 60) -> list[str]:
    """Three coders answer Q1 and Q4 of the mental-model survey on n demo actions."""
    with Store(db_path) as s:
        ids = [r["id"] for r in s.actions.action_rows()][:n]
    rng = random.Random(5)
    reasons = [o.code for o in MENTAL.question("Q4").options]
    rows = ["action_id,coder,question,value,codes,other_text,note"]
    for k, i in enumerate(ids):
        truth = rng.choice(["yes", "no"])
        why = sorted(rng.sample(reasons, rng.randint(1, 2)))
        for c in ("ana", "ben", "caro"):
            if c == "caro" and k % 10 == 0:
                continue  # caro has not reached these yet
            q1 = rng.choice(["t1", "t2", "t3", "t4"])
            rows.append(f"{i},{c},Q1,{q1},,,")
            yes = truth if rng.random() < 0.8 else ("no" if truth == "yes" else "yes")
            codes = why if rng.random() < 0.6 else sorted(rng.sample(reasons, 1))
            if yes == "no" and c == "ben" and k % 7 == 0:
                codes = [*codes, "other"]
                rows.append(f"{i},{c},Q4,no,{';'.join(codes)},tool froze,")
            else:
                rows.append(f"{i},{c},Q4,{yes},{';'.join(codes) if yes == 'no' else ''},,")
    path = tmp_path / "mental.csv"
    path.write_text("\n".join(rows) + "\n")
    return [str(path), *ids]


def test_yes_no_reasons_question_has_value_and_reasons_figures(cli, demo, tmp_path) -> None:
    path, *_ = _mental_labels(demo, tmp_path)
    assert cli("import-labels", path, "--codebook", "mental_model").exit_code == 0
    r = cli("agree", "--codebook", "mental_model", "--question", "Q4", "-f", "json")
    assert r.exit_code == 0, r.output
    q = json.loads(r.stdout)["results"][0]
    assert q["question"] == "Q4" and q["kind"] == "yes_no_reasons" and q["n_items"] == 60
    labels = pd.read_csv(path, dtype=str, keep_default_na=False)
    q4 = labels[labels.question == "Q4"]
    wide = q4.pivot(index="action_id", columns="coder", values="value")
    ref = agreement.agreement_report(agreement.from_wide(wide), ["yes", "no"])
    assert q["value"]["fleiss"]["kappa"] == pytest.approx(ref.fleiss.kappa)
    assert q["value"]["alpha"]["alpha"] == pytest.approx(ref.alpha.alpha)
    assert q["value"]["items_used"] == 54
    # reasons: compared among the coders who answered 'no' (a 'yes' has none)
    sets = q4.assign(
        value=[
            frozenset(c.split(";")) if v == "no" else None
            for v, c in zip(q4.value, q4.codes, strict=True)
        ]
    ).pivot(index="action_id", columns="coder", values="value")
    sets = sets[sets.notna().any(axis=1)]
    reasons = [o.code for o in MENTAL.question("Q4").options] + ["other"]
    expected = agreement.multi_select_report(agreement.sets_from_wide(sets), reasons)
    got = q["reasons"]
    assert got["alpha_masi"]["alpha"] == pytest.approx(expected.alpha_masi.alpha)
    assert got["n_items"] == len(sets)
    assert {c["code"]: c["fleiss"]["kappa"] for c in got["per_code"]} == {
        c.code: c.fleiss.kappa for c in expected.per_code
    }
    assert any(x["part"] == "reasons" for x in q["left_out"])
    table = cli("agree", "--codebook", "mental_model", "--question", "Q4").stdout
    assert "Reasons: MASI alpha" in table and "Per reason (chosen or not" in table
    assert "Left out of the per-reason kappas:" in table
    md = cli("agree", "--codebook", "mental_model", "-f", "markdown").stdout
    assert "MASI distance (Passonneau, 2006)" in md
    assert "| Reason | Chosen | Kappa | Alpha |" in md


def test_per_reason_figures_say_on_which_items_they_are_computed(cli, demo, tmp_path) -> None:
    path, *_ = _mental_labels(demo, tmp_path)
    assert cli("import-labels", path, "--codebook", "mental_model").exit_code == 0
    labels = pd.read_csv(path, dtype=str, keep_default_na=False)
    answers = labels[labels.question == "Q4"].pivot(
        index="action_id", columns="coder", values="value"
    )
    saying_no = (answers == "no").sum(axis=1)
    every_no = int((saying_no == 3).sum())  # caro's missing answers are NaN, not 'no'
    two_no = int((saying_no >= 2).sum())
    assert 0 < every_no < two_no
    kappas = f"among the {every_no} items every coder answered 'no'"
    alphas = f"among the {two_no} items two or more coders answered 'no'"
    args = ("agree", "--codebook", "mental_model", "--question", "Q4")
    q = json.loads(cli(*args, "-f", "json").stdout)["results"][0]
    assert q["reasons"]["items_used"] == every_no
    assert {c["fleiss"]["n_items"] for c in q["reasons"]["per_code"]} == {every_no}
    assert {c["alpha"]["n_items"] for c in q["reasons"]["per_code"]} == {two_no}
    table = " ".join(cli(*args).stdout.split())  # the table wraps long lines
    assert f"Per reason (chosen or not): Fleiss' kappa {kappas}; nominal alpha {alphas}" in table
    assert f"Reasons: MASI alpha {q['reasons']['alpha_masi']['alpha']:.3f} {alphas}" in table
    md = cli(*args, "-f", "markdown").stdout
    assert f"the per-reason kappas {kappas}, MASI alpha and the per-reason alphas {alphas}." in md
    rows = list(csv.DictReader(io.StringIO(cli(*args, "-f", "csv").stdout)))
    assert {r["note"] for r in rows if r["statistic"] == "code_kappa"} == {kappas}
    assert {r["note"] for r in rows if r["statistic"] in {"code_alpha", "masi_alpha"}} == {alphas}
    # an item left out of the per-reason kappas says who did not answer 'no', and why
    item = next(
        i
        for i, row in answers.iterrows()
        if row["ana"] == row["ben"] == "no" and row["caro"] == "yes"
    )
    reasons = {x["item"]: x["reason"] for x in q["left_out"] if x["part"] == "reasons"}
    assert reasons[item] == "Answered 'no' by 2 of 3 coders; 'caro' answered 'yes'."
    assert len(reasons) == int(((saying_no >= 1) & (saying_no < 3)).sum())


def test_the_masi_reference_names_the_measure() -> None:
    from annotate.render.agree.methods import REFERENCES

    full = (
        "Passonneau, R. J. (2006). Measuring agreement on set-valued items (MASI) for semantic "
        "and pragmatic annotation. Proceedings of LREC 2006, 831-836."
    )
    assert full in REFERENCES
    assert (
        " ".join(agreement.masi.__doc__.split()).count(
            "Passonneau, R. J. (2006). Measuring agreement on set-valued items (MASI) for semantic "
            "and pragmatic annotation."
        )
        == 1
    )


def test_questions_nobody_answered_and_sample_items_not_coded(cli, demo, tmp_path) -> None:
    path, *ids = _mental_labels(demo, tmp_path, n=30)
    assert cli("import-labels", path, "--codebook", "mental_model").exit_code == 0
    with Store(demo) as s:
        other = [r["id"] for r in s.actions.action_rows()][100:110]
        s.samples.create_sample("main", ids[:20] + other)
        s.labels.set_skipped(other[0], MENTAL, "ben", ["Q1", "Q2", "Q3", "Q4"])
    out = json.loads(cli("agree", "--codebook", "mental_model", "-f", "json").stdout)
    by_q = {q["question"]: q for q in out["results"]}
    assert by_q["Q2"]["n_items"] == 0
    assert by_q["Q2"]["value"]["fleiss"]["undefined_reason"] == (
        "No item was rated by every coder, so Fleiss' kappa has no data."
    )
    not_coded = {x["item"]: x["reason"] for x in by_q["Q1"]["not_coded"]}
    assert len(not_coded) == 10
    assert not_coded[other[0]] == "Skipped by 'ben'; answered by no coder."
    assert not_coded[other[1]] == "Answered by no coder yet."
    table = cli("agree", "--codebook", "mental_model").stdout
    assert (
        "mental_model Q2 (single choice): 0 items, 3 coders: no answers by these coders." in table
    )
    assert "Not in any figure: 10 items of the sample:" in table
    assert "Answered by no coder yet: 9 items" in table
    md = cli("agree", "--codebook", "mental_model", "--question", "Q1", "-f", "markdown").stdout
    from annotate.render.agree.methods import cited_references

    items = _top_list_items(md)  # each figure's line is its own list item, as intended
    assert items[0].startswith("Left out of Fleiss' kappa: ")
    cited = cited_references(md.split("\n\n")[1])  # the methods paragraph's citations
    assert items[1:] == ["Not in any figure: 10 items of the sample:", *cited]
    assert "\n  - Answered by no coder yet: 9 items" in md


def _top_list_items(md: str) -> list[str]:
    """The first line of every top-level list item, as CommonMark parses the text."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(md)
    out, depth = [], 0
    for i, t in enumerate(tokens):
        if t.type in ("bullet_list_open", "ordered_list_open"):
            depth += 1
        elif t.type in ("bullet_list_close", "ordered_list_close"):
            depth -= 1
        elif t.type == "list_item_open" and depth == 1:
            out.append(tokens[i + 2].content.splitlines()[0])
    return out


def test_one_category_everywhere_is_reported_not_crashed(cli, demo, tmp_path) -> None:
    with Store(demo) as s:
        ids = [r["id"] for r in s.actions.action_rows()][:5]
    rows = ["action_id,coder,value"] + [f"{i},{c},Initiate" for i in ids for c in ("x", "y")]
    path = tmp_path / "same.csv"
    path.write_text("\n".join(rows) + "\n")
    assert cli("import-labels", str(path), "--codebook", "traum").exit_code == 0
    r = cli("agree", "--coders", "x,y")
    assert r.exit_code == 0, r.output
    assert "Every rating is 'Initiate', so chance agreement is 1" in r.stdout
    assert "Percent agreement      100.0%" in r.stdout


def test_migration_3_from_blank_and_from_version_2(tmp_path) -> None:
    with Store(tmp_path / "blank.db") as blank:
        names = [r[0] for r in blank.db.query("SELECT name FROM _migrations ORDER BY id")]
        assert names[:3] == ["m001_initial", "m002_llm", "m003_agreement_runs"]
        cols = [r[1] for r in blank.db.query("PRAGMA table_info(agreement_runs)")]
        assert cols == [
            "id", "created_at", "annotate_version", "codebook", "codebook_hash",
            "label_codebook_hashes", "sample", "sample_hash", "coders", "questions", "n_labels",
            "labels_hash", "settings", "results",
        ]  # fmt: skip
        cols = [r[1] for r in blank.db.query("PRAGMA table_info(agreement_run_labels)")]
        assert cols == ["run_id", "label_id", "digest"]  # digest: migration 5
    old = tmp_path / "old.db"
    conn = sqlite3.connect(old, isolation_level=None)
    conn.execute("CREATE TABLE _migrations (id INTEGER PRIMARY KEY, name TEXT, applied_at TEXT)")
    m001_initial(conn)
    m002_llm(conn)
    conn.execute(
        "INSERT INTO _migrations VALUES (1, 'm001_initial', 'then'), (2, 'm002_llm', 'then')"
    )
    conn.close()
    with Store(old) as upgraded:
        assert upgraded.agreement.agreement_runs() == []
        assert upgraded.db.query("SELECT name FROM _migrations WHERE id = 3")[0][0] == (
            "m003_agreement_runs"
        )
        assert upgraded.db.query("SELECT name FROM _migrations WHERE id = 5")[0][0] == (
            "m005_agreement_run_digests"
        )


def test_agree_core_does_not_load_textual_or_statsmodels() -> None:
    code = (
        "import sys, annotate.reliability.agreement_run, annotate.reliability.adjudication,"
        " annotate.commands.agree\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'textual', 'statsmodels'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


MULTI = """
name: tactics
title: Tactics
version: "1"
questions:
  - id: tactics
    prompt: Which tactics does the action use?
    kind: multi
    allow_other: false
    options:
      - {code: landmark, label: Landmark, key: "1"}
      - {code: direction, label: Direction, key: "2"}
      - {code: distance, label: Distance, key: "3"}
"""


def test_multi_select_question_uses_masi_and_per_code_kappas(cli, demo, tmp_path) -> None:
    book = tmp_path / "tactics.yaml"
    book.write_text(MULTI)
    with Store(demo) as s:
        ids = [r["id"] for r in s.actions.action_rows()][:40]
    rng = random.Random(3)
    codes = ["landmark", "direction", "distance"]
    rows = ["action_id,coder,codes"]
    for i in ids:
        truth = sorted(rng.sample(codes, rng.randint(1, 2)))
        for c in ("ana", "ben"):
            answer = truth if rng.random() < 0.7 else sorted(rng.sample(codes, 1))
            rows.append(f"{i},{c},{';'.join(answer)}")
    path = tmp_path / "tactics.csv"
    path.write_text("\n".join(rows) + "\n")
    r = cli("import-labels", str(path), "--codebook", str(book))
    assert r.exit_code == 0, r.output
    r = cli("agree", "--codebook", str(book), "-f", "json")
    assert r.exit_code == 0, r.output
    q = json.loads(r.stdout)["results"][0]
    assert q["kind"] == "multi" and q["value"] is None and q["n_items"] == 40
    labels = pd.read_csv(path)
    wide = labels.assign(codes=[frozenset(c.split(";")) for c in labels.codes]).pivot(
        index="action_id", columns="coder", values="codes"
    )
    expected = agreement.multi_select_report(agreement.sets_from_wide(wide), codes)
    assert q["codes"]["alpha_masi"]["alpha"] == pytest.approx(expected.alpha_masi.alpha)
    assert [c["fleiss"]["kappa"] for c in q["codes"]["per_code"]] == pytest.approx(
        [c.fleiss.kappa for c in expected.per_code]
    )
    table = cli("agree", "--codebook", "tactics").stdout
    assert "Sets: MASI alpha" in table and "Per code (chosen or not" in table


def test_labels_outside_the_sample_get_a_hint(cli, demo) -> None:
    with Store(demo) as s:
        s.samples.create_sample("main", [r["id"] for r in s.actions.action_rows()][:5])
    r = cli("agree", "--codebook", "mental_model")
    assert "error: codebook 'mental_model' has no labels in this file" in r.stderr
    with Store(demo) as s:
        s.db.conn.execute("DELETE FROM sample_items WHERE sample = 'main'")
    r = cli("agree")  # the default sample holds none of them: measured where they are
    assert r.exit_code == 0, r.output
    assert "every labelled item: too few coders in sample 'main'" in r.stderr
    r = cli("agree", "--sample", "main")  # named: refused, with the way out
    assert r.exit_code == 1
    assert (
        "error: agreement needs at least 2 coders; got 0 on codebook 'traum' in sample 'main'"
        in (r.stderr)
    )
    assert "hint: the labels of 'traum' are on items outside sample 'main'" in r.stderr
    assert "pass --sample all (every labelled item)" in r.stderr


def test_a_cohen_interval_beyond_minus_one_is_clipped_and_says_so(cli, demo, tmp_path) -> None:
    with Store(demo) as s:
        items = [r["id"] for r in s.actions.action_rows()][:3]
    path = tmp_path / "three.csv"  # kappa -1/2, ASE 0.306: -0.5 - 1.96 * 0.306 = -1.100
    pairs = [("Initiate", "Initiate"), ("Continue", "Initiate"), ("Initiate", "Continue")]
    rows = [
        f"{i},{c},{v}"
        for i, p in zip(items, pairs, strict=True)
        for c, v in zip("xy", p, strict=True)
    ]
    path.write_text("action_id,coder,value\n" + "\n".join(rows) + "\n")
    assert cli("import-labels", str(path), "--codebook", "traum").exit_code == 0
    note = "CI clipped to [-1, 1] (kappa ± z·ASE is -1.100 to 0.100)."
    r = cli("agree", "--coders", "x,y")
    assert r.exit_code == 0, r.output
    assert " x / y        3   -0.500   -1.000 to 0.100   33.3%   poor; CI clipped" in r.stdout
    assert note in r.stdout
    rows = list(csv.DictReader(io.StringIO(cli("agree", "--coders", "x,y", "-f", "csv").stdout)))
    [cohen] = [row for row in rows if row["statistic"] == "cohen_kappa"]
    assert cohen["ci_low"] == "-1.0" and cohen["note"].endswith(note)
    assert "z-test of Cohen's kappa needs at least 8 items" in cohen["note"]  # 3 items
    with Store(demo) as s:
        stored = json.loads(s.db.query("SELECT results FROM agreement_runs ORDER BY id")[0][0])
    pair = stored["results"][0]["value"]["pairwise"][0]
    assert pair["ci"]["low"] == -1.0 and pair["ci"]["note"] == note


def test_a_single_item_gives_kappa_and_says_why_there_is_no_interval(cli, demo, tmp_path) -> None:
    with Store(demo) as s:
        item = s.actions.action_rows()[0]["id"]
    path = tmp_path / "one.csv"
    path.write_text(f"action_id,coder,value\n{item},x,Initiate\n{item},y,Continue\n")
    assert cli("import-labels", str(path), "--codebook", "traum").exit_code == 0
    r = cli("agree", "--coders", "x,y")
    assert r.exit_code == 0, r.output
    assert "no CI: A bootstrap over items needs at least 10 items; got 1" in r.stdout


def test_csv_and_json_name_the_two_standard_errors(cli, demo) -> None:
    """se0 (under H0, the z-test's) and ase (asymptotic, the CI's) are never one `se`."""
    value = json.loads(cli("agree", "-f", "json").stdout)["results"][0]["value"]
    pair = value["pairwise"][0]
    assert "se" not in pair and pair["ase"] != pair["se0"]
    assert "se" not in value["fleiss"] and value["fleiss"]["se0"] > 0
    text = cli("agree", "-f", "csv").stdout
    header = text.splitlines()[0].split(",")
    assert "se" not in header and header.index("se0") + 1 == header.index("ase")
    rows = list(csv.DictReader(io.StringIO(text)))
    fleiss = next(r for r in rows if r["statistic"] == "fleiss_kappa")
    assert float(fleiss["se0"]) == value["fleiss"]["se0"] and fleiss["ase"] == ""
    assert float(fleiss["z"]) == pytest.approx(float(fleiss["estimate"]) / float(fleiss["se0"]))
    cohen = [r for r in rows if r["statistic"] == "cohen_kappa"]
    assert len(cohen) == 3
    for row, p in zip(cohen, value["pairwise"], strict=True):
        assert float(row["se0"]) == p["se0"] and float(row["ase"]) == p["ase"]
        assert float(row["z"]) == pytest.approx(p["kappa"] / p["se0"])
        half = float(row["ci_high"]) - float(row["estimate"])
        assert half == pytest.approx(1.959963984540054 * p["ase"])


def test_a_stored_run_counts_labels_added_deleted_and_changed(cli, demo, tmp_path) -> None:
    ids = list(pd.read_csv(REPO / "data" / "demo_labels.csv").action_id.unique()[:5])
    with Store(demo) as s:  # ana has not answered the first item yet
        s.labels.clear_answer(ids[0], "traum", "act", "ana")
        before = dict(s.db.query("SELECT action_id, value FROM labels WHERE coder = 'ben'"))
    out = json.loads(cli("agree", "-f", "json").stdout)
    run = str(out["run_id"])
    assert "labels, unchanged since." in cli("agree", "--run", run).stdout
    with Store(demo) as s:
        stored = s.agreement.agreement_run(int(run))
        assert s.db.query("SELECT count(*) FROM agreement_run_labels")[0][0] == 0  # one BLOB row
    # since the run: ana answers the first item, ben changes the second, caro's third
    # label is deleted, ana's fourth answer is undone (the flagged row stays), and a note
    # on the fifth changes no answer
    other = next(c for c in TRAUM if c != before[ids[1]])
    path = tmp_path / "more.csv"
    path.write_text(f"action_id,coder,value\n{ids[0]},ana,Initiate\n{ids[1]},ben,{other}\n")
    assert cli("import-labels", str(path), "--codebook", "traum", "--replace").exit_code == 0
    traum = find_codebook("traum").codebook
    with Store(demo) as s:
        s.labels.clear_answer(ids[2], "traum", "act", "caro")
        s.labels.set_flag(ids[3], traum, "ana", ["act"])
        s.labels.clear_answer(ids[3], "traum", "act", "ana")
        s.labels.set_note(ids[4], traum, "ben", ["act"], "not sure")
    r = cli("agree", "--run", run)
    assert r.exit_code == 0, r.output
    assert "labels, changed since: 1 added, 2 deleted, 1 changed." in r.stdout
    again = json.loads(cli("agree", "--run", run, "-f", "json").stdout)
    assert again["labels_since_run"] == {
        "unchanged": False, "added": 1, "deleted": 2, "changed": 1, "notes": []
    }  # fmt: skip
    assert {k: v for k, v in again.items() if k != "labels_since_run"} == out
    # a run stored before the per-label digests: how many changed is unknown, and it says so
    unknown = (
        "changed since: 1 added, 2 deleted, ? changed (the run was stored without per-label "
        "digests, so how many changed is unknown; labels_sha256 differs)."
    )
    with Store(demo) as s:
        s.db.conn.execute("UPDATE agreement_run_label_sets SET digests = NULL")
    assert unknown in " ".join(cli("agree", "--run", run).stdout.split())
    # the same run as stored before migration 13 (one row per label), digests or not
    with Store(demo) as s:
        s.db.conn.execute("DELETE FROM agreement_run_label_sets")
        s.db.conn.executemany(
            "INSERT INTO agreement_run_labels (run_id, label_id, digest) VALUES (?, ?, ?)",
            [(int(run), i, stored["label_digests"][i]) for i in stored["label_ids"]],
        )
    assert (
        "labels, changed since: 1 added, 2 deleted, 1 changed." in cli("agree", "--run", run).stdout
    )
    with Store(demo) as s:
        s.db.conn.execute("UPDATE agreement_run_labels SET digest = NULL")
    assert unknown in " ".join(cli("agree", "--run", run).stdout.split())


def test_migration_5_keeps_the_runs_of_a_version_4_file(cli, demo) -> None:
    """A run stored before per-label digests is read back with digest None."""
    from annotate.store.migrations import m003_agreement_runs, m004_session_splits

    out = json.loads(cli("agree", "-f", "json").stdout)
    with Store(demo) as s:
        run = s.agreement.agreement_run(out["run_id"])
    old = demo.parent / "v4.db"
    conn = sqlite3.connect(old, isolation_level=None)
    conn.execute("CREATE TABLE _migrations (id INTEGER PRIMARY KEY, name TEXT, applied_at TEXT)")
    for n, m in enumerate((m001_initial, m002_llm, m003_agreement_runs, m004_session_splits), 1):
        m(conn)
        conn.execute("INSERT INTO _migrations VALUES (?, ?, 'then')", (n, m.__name__))
    conn.execute(
        "INSERT INTO agreement_runs (id, created_at, annotate_version, codebook, codebook_hash, "
        "coders, questions, n_labels, labels_hash, results) VALUES (7, 'then', '0', 'traum', "
        "'x', '[\"ana\", \"ben\"]', '[\"act\"]', 2, 'h', '{}')"
    )
    conn.execute("INSERT INTO agreement_run_labels VALUES (7, 1), (7, 2)")
    conn.close()
    with Store(old) as upgraded:
        assert upgraded.db.query("SELECT name FROM _migrations WHERE id = 5")[0][0] == (
            "m005_agreement_run_digests"
        )
        again = upgraded.agreement.agreement_run(7)
        assert again["label_ids"] == [1, 2] and again["label_digests"] == {1: None, 2: None}
    assert all(run["label_digests"][i] for i in run["label_ids"])  # new runs have them


def test_a_per_reason_kappa_without_items_says_why_in_every_format(cli, demo, tmp_path) -> None:
    with Store(demo) as s:
        ids = [r["id"] for r in s.actions.action_rows()][:10]
    reason = MENTAL.question("Q4").options[0].code
    rows = ["action_id,coder,question,value,codes,other_text,note"]
    for i in ids:  # 'caro' never answers 'no': no item has every coder's reasons
        rows += [f"{i},ana,Q4,no,{reason},,", f"{i},ben,Q4,no,{reason},,", f"{i},caro,Q4,yes,,,"]
    path = tmp_path / "q4.csv"
    path.write_text("\n".join(rows) + "\n")
    assert cli("import-labels", str(path), "--codebook", "mental_model").exit_code == 0
    why = "No item was answered 'no' by every coder, so the per-reason kappa has no data."
    args = ("agree", "--codebook", "mental_model", "--question", "Q4")
    q = json.loads(cli(*args, "-f", "json").stdout)["results"][0]
    assert {c["fleiss"]["undefined_reason"] for c in q["reasons"]["per_code"]} == {why}
    rows = list(csv.DictReader(io.StringIO(cli(*args, "-f", "csv").stdout)))
    assert {r["note"] for r in rows if r["statistic"] == "code_kappa"} == {why}
    assert why in cli(*args, "-f", "markdown").stdout
    assert why in " ".join(cli(*args).stdout.split())  # the table wraps long lines
