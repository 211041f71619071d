"""One figure, one number (issue 31): `agree`, `report` and `llm-label --validate-only`
print the same Fleiss' kappa and interval for the same coders and items, on the demo and on
the real Map Task corpus, read from what each command prints or writes."""

from __future__ import annotations

import csv
import io
import random
import re
from pathlib import Path

import pandas as pd
import pytest

from annotate.codebook import find_codebook
from annotate.store import Store
from tests.conftest import DEMO, REPO
from tests.test_llm_real_server import real_server  # noqa: F401  (a fixture)

KAPPA_LINE = re.compile(r"Fleiss' kappa\s+(-?\d\.\d{3})\s+(-?\d\.\d{3}) to (-?\d\.\d{3})")
MOVES = [o.code for o in find_codebook("hcrc_moves").codebook.questions[0].options]


def agree_kappa(output: str) -> tuple[str, str, str]:
    """The Fleiss' kappa row of `agree`'s table: value, CI low, CI high (as printed)."""
    found = KAPPA_LINE.search(output)
    assert found, output
    return found[1], found[2], found[3]


def report_kappa(out: Path, codebook: str) -> tuple[str, str, str, int]:
    """The same figure from the report's agreement.csv (numbers, printed as agree does)."""
    rows = pd.read_csv(out / "agreement.csv")
    row = rows[rows["codebook"] == codebook].iloc[0]
    return (
        f"{row['fleiss kappa']:.3f}",
        f"{row['ci_low']:.3f}",
        f"{row['ci_high']:.3f}",
        int(row["kappa items"]),
    )


def items_of(output: str) -> int:
    found = re.search(
        r"Fleiss' kappa\s+\S+\s+\S+ to \S+\s+[^;\n]*; (\d+)(?: of \d+)? items", output
    )
    assert found, output
    return int(found[1])


def agree_then_report(cli, codebook: str, coders: str, out: Path) -> tuple[str, int]:
    """`agree` and `report` on one codebook: what agree printed, and the report's number of
    items, once the report's kappa and interval are checked to be agree's."""
    agreed = cli("agree", "--codebook", codebook)
    assert agreed.exit_code == 0, agreed.output
    r = cli("report", "--codebook", codebook, "--coders", coders, "--out", str(out))
    assert r.exit_code == 0, r.output
    kappa, low, high, n = report_kappa(out, codebook)
    assert (kappa, low, high) == agree_kappa(agreed.stdout)
    return agreed.stdout, n


def demo_labelled(cli, *sample: str) -> None:
    """The demo with a sample 'main' drawn with ``sample``'s options, and its coders' labels."""
    assert cli("import", str(DEMO)).exit_code == 0
    assert cli("sample", *sample, "--name", "main").exit_code == 0
    r = cli("import-labels", str(REPO / "data" / "demo_labels.csv"), "--codebook", "traum")
    assert r.exit_code == 0, r.output


def test_demo_agree_and_report_print_one_kappa_and_interval(cli, db_path, tmp_path) -> None:
    demo_labelled(cli, "--n", "120", "--seed", "7", "--stratify", "condition")
    out = tmp_path / "report"
    agreed, n = agree_then_report(cli, "traum", "ana", out)
    assert n == items_of(agreed) == 120  # the sample's items, not the file's 343
    row = pd.read_csv(out / "agreement.csv").iloc[0]
    assert row["sample"] == "main" and row["coders"] == "ana, ben, caro"
    assert row["run"] == int(re.search(r"run (\d+) stored", agreed)[1])


def _second_coder(store_path: Path, tmp_path: Path) -> Path:
    """A coder who keeps each corpus move with probability 0.8 and skips every 7th item."""
    with Store(store_path) as s:
        corpus = [(r["action_id"], r["value"]) for r in s.labels.label_rows("hcrc_moves")]
    rng = random.Random(5)
    path = tmp_path / "ann.csv"
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["action_id", "coder", "question", "value"])
        for k, (action_id, move) in enumerate(corpus):
            if k % 7 == 0:
                continue
            value = move if rng.random() < 0.8 else rng.choice([m for m in MOVES if m != move])
            writer.writerow([action_id, "ann", "move", value])
    return path


def maptask_two_coders(cli, shared: Path, db_path: Path, *names: str) -> None:
    """Map Task dialogues ``names`` with the corpus coding (hcrc) and a second coder (ann)."""
    dialogues = shared / "maptask" / "dialogues"
    r = cli("import", *(str(dialogues / n) for n in names),
            "--labels-as", "hcrc", "--codebook", "hcrc_moves")  # fmt: skip
    assert r.exit_code == 0, r.output
    r = cli("import-labels", str(_second_coder(db_path, db_path.parent)), "--codebook",
            "hcrc_moves")  # fmt: skip
    assert r.exit_code == 0, r.output


def test_maptask_agree_and_report_print_one_kappa_and_interval(
    cli, shared, db_path, tmp_path
) -> None:
    maptask_two_coders(cli, shared, db_path, "q1ec1.txt", "q1nc1.txt")
    agreed, n = agree_then_report(cli, "hcrc_moves", "hcrc", tmp_path / "report")
    assert n == items_of(agreed)


@pytest.fixture
def labels_outside_main(cli, db_path, tmp_path) -> int:
    """The demo with a 20-item sample 'main' and the coders' labels on the other items only."""
    assert cli("import", str(DEMO)).exit_code == 0
    assert cli("sample", "--n", "20", "--seed", "7", "--name", "main").exit_code == 0
    with Store(db_path) as s:
        main = set(s.samples.sample_ids("main"))
    labels = pd.read_csv(REPO / "data" / "demo_labels.csv")
    outside = labels[~labels["action_id"].isin(main)]
    path = tmp_path / "outside.csv"
    outside.to_csv(path, index=False)
    r = cli("import-labels", str(path), "--codebook", "traum")
    assert r.exit_code == 0, r.output
    return outside["action_id"].nunique()


def test_labels_outside_main_are_measured_with_a_note(cli, labels_outside_main) -> None:
    r = cli("agree", "--codebook", "traum")
    assert r.exit_code == 0, r.output
    assert "too few coders in sample 'main'" in r.stderr  # how the defaults were chosen
    assert items_of(r.stdout) == labels_outside_main == 323
    every = cli("agree", "--codebook", "traum", "--sample", "all")
    assert every.exit_code == 0, every.output
    assert "every labelled item (--sample all)" in every.stderr
    assert agree_kappa(every.stdout) == agree_kappa(r.stdout)
    named = cli("agree", "--codebook", "traum", "--sample", "main")  # named: no fallback
    assert named.exit_code != 0
    assert "pass --sample all (every labelled item)" in named.output


def test_sample_all_is_taken_by_agree_and_split_and_not_a_sample_name(cli, db_path) -> None:
    assert cli("import", str(DEMO)).exit_code == 0
    r = cli("sample", "--n", "5", "--seed", "1", "--name", "all")
    assert r.exit_code != 0 and "--sample all` means every labelled item" in r.output
    assert cli("sample", "--n", "30", "--seed", "1", "--name", "main").exit_code == 0
    r = cli("import-labels", str(REPO / "data" / "demo_labels.csv"), "--codebook", "traum")
    assert r.exit_code == 0
    in_main = cli("agree", "--codebook", "traum")
    every = cli("agree", "--codebook", "traum", "--sample", "all")
    assert items_of(in_main.stdout) == 30 and items_of(every.stdout) == 343
    r = cli("split", "--codebook", "traum", "--gold", "ana", "--sample", "all", "--shots", "8")
    assert r.exit_code == 0, r.output
    assert "335 held out" in r.stdout  # every gold item: 343 - 8 shots


# -- label sources: gold, then the corpus coding; a failed LLM only when named, and marked ----


def test_report_uses_the_corpus_coding_by_default(cli, shared, tmp_path) -> None:
    r = cli("import", str(shared / "maptask" / "dialogues" / "q1ec1.txt"),
            "--labels-as", "hcrc", "--codebook", "hcrc_moves")  # fmt: skip
    assert r.exit_code == 0, r.output
    out = tmp_path / "report"
    r = cli("report", "--codebook", "hcrc_moves", "--out", str(out))
    assert r.exit_code == 0, r.output
    n = int(re.search(r"hcrc_moves: labels by hcrc \((\d+) actions\)", r.stdout)[1])
    table = pd.read_csv(out / "hcrc_moves_move_by_condition.csv").set_index("code")
    assert int(table.loc["n"].drop("label").astype(int).sum()) == n > 0


def test_a_forced_llm_is_used_only_when_named_and_then_marked(cli, db_path, tmp_path) -> None:
    from tests.test_analysis_support import demo_with_gold

    demo_with_gold(cli, db_path, tmp_path, llm_gate="forced")
    out = tmp_path / "default"
    r = cli("report", "--codebook", "traum", "--out", str(out))
    assert r.exit_code == 0, r.output
    assert "traum: labels by gold (228 actions) [" in r.stdout
    assert "Not used: llm:fake (did not pass the validation gate" in r.stdout
    table = pd.read_csv(out / "traum_act_by_condition.csv").set_index("code")
    assert int(table.loc["n"].drop("label").astype(int).sum()) == 228  # gold only
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "FAILED" not in html

    named = tmp_path / "named"
    r = cli("report", "--codebook", "traum", "--coders", "gold,llm:fake", "--out", str(named))
    assert r.exit_code == 0, r.output
    assert "then llm:fake (115 actions)" in r.stdout
    warning = "llm:fake FAILED its validation gate (Fleiss' kappa 0.300 < 0.6, labelled with"
    assert warning in r.stdout
    html = (named / "report.html").read_text(encoding="utf-8")
    mark = "[llm:fake: FAILED validation, Fleiss&#x27; kappa 0.300]"
    titles = re.findall(r"<h3[^>]*>([^<]*)</h3>", html)
    using = [t for t in titles if t.startswith(("traum act:", "Within each traum"))]
    assert len(using) == 3 and all(mark in t for t in using), titles
    assert not any(mark in t for t in titles if t.startswith("Alignment"))  # mental model only
    charts = re.findall(r'<img alt="([^"]*)"', html)
    marked = {c.removesuffix(" " + mark) for c in charts if mark in c}
    resting = {  # 2 by act, Q2 within each act, Figure 4's panel by act
        "Traum grounding acts (act) by condition", "Traum grounding acts (act) by role",
        "Q2 answers within each traum code",
        "Perceived alignment (Q4 = yes) by traum act and condition",
    }  # fmt: skip
    assert resting <= marked, charts
    assert not any(mark in c for c in charts if c.startswith("Alignment")), charts
    # Figure 4's right panel rests on the mental-model answers only: not the LLM's acts
    right = [t for t in titles if t.startswith("Figure 4, right")]
    assert len(right) == 1 and mark not in right[0], titles
    progress = "Grounded team goal, partner intent and self-reasoning over task progress"
    assert progress in charts and progress not in marked, charts
    left = [t for t in titles if t.startswith("Figure 4, left")]
    assert len(left) == 1 and mark in left[0], titles


# -- the methods text a reviewer signs ----------------------------------------------------------


def test_methods_text_gives_each_statistic_its_items_and_cites_only_what_it_used(
    cli, db_path, tmp_path
) -> None:
    assert cli("import", str(DEMO)).exit_code == 0
    labels = pd.read_csv(REPO / "data" / "demo_labels.csv")
    ids = sorted(labels["action_id"].unique())
    caro = set(ids[:40])  # caro coded 40 items only, dan 20 of hers
    dan = labels[(labels["coder"] == "ana") & labels["action_id"].isin(ids[:20])].assign(
        coder="dan"
    )
    rows = labels[(labels["coder"] != "caro") | labels["action_id"].isin(caro)]
    path = tmp_path / "partial.csv"
    pd.concat([rows, dan]).to_csv(path, index=False)
    assert cli("import-labels", str(path), "--codebook", "traum").exit_code == 0
    md = cli("agree", "--codebook", "traum", "-f", "markdown").stdout
    methods = md.split("\n\n")[1]
    assert "Agreement among 4 coders (ana, ben, caro, dan)" in methods
    assert "Fleiss' kappa used the 20 items all 4 coders answered" in methods
    assert "alpha and AC1 the 343 items two or more coders answered" in methods
    assert "\n### References\n" in md
    refs = md.split("### References")[1]
    assert "Fleiss, J. L. (1971)" in refs
    assert "Passonneau" not in refs and "Cohen, J. (1968)" not in refs  # no MASI, no weights
    assert "verified against" not in md
    verified = cli("agree", "--codebook", "traum", "-f", "markdown", "--verify").stdout
    from importlib.metadata import version

    assert (
        f"verified against statsmodels {version('statsmodels')} and krippendorff "
        f"{version('krippendorff')}" in verified
    )


# -- agree --verify -----------------------------------------------------------------------------


def test_verify_recomputes_every_figure_with_the_reference_libraries(cli, shared, db_path) -> None:
    import json
    from importlib.metadata import version

    maptask_two_coders(cli, shared, db_path, "q1ec1.txt")
    r = cli("agree", "--verify")
    assert r.exit_code == 0, r.output
    assert f"statsmodels {version('statsmodels')} and krippendorff {version('krippendorff')}" in (
        r.stdout
    )
    out = json.loads(cli("agree", "--verify", "-f", "json").stdout)
    checks = out["verified"]["checks"]
    assert {c["statistic"] for c in checks} == {
        "Fleiss' kappa", "Krippendorff's alpha (nominal)", "Cohen's kappa ann/hcrc",
    }  # fmt: skip
    assert out["verified"]["ok"] and out["verified"]["max_difference"] < 1e-9
    fleiss = next(c for c in checks if c["statistic"] == "Fleiss' kappa")
    assert fleiss["annotate"] == out["results"][0]["value"]["fleiss"]["kappa"]


def test_a_difference_fails_the_verification() -> None:
    from annotate.reliability.verify import Check, Verification

    same = Check("act", "Fleiss' kappa", 0.5, 0.5 + 1e-15, "statsmodels")
    off = Check("act", "Cohen's kappa a/b", 0.5, 0.51, "statsmodels")
    assert Verification({}, (same,)).ok
    bad = Verification({}, (same, off))
    assert not bad.ok and bad.max_difference == pytest.approx(0.01)


# -- agree --disagreements: the turns before, notes, flags, skipped vs not coded ---------------


def test_disagreements_show_context_notes_flags_and_why_an_answer_is_missing(
    cli, db_path, tmp_path
) -> None:
    import json

    assert cli("import", str(DEMO)).exit_code == 0
    labels = pd.read_csv(REPO / "data" / "demo_labels.csv")
    wide = labels.pivot(index="action_id", columns="coder", values="value")
    differ = sorted(wide.index[wide["ana"] != wide["ben"]])[:2]  # caro answers neither
    kept = labels[~((labels["coder"] == "caro") & labels["action_id"].isin(differ))]
    path = tmp_path / "labels.csv"
    kept.to_csv(path, index=False)
    assert cli("import-labels", str(path), "--codebook", "traum").exit_code == 0
    book = find_codebook("traum").codebook
    skipped, silent = differ
    with Store(db_path) as s:
        s.labels.set_skipped(skipped, book, "caro", ["act"])
        s.labels.set_note(skipped, book, "ana", ["act"], "could be a repair")
        s.labels.set_flag(skipped, book, "ben", ["act"])
        before = s.actions.context(s.actions.action(skipped), before=1)[0]
    out = json.loads(cli("agree", "--disagreements", "--context", "1", "-f", "json").stdout)
    by_item = {d["item"]: d for d in out["disagreements"]["act"]}
    assert by_item[skipped]["answers"]["caro"] == "(skipped)"
    assert by_item[silent]["answers"]["caro"] == "(not coded)"
    assert by_item[skipped]["notes"] == {"ana": "could be a repair"}
    assert by_item[skipped]["flagged"] == ["ben"]
    from annotate.models import describe

    assert by_item[skipped]["context"] == [f"{before.speaker}: {describe(before)}"]
    table = cli("agree", "--disagreements", "--context", "1").stdout
    assert "(skipped)" in table and "(not coded)" in table
    assert "could be a repair" in table and "ben flagged" in table
    assert "> " in table  # the item under the turn before it


# -- the LLM's validation, `agree` and `report`: one figure (the real llama.cpp server) ---------

VALIDATION_ROW = re.compile(
    r"Fleiss' kappa, (LLM \+ gold|valid replies only \(as agree\))[\s│|]+(-?\d\.\d{3})"
    r"[\s│|]+(-?\d\.\d{3}) to (-?\d\.\d{3})[\s│|]+(\d+)"
)


@pytest.mark.real_llm
def test_llm_validation_agree_and_report_print_one_kappa_and_interval(
    real_server,  # noqa: F811  (the fixture imported above)
    tmp_path,
) -> None:
    import os
    import subprocess
    import sys

    from tests.test_llm_real_server import MODEL

    def annotate(db: Path, server: object, *args: str) -> subprocess.CompletedProcess[str]:
        """As a user runs it; a one-request server shared by others can take minutes each."""
        env = {**os.environ, "ANNOTATE_DB": str(db), "OPENAI_API_KEY": "sk-local",
               "COLUMNS": "120"}  # fmt: skip
        out = subprocess.run([sys.executable, "-m", "annotate", *args], capture_output=True,
                             text=True, env=env, timeout=3600, check=False)  # fmt: skip
        assert out.returncode == 0, f"annotate {' '.join(args)}:\n{out.stdout}\n{out.stderr}"
        return out

    db = tmp_path / "project.db"
    dialogue = REPO.parent / "shared" / "maptask" / "dialogues" / "q8nc2.txt"
    for args in (
        ["import", str(dialogue), "--labels-as", "hcrc", "--codebook", "hcrc_moves"],
        ["sample", "--n", "14", "--seed", "1", "--name", "main"],  # 10 held out, the least
        # with a bootstrap CI: a busy one-request server takes minutes per request
        ["split", "--codebook", "hcrc_moves", "--shots", "4", "--seed", "3", "--gold", "hcrc",
         "--sample", "main"],
    ):  # fmt: skip
        annotate(db, real_server, *args)
    validated = annotate(
        db, real_server, "llm-label", "--codebook", "hcrc_moves", "--shots", "4", "--model",
        MODEL, "--context", "0", "--validate-only", "--concurrency", "1", "--timeout", "600",
        "--base-url", real_server.base_url,
    ).stdout  # fmt: skip
    rows = {m[1]: m.groups()[1:] for m in VALIDATION_ROW.finditer(validated)}
    assert "LLM + gold" in rows, validated
    # with invalid replies the stored labels hold only the valid ones: the row "as agree"
    kappa, low, high, n = rows.get("valid replies only (as agree)", rows["LLM + gold"])
    agreed = annotate(db, real_server, "agree", "--codebook", "hcrc_moves", "--coders",
                      f"hcrc,llm:{MODEL}").stdout  # fmt: skip
    assert (kappa, low, high) == agree_kappa(agreed)
    assert int(n) == items_of(agreed)
    out = tmp_path / "report"
    annotate(db, real_server, "report", "--codebook", "hcrc_moves", "--out", str(out))
    stored = pd.read_csv(out / "llm_validation.csv").iloc[0]
    gate = rows["LLM + gold"]  # the report quotes the gate figure as llm-label printed it
    assert (f"{stored['kappa']:.3f}", f"{stored['ci_low']:.3f}", f"{stored['ci_high']:.3f}") == (
        gate[:3]
    )
    assert int(stored["items"]) == int(gate[3])


def test_export_takes_sample_all(cli, db_path) -> None:
    assert cli("import", str(DEMO)).exit_code == 0
    assert cli("sample", "--n", "5", "--seed", "1", "--name", "main").exit_code == 0
    every = cli("export", "--what", "actions", "--sample", "all")
    assert every.exit_code == 0, every.output
    assert len(pd.read_csv(io.StringIO(every.stdout))) == 343


def test_verify_an_ordinal_question_checks_weighted_kappas_and_both_alphas(
    cli, db_path, tmp_path
) -> None:
    import json

    from tests.test_agree_review import _ordinal_project

    _ordinal_project(cli, db_path, tmp_path)
    out = json.loads(cli("agree", "--verify", "-f", "json").stdout)
    names = [c["statistic"] for c in out["verified"]["checks"]]
    assert "Krippendorff's alpha (ordinal)" in names and "Krippendorff's alpha (nominal)" in names
    assert sum(n.startswith("Cohen's kappa (linear weights)") for n in names) == 3
    assert out["verified"]["ok"], out["verified"]["checks"]
    assert out["verified"]["max_difference"] < 1e-9
