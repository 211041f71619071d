"""`annotate agree` on the real HCRC Map Task corpus: the corpus labels (coder `hcrc`) and
two perturbed copies, checked against statsmodels and the `krippendorff` package on the
same matrix, in every format, with the stored run and the left-out items."""

from __future__ import annotations

import csv
import io
import json
import random
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from annotate.cli import app
from annotate.codebook import Answer, find_codebook
from annotate.store import Store

DIALOGUES = ("q1ec1", "q1ec2", "q1nc1")
MOVES = [o.code for o in find_codebook("hcrc_moves").codebook.questions[0].options]


def _perturbed(ids_labels: list[tuple[str, str]], coder: str, p: float, seed: int, skip: int):
    """Rows of a coder who keeps each corpus label with probability 1 - p; every
    ``skip``-th item is left out (0: none)."""
    rng = random.Random(seed)
    rows = []
    for k, (action_id, label) in enumerate(ids_labels):
        if skip and k % skip == 0:
            continue
        value = label if rng.random() >= p else rng.choice([m for m in MOVES if m != label])
        rows.append({"action_id": action_id, "coder": coder, "question": "move", "value": value})
    return rows


@pytest.fixture
def maptask(cli, shared, db_path, tmp_path):
    files = [str(shared / "maptask" / "dialogues" / f"{d}.txt") for d in DIALOGUES]
    r = cli("import", *files, "--labels-as", "hcrc", "--codebook", "hcrc_moves")
    assert r.exit_code == 0, r.output
    with Store(db_path) as s:
        corpus = [(r["action_id"], r["value"]) for r in s.labels.label_rows("hcrc_moves")]
    rows = _perturbed(corpus, "ann", 0.15, 1, 0) + _perturbed(corpus, "bob", 0.3, 2, 9)
    path = tmp_path / "coders.csv"
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, ["action_id", "coder", "question", "value"])
        writer.writeheader()
        writer.writerows(rows)
    r = cli("import-labels", str(path), "--codebook", "hcrc_moves")
    assert r.exit_code == 0, r.output
    # bob skipped two of the items he did not answer: the report says so
    skipped = [corpus[0][0], corpus[9][0]]
    cb = find_codebook("hcrc_moves").codebook
    with Store(db_path) as s:
        for action_id in skipped:
            s.labels.set_skipped(action_id, cb, "bob", ["move"])
    return {"db": db_path, "corpus": corpus, "skipped": skipped, "n_bob": len(rows) - len(corpus)}


def _wide(db: Path) -> pd.DataFrame:
    """The item x coder table read straight from SQLite (independently of annotate)."""
    conn = sqlite3.connect(db)
    frame = pd.read_sql_query(
        "SELECT action_id, coder, value FROM labels WHERE codebook = 'hcrc_moves' "
        "AND value IS NOT NULL",
        conn,
    )
    conn.close()
    return frame.pivot(index="action_id", columns="coder", values="value")[["ann", "bob", "hcrc"]]


def test_numbers_equal_statsmodels_and_krippendorff(cli, maptask) -> None:
    import krippendorff
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    import agreement

    r = cli("agree", "--format", "json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["coders"] == ["ann", "bob", "hcrc"] and out["sample"] is None
    q = out["results"][0]
    wide = _wide(maptask["db"])
    n_items = len(maptask["corpus"])
    assert q["n_items"] == n_items == len(wide)
    complete = wide.dropna()
    assert q["value"]["items_used"] == len(complete) == n_items - len(wide) + len(complete)
    table, _ = aggregate_raters(complete.to_numpy())
    assert q["value"]["fleiss"]["kappa"] == pytest.approx(fleiss_kappa(table), abs=1e-12)
    codes = {m: i for i, m in enumerate(MOVES)}
    numeric = wide.apply(lambda col: col.map(codes)).to_numpy(dtype=float).T
    expected_alpha = krippendorff.alpha(reliability_data=numeric, level_of_measurement="nominal")
    assert q["value"]["alpha"]["alpha"] == pytest.approx(expected_alpha, abs=1e-12)
    # the rest: the agreement package on the same matrix built independently
    matrix = agreement.from_wide(wide, categories=MOVES)
    ref = agreement.agreement_report(matrix, MOVES)
    assert q["value"]["ac1"]["ac1"] == pytest.approx(ref.ac1.ac1)
    assert q["value"]["percent_agreement"] == ref.percent_agreement.to_dict()
    assert q["value"]["fleiss_ci"] == ref.fleiss_ci.to_dict()
    assert [p["kappa"] for p in q["value"]["pairwise"]] == pytest.approx(
        [p.kappa for p in ref.pairwise]
    )
    per_cat = {c["category"]: c["kappa"] for c in q["value"]["fleiss"]["per_category"]}
    assert per_cat == {c.category: c.kappa for c in ref.fleiss.per_category}
    assert q["value"]["fleiss"]["band"] == agreement.landis_koch(ref.fleiss.kappa)


def test_left_out_items_are_named_with_the_reason(cli, maptask) -> None:
    out = json.loads(cli("agree", "--format", "json").stdout)
    left = {x["item"]: x["reason"] for x in out["results"][0]["left_out"]}
    assert len(left) == len(maptask["corpus"][::9]) == len(maptask["corpus"]) - maptask["n_bob"]
    first, tenth = maptask["skipped"]
    assert left[first] == "Rated by 2 of 3 coders (not by 'bob'); skipped by 'bob'."
    assert left[tenth] == "Rated by 2 of 3 coders (not by 'bob'); skipped by 'bob'."
    others = [i for i, _ in maptask["corpus"][::9] if i not in maptask["skipped"]]
    assert all(left[i] == "Rated by 2 of 3 coders (not by 'bob')." for i in others)
    table = cli("agree").stdout
    n = len(left)
    assert f"Left out of Fleiss' kappa: {n} items not answered by every coder" in table
    assert "Rated by 2 of 3 coders (not by 'bob'); skipped by 'bob': 2 items" in table
    assert f"Rated by 2 of 3 coders (not by 'bob'): {n - 2} items" in table


def test_every_format(cli, maptask) -> None:
    runner = CliRunner()
    db = str(maptask["db"])
    narrow = runner.invoke(app, ["agree", "--db", db], env={"COLUMNS": "80"})
    assert narrow.exit_code == 0, narrow.output
    lines = narrow.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    text = narrow.stdout
    assert "hcrc_moves move (single choice): 902 items, 3 coders" in text
    for label in ("Fleiss' kappa", "Krippendorff's alpha", "Gwet's AC1", "Percent agreement",
                  "Per category", "Pairwise Cohen's kappa", "ann / bob", "bob / hcrc"):  # fmt: skip
        assert label in text
    assert "run 1 stored: " in text
    out = json.loads(cli("agree", "--format", "json").stdout)
    kappa = out["results"][0]["value"]["fleiss"]["kappa"]
    md = cli("agree", "--format", "markdown").stdout
    assert "## Inter-coder agreement: hcrc_moves" in md
    assert "Fleiss' kappa (Fleiss, 1971)" in md and "Landis and Koch (1977)" in md
    assert f"| Fleiss' kappa | {kappa:.3f} |" in md
    assert "| Coders | Items | Cohen's kappa | 95% CI | Agreement | Band |" in md
    assert md.count("- Fleiss, J. L.") == 3
    assert "<!-- annotate agree run 1: " in md  # the same labels and settings: run 1 again
    rows = list(csv.DictReader(io.StringIO(cli("agree", "--format", "csv").stdout)))
    by = {(r["statistic"], r["subject"]): r for r in rows}
    assert float(by[("fleiss_kappa", "")]["estimate"]) == kappa  # full precision
    assert by[("fleiss_kappa", "")]["band"] == out["results"][0]["value"]["fleiss"]["band"]
    assert {r["subject"] for r in rows if r["statistic"] == "cohen_kappa"} == {
        "ann|bob", "ann|hcrc", "bob|hcrc"}  # fmt: skip
    assert len([r for r in rows if r["statistic"] == "category_kappa"]) == 12
    assert len([r for r in rows if r["statistic"] == "left_out"]) == len(
        out["results"][0]["left_out"]
    )


def test_each_run_is_stored_and_traceable_to_its_labels(cli, maptask) -> None:
    r = cli("agree", "--format", "json", "--ci", "0.9", "--n-boot", "200", "--seed", "3")
    out = json.loads(r.stdout)
    assert f"run {out['run_id']} stored: " in r.stderr
    with Store(maptask["db"]) as s:
        run = s.agreement.agreement_run(out["run_id"])
        assert run["settings"] == {
                "ci": 0.9, "n_boot": 200, "seed": 3, "ci_method": "bca",
                "resample_order": "ratings",
            }  # fmt: skip
        assert run["coders"] == ["ann", "bob", "hcrc"] and run["questions"] == ["move"]
        assert run["codebook"] == "hcrc_moves"
        assert run["codebook_hash"] == find_codebook("hcrc_moves").codebook.version_hash
        assert run["results"] == {k: v for k, v in out.items() if k != "run_id"}
        ids = [
            r[0] for r in s.db.query("SELECT id FROM labels WHERE value IS NOT NULL ORDER BY id")
        ]
        assert run["label_ids"] == ids and run["n_labels"] == len(ids)
        # the hash is of the labels' content: recomputed from SQLite it matches
        from annotate.reliability.label_hashes import labels_hash

        assert (
            labels_hash(s.agreement.labels_by_id(ids)) == run["labels_hash"] == out["labels_sha256"]
        )
    again = cli("agree", "--run", str(out["run_id"]))
    assert again.exit_code == 0
    assert f"run {out['run_id']} (" in again.stdout and "labels, unchanged since." in again.stdout
    # change one label: the stored run says so
    first = maptask["corpus"][1][0]
    with Store(maptask["db"]) as s:
        hcrc = find_codebook("hcrc_moves").codebook
        s.labels.save_answer(first, hcrc, "move", "ann", Answer("ready"))
    assert (
        "labels, changed since: 0 added, 0 deleted, 1 changed."
        in cli("agree", "--run", str(out["run_id"])).stdout
    )
    listed = cli("agree", "--runs", "--format", "json")
    assert [r["id"] for r in json.loads(listed.stdout)] == [out["run_id"]]


def test_disagreements_list_every_differing_item(cli, maptask) -> None:
    wide = _wide(maptask["db"])
    differing = [i for i, row in wide.iterrows() if row.dropna().nunique() > 1]
    with Store(maptask["db"]) as s:
        runs_before = s.db.query("SELECT count(*) FROM agreement_runs")[0][0]
    out = json.loads(cli("agree", "--format", "json", "--disagreements").stdout)
    assert set(out) == {"codebook", "sample", "coders", "questions", "disagreements"}
    listed = out["disagreements"]["move"]
    assert {d["item"] for d in listed} == set(differing)
    report = json.loads(cli("agree", "--format", "json").stdout)
    assert report["results"][0]["n_disagreements"] == len(differing)
    one = listed[0]
    with Store(maptask["db"]) as s:
        action = s.actions.action(one["item"])
    assert one["text"] == action.content and one["session"] == action.session
    missing = "(skipped)" if one["item"] in maptask["skipped"] else "(not coded)"
    assert one["answers"] == {
        c: (missing if pd.isna(v) else v) for c, v in wide.loc[one["item"]].items()
    }
    table = cli("agree", "--disagreements").stdout
    assert table.splitlines()[:3] == [
        "Codebook hcrc_moves, every labelled item, coders ann, bob, hcrc.",
        "",
        f"Coders differ on move: {len(differing)} items",
    ]
    assert "Fleiss" not in table and "run " not in table  # the list only; no run stored
    markdown = cli("agree", "--disagreements", "-f", "markdown").stdout
    assert "Fleiss" not in markdown and f"Coders differ on move: {len(differing)} items" in markdown
    rows = list(csv.DictReader(io.StringIO(cli("agree", "-f", "csv", "--disagreements").stdout)))
    assert len(rows) == len(differing)
    assert set(rows[0]) == {
        "question", "item", "session", "seq", "context", "text", "ann", "bob", "hcrc", "notes",
    }  # fmt: skip
    with Store(maptask["db"]) as s:  # only the report (agree -f json) stored a run
        assert s.db.query("SELECT count(*) FROM agreement_runs")[0][0] == runs_before + 1


def test_errors_name_the_choices(cli, maptask) -> None:
    r = cli("agree", "--coders", "ann,zed")
    assert r.exit_code == 1
    assert "error: unknown coder 'zed': no labels on codebook 'hcrc_moves'" in r.stderr
    assert "hint: coders: ann (902 labels), bob (" in r.stderr
    r = cli("agree", "--coders", "ann")
    assert r.exit_code == 1
    assert "error: agreement needs at least 2 coders; got 1 (ann) on codebook 'hcrc_moves'" in (
        r.stderr
    )
    r = cli("agree", "--codebook", "nope")
    assert r.exit_code == 1
    assert "error: unknown codebook 'nope'" in r.stderr
    assert "hint: choices: hcrc_moves (" in r.stderr
    r = cli("agree", "--codebook", "traum")
    assert "error: codebook 'traum' has no labels in this file" in r.stderr
    r = cli("agree", "--question", "Q1")
    assert "error: codebook 'hcrc_moves' has no question 'Q1'" in r.stderr
    assert "hint: questions: move" in r.stderr
    r = cli("agree", "--sample", "main")
    assert "error: no sample named 'main'" in r.stderr
    r = cli("agree", "--ci", "95")
    assert "error: --ci must be a level between 0 and 1 (e.g. 0.95); got 95.0" in r.stderr
    r = cli("agree", "--run", "42")
    assert "error: no agreement run 42" in r.stderr
    with Store(maptask["db"]) as s:  # nothing was stored by the failed runs
        assert s.agreement.agreement_runs() == []


def test_gold_and_llm_coders_count_only_when_named(cli, maptask, tmp_path) -> None:
    rows = ["action_id,coder,question,value"] + [
        f"{a},{c},move,{v}" for a, v in maptask["corpus"][:50] for c in ("gold", "llm:x")
    ]
    path = tmp_path / "more.csv"
    path.write_text("\n".join(rows) + "\n")
    assert cli("import-labels", str(path), "--codebook", "hcrc_moves").exit_code == 0
    out = json.loads(cli("agree", "-f", "json").stdout)
    assert out["coders"] == ["ann", "bob", "hcrc"]
    out = json.loads(cli("agree", "-f", "json", "--coders", "hcrc,llm:x,gold").stdout)
    assert out["coders"] == ["hcrc", "llm:x", "gold"]
    value = out["results"][0]["value"]
    assert value["items_used"] == 50 and len(out["results"][0]["left_out"]) == 902 - 50
    assert value["fleiss"]["kappa"] == 1.0 and value["fleiss"]["band"] == "almost perfect"


def test_a_sample_scopes_the_items(cli, maptask) -> None:
    assert cli("sample", "--n", "60", "--seed", "4").exit_code == 0
    r = cli("agree", "-f", "json")
    out = json.loads(r.stdout)
    assert out["sample"] == "main" and out["sample_items"] == 60
    assert out["results"][0]["n_items"] == 60
    with Store(maptask["db"]) as s:
        ids = s.samples.sample_ids("main")
    wide = _wide(maptask["db"]).loc[ids]
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    table, _ = aggregate_raters(wide.dropna().to_numpy())
    assert out["results"][0]["value"]["fleiss"]["kappa"] == pytest.approx(fleiss_kappa(table))
    assert np.isclose(out["n_labels"], wide.notna().to_numpy().sum())
