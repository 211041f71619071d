"""`agree` (and `adjudicate`) without --codebook, on a file that holds an imported corpus
coding beside human coders: it takes the one codebook two or more coders share items on,
and otherwise lists the codebooks and says what to run."""

from __future__ import annotations

import csv
import json
import shlex
from pathlib import Path

import pytest

from annotate.store import Store
from tests.conftest import DEMO

TRAUM = ["Initiate", "Continue", "Acknowledge"]
MOVES = ["instruct", "acknowledge", "check", "align", "explain", "ready"]


def write_dialogue(folder: Path, name: str = "q9ec1", n: int = 60) -> Path:
    """A Map Task file (speaker|text|label) with the corpus' own move labels."""
    path = folder / f"{name}.txt"
    lines = [f"{'gf'[i % 2]}|turn {i} of {name}|{MOVES[i % len(MOVES)]}" for i in range(n)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main_items(db: Path) -> list[str]:
    with Store(db) as s:
        return list(s.samples.sample_ids("main"))


def import_codings(cli, tmp_path: Path, codebook: str, rows: list[dict]) -> None:
    path = tmp_path / f"{codebook}-{len(rows)}.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, ["action_id", "coder", "question", "value", "codes"])
        writer.writeheader()
        writer.writerows(rows)
    r = cli("import-labels", str(path), "--codebook", codebook)
    assert r.exit_code == 0, r.output


def traum_rows(items: list[str], coders: list[str]) -> list[dict]:
    return [
        {"action_id": a, "coder": c, "question": "act", "value": TRAUM[(i + k * (i % 3)) % 3]}
        for k, c in enumerate(coders)
        for i, a in enumerate(items)
    ]


def q4_rows(items: list[str], coders: list[str]) -> list[dict]:
    rows = []
    for k, c in enumerate(coders):
        for i, a in enumerate(items):
            no = (i + k) % 3 == 0
            value, codes = ("no", "n1") if no else ("yes", "")
            rows.append(
                {"action_id": a, "coder": c, "question": "Q4", "value": value, "codes": codes}
            )
    return rows


@pytest.fixture
def corpus(cli, db_path, tmp_path) -> Path:
    """Demo data, a Map Task dialogue with its corpus coding 'hcrc', a sample 'main'."""
    assert cli("import", str(DEMO)).exit_code == 0
    dialogue = write_dialogue(tmp_path)
    r = cli("import", str(dialogue), "--labels-as", "hcrc", "--codebook", "hcrc_moves")
    assert r.exit_code == 0, r.output
    r = cli("sample", "--n", "30", "--seed", "7", "--name", "main", "--stratify", "condition",
            "--where", "action_type = 'message'")  # fmt: skip
    assert r.exit_code == 0, r.output
    return db_path


def runs(db: Path) -> list[tuple]:
    with Store(db) as s:
        return [tuple(r) for r in s.db.query("SELECT id, codebook, coders FROM agreement_runs")]


def error_lines(r) -> list[str]:
    return r.stderr.strip().splitlines()


def test_the_corpus_coding_does_not_hide_the_codebook_two_coders_share(
    cli, corpus, tmp_path
) -> None:
    items = main_items(corpus)
    import_codings(cli, tmp_path, "traum", traum_rows(items, ["ana", "ben"]))
    r = cli("agree", "--format", "markdown")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("## Inter-coder agreement: traum\n")
    assert runs(corpus) == [(1, "traum", '["ana", "ben"]')]
    r = cli("agree")
    assert r.exit_code == 0
    assert r.stderr.splitlines()[0] == (
        "defaults: codebook traum (the only one with 2 or more coders on shared items); "
        "sample main; coders ana, ben"
    )


def test_a_corpus_coding_alone_says_a_second_coder_is_needed(cli, corpus) -> None:
    with Store(corpus) as s:
        n = s.agreement.coders_with_answers("hcrc_moves", s.samples.sample_ids("main"))["hcrc"]
    assert n > 0
    r = cli("agree", "--format", "markdown")
    assert r.exit_code == 1 and r.stdout == ""
    assert error_lines(r) == [
        "error: agreement needs at least 2 coders; got 1 (hcrc) on codebook 'hcrc_moves' in "
        "sample 'main'",
        "hint: a second coder codes the same items: `annotate code --codebook hcrc_moves "
        f"--sample main --coder NAME --new-coder`, then run this again; coders: hcrc ({n} labels)",
    ]
    assert runs(corpus) == []


def test_no_codebook_with_two_coders_lists_them_and_the_command(cli, corpus, tmp_path) -> None:
    items = main_items(corpus)
    with Store(corpus) as s:
        sql = (
            "SELECT 1 FROM labels WHERE coder = 'hcrc' AND action_id IN "
            "(SELECT action_id FROM sample_items WHERE sample = 'main')"
        )
        in_main = len(s.db.query(sql))
    assert in_main > 0  # the corpus coding reaches into the sample
    import_codings(cli, tmp_path, "traum", traum_rows(items, ["ana"]))
    for args in ([], ["--format", "markdown"], ["--disagreements"]):
        r = cli("agree", *args)
        assert r.exit_code == 1
        assert error_lines(r) == [
            "error: no codebook has 2 or more coders on shared items in sample 'main': "
            "hcrc_moves (1 coder hcrc), traum (1 coder ana)",
            "hint: a second coder codes the same items: `annotate code --codebook traum "
            "--sample main --coder NAME --new-coder`, then run this again",
        ]
        assert r.stdout == ""
    assert runs(corpus) == []


def test_several_codebooks_name_the_command_with_its_options(
    cli, corpus, db_path, tmp_path
) -> None:
    items = main_items(corpus)
    import_codings(cli, tmp_path, "traum", traum_rows(items, ["ana", "ben"]))
    import_codings(cli, tmp_path, "mental_model", q4_rows(items, ["ana", "ben", "caro"]))
    r = cli("agree", "--format", "markdown", "--ci", "0.9")
    assert r.exit_code == 1
    n = len(items)
    assert error_lines(r) == [
        "error: 2 codebooks have 2 or more coders on shared items in sample 'main'; name one "
        f"with --codebook: hcrc_moves (1 coder hcrc), mental_model (3 coders ana, ben, caro, "
        f"{n} shared items), traum (2 coders ana, ben, {n} shared items)",
        "hint: run `annotate agree --codebook mental_model --format markdown --ci 0.9 "
        f"--db {db_path}`",
    ]
    assert runs(corpus) == []
    hinted = shlex.split(error_lines(r)[1].split("`")[1])
    assert hinted[0] == "annotate"
    r = cli(*hinted[1:], db=None)
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("## Inter-coder agreement: mental_model\n")
    assert runs(corpus) == [(1, "mental_model", '["ana", "ben", "caro"]')]


def test_named_coders_and_question_choose_the_codebook(cli, corpus, tmp_path) -> None:
    items = main_items(corpus)
    import_codings(cli, tmp_path, "traum", traum_rows(items, ["ana", "ben", "caro"]))
    import_codings(cli, tmp_path, "mental_model", q4_rows(items, ["ana", "ben", "caro"]))
    r = cli("agree", "--coders", "ana,ben,caro", "--question", "Q4", "--ci", "0.9", "-f", "json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert (out["codebook"], out["questions"], out["coders"]) == (
        "mental_model",
        ["Q4"],
        ["ana", "ben", "caro"],
    )
    assert out["settings"]["ci"] == 0.9
    r = cli("agree", "--question", "Q9")
    assert r.exit_code == 1
    assert error_lines(r) == [
        "error: no labelled codebook has a question Q9",
        "hint: questions: hcrc_moves move; mental_model Q1, Q2, Q3, Q4; traum act",
    ]
    r = cli("agree", "--coders", "ana,dan", "--question", "Q4")
    assert r.exit_code == 1
    assert error_lines(r)[0] == (
        "error: no codebook has labels by every coder named in sample 'main': hcrc_moves "
        "(no question Q4), mental_model (no labels by dan on Q4), traum (no question Q4)"
    )
    assert len(runs(corpus)) == 1


def test_adjudicate_chooses_the_same_way(cli, corpus, tmp_path) -> None:
    items = main_items(corpus)
    import_codings(cli, tmp_path, "traum", traum_rows(items, ["ana", "ben", "caro"]))
    r = cli("adjudicate", "--majority-only", "--adjudicator", "lead")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("majority: more than half of the 3 selected coders")
    assert "\ntraum, sample 'main', coders ana, ben, caro: majority gold" in r.stdout
    with Store(corpus) as s:
        gold = s.db.query("SELECT DISTINCT codebook FROM labels WHERE coder = 'gold'")
    assert [tuple(g) for g in gold] == [("traum",)]
