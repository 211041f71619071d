"""Number questions (``kind: number``): the codebook model, answers checked and stored in
canonical form, import from CSV and from probe logs, and agreement (alpha and ICC) through
`annotate agree`, reproducing Shrout & Fleiss' (1979) table."""

from __future__ import annotations

import json
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from typer.testing import CliRunner

from annotate.cli import app as cli_app
from annotate.codebook import Answer, LoadedCodebook, parse_codebook
from annotate.errors import CodebookError
from annotate.io.importing import import_files
from annotate.store import Store
from tests.test_agreement_icc import SHROUT_FLEISS
from tests.test_coding_support import REPO

BOOK = """
name: rate
title: Ratings
version: "1"
questions:
  - id: conf
    prompt: How confident are you?
    kind: number
    min: 0
    max: 1
    step: 0.05
  - id: score
    prompt: Score
    kind: number
    min: 0
    max: 10
"""


def _book(text: str = BOOK):
    return parse_codebook(text, "rate.yaml")


def test_number_answers_are_checked_and_canonical():
    q = _book().question("conf")
    assert (q.kind, q.min, q.max, q.step, q.codes, q.numeric_level) == (
        "number", 0.0, 1.0, 0.05, [], "interval"
    )
    assert Answer.number("0.80", q) == Answer("0.8")
    assert Answer.number(1, q) == Answer("1")
    assert Answer.number(" 8e-1 ", q) == Answer("0.8")
    for bad, message in [
        ("1.2", "1.2 is outside 0 to 1"),
        ("-0.1", "-0.1 is outside 0 to 1"),
        ("0.33", "0.33 is not a multiple of step 0.05"),
        ("high", "'high' is not a number"),
        ("nan", "'nan' is not a finite number"),
        ("", "no number given"),
    ]:
        with pytest.raises(CodebookError, match=message):
            Answer.number(bad, q)
    with pytest.raises(CodebookError, match=r"store the number as '0.8'"):
        Answer("0.80").check(q)
    with pytest.raises(CodebookError, match="the number alone"):
        Answer("0.8", ("a",)).check(q)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BOOK.replace("    max: 1\n", "    max: -1\n"), "min 0 is above max -1"),
        (BOOK.replace("    step: 0.05\n", "    options: [{code: a, label: A, key: '1'}]\n"),
         "a number question has no options"),
        (BOOK.replace("    step: 0.05\n", "    step: 0\n"), "greater than 0"),
        (BOOK.replace("    step: 0.05\n", "    allow_other: true\n"), "has no 'other'"),
        (BOOK.replace("    kind: number\n    min: 0\n    max: 10\n",
                      "    options: [{code: a, label: A, key: '1'}]\n    min: 0\n"),
         "min: for number questions"),
        (BOOK.replace("    max: 10\n", "    max: 10\n    level: ratio\n").replace(
            "    min: 0\n    max: 10", "    min: -5\n    max: 10"), "ratio needs non-negative"),
    ],
)  # fmt: skip
def test_codebook_mistakes_are_named(text: str, message: str):
    with pytest.raises(CodebookError, match=message):
        _book(text)


def test_codebooks_without_numbers_keep_their_hashes():
    from annotate.codebook import find_codebook

    assert find_codebook("mental_model").codebook.version_hash == "bdbebcb2fbcf"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    db = tmp_path / "p.db"
    with Store(db) as store:
        import_files(store, sorted((REPO / "data" / "demo_self" / "log").glob("*.jsonl")))
        store.codebooks.register_codebook(LoadedCodebook(_book(), BOOK, "rate.yaml"))
    (tmp_path / "rate.yaml").write_text(BOOK)
    return db


def _import(path: Path, db: Path, *extra: str):
    return _cli("import-labels", str(path), "--codebook", str(db.parent / "rate.yaml"),
                *extra, "--db", str(db))  # fmt: skip


def _ids(db: Path, n: int) -> list[str]:
    with Store(db) as store:
        return [r[0] for r in store.db.query("SELECT id FROM actions ORDER BY session, seq")][:n]


def _cli(*args: str) -> object:
    return CliRunner().invoke(cli_app, list(args))


def test_import_labels_csv_stores_canonical_numbers_and_names_bad_lines(project, tmp_path):
    ids = _ids(project, 2)
    good = tmp_path / "good.csv"
    good.write_text(
        "action_id,question,coder,value\n"
        f"{ids[0]},conf,ana,0.80\n{ids[1]},conf,ana,1\n{ids[0]},score,ana,7.5\n"
    )
    r = _import(good, project)
    assert r.exit_code == 0, r.output
    with Store(project) as store:
        values = [row[0] for row in store.db.query("SELECT value FROM labels WHERE coder = 'ana'")]
    assert sorted(values) == ["0.8", "1", "7.5"]
    bad = tmp_path / "bad.csv"
    bad.write_text(f"action_id,question,coder,value\n{ids[0]},conf,ben,0.7\n{ids[1]},conf,ben,3\n")
    r = _import(bad, project)
    assert r.exit_code == 1
    assert "bad.csv" in r.stderr and ":3" in r.stderr and "3 is outside 0 to 1" in r.stderr
    with Store(project) as store:  # nothing of the file is stored
        assert not store.db.query("SELECT 1 FROM labels WHERE coder = 'ben'")


def test_agree_on_numbers_reproduces_shrout_fleiss(project, tmp_path):
    ids = _ids(project, 6)
    rows = ["action_id,question,coder,value"]
    for action_id, ratings in zip(ids, SHROUT_FLEISS, strict=True):
        rows += [f"{action_id},score,judge{j + 1},{x}" for j, x in enumerate(ratings)]
    path = tmp_path / "judges.csv"
    path.write_text("\n".join(rows) + "\n")
    assert _import(path, project).exit_code == 0
    args = ["agree", "--codebook", "rate", "--coders", "judge1,judge2,judge3,judge4",
            "--question", "score", "--db", str(project)]  # fmt: skip
    r = _cli(*args, "--format", "json")
    assert r.exit_code == 0, r.output
    (result,) = json.loads(r.stdout)["number_agreement"]
    assert round(result["icc"]["single"], 2) == 0.29
    assert round(result["icc"]["average"], 2) == 0.62
    expected = krippendorff.alpha(
        reliability_data=np.array(SHROUT_FLEISS, dtype=float).T, level_of_measurement="interval"
    )
    assert result["alpha"]["alpha"] == pytest.approx(expected)
    table = _cli(*args)
    assert "ICC(A,1) single" in table.stdout and "0.290" in table.stdout
    assert "ICC(A,4) average" in table.stdout and "0.620" in table.stdout
    assert "number question score: Krippendorff's alpha and ICC" in table.stderr


def test_probe_log_numbers_through_the_mapping(project, tmp_path):
    ids = _ids(project, 2)
    mapping = tmp_path / "map.yaml"
    mapping.write_text("codebook: rate\nquestions:\n  confidence:\n    to: conf\n")
    log = tmp_path / "probes.jsonl"
    log.write_text(
        json.dumps({"action_id": ids[0], "participant": "Rosa", "question": "confidence",
                    "answer": 0.85}) + "\n"
        + json.dumps({"action_id": ids[1], "participant": "Rosa", "question": "confidence",
                      "answer": "1.0"}) + "\n"
    )  # fmt: skip
    r = _import(log, project, "--mapping", str(mapping))
    assert r.exit_code == 0, r.output
    with Store(project) as store:
        got = sorted(row[0] for row in store.db.query("SELECT value FROM labels"))
    assert got == ["0.85", "1"]
    log.write_text(json.dumps({"action_id": ids[0], "participant": "Rosa",
                               "question": "confidence", "answer": 1.5}) + "\n")  # fmt: skip
    r = _import(log, project, "--mapping", str(mapping))
    assert r.exit_code == 1 and "probes.jsonl:1" in r.stderr and "outside 0 to 1" in r.stderr


async def test_a_number_is_typed_in_the_coding_screen(tmp_path):
    from annotate.tui.app import make_app
    from annotate.tui.screens.rationale import TextAnswerPrompt
    from tests.test_coding_support import project as demo_project
    from tests.test_coding_support import sample_ids
    from tests.test_tui_app import keys

    db = demo_project(tmp_path)
    book = tmp_path / "rate.yaml"
    book.write_text(BOOK)
    first = sample_ids(db)[0]
    app = make_app(db, str(book), "dora")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, TextAnswerPrompt)  # the field opens with the item
        await keys(pilot, "1.5", "enter")  # outside 0 to 1: said in the field, not stored
        assert isinstance(app.screen, TextAnswerPrompt)
        hint = str(app.screen.query_one("#text-hint").render())
        assert "1.5 is outside 0 to 1" in hint
        for _ in range(3):
            await pilot.press("backspace")
        await keys(pilot, "0.80", "enter")
        await pilot.pause()
        await keys(pilot, "7", "enter")  # the second question, score
        await pilot.pause()
    with Store(db) as store:
        rows = store.db.query(
            "SELECT question, value FROM labels WHERE coder = 'dora' AND action_id = ? "
            "ORDER BY question", (first,),
        )  # fmt: skip
    assert [tuple(r) for r in rows] == [("conf", "0.8"), ("score", "7")]
