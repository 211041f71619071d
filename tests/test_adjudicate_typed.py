"""Adjudication of free-text and number questions: the one gold planner makes gold of a
strict majority of equal answers (a number in its one stored form), and the screen lets the
adjudicator pick a coder's answer (1-9) or type the gold (t), a number within min/max/step."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from annotate.cli import app as cli_app
from annotate.codebook import Answer, LoadedCodebook, parse_codebook
from annotate.io.importing import import_files
from annotate.reliability.majority_pass import adjudicate_majority
from annotate.reliability.selection import select
from annotate.store import Store
from annotate.tui.screens.adjudicate import AdjudicationScreen, make_app
from annotate.tui.screens.rationale import TextAnswerPrompt
from tests.conftest import REPO

BOOK = """
name: probe
title: Probe
version: "1"
questions:
  - id: state
    prompt: What is the task state?
    kind: text
  - id: conf
    prompt: How confident are you?
    kind: number
    min: 0
    max: 1
    step: 0.05
"""
CODERS = ("ana", "ben", "caro")
# per item: (state answers, conf answers) of ana, ben, caro
VOTES = [
    (("at the mill", "at the mill", "near the lake"), ("0.5", "0.5", "0.7")),  # majorities
    (("lost", "exploring", "at the start"), ("0.2", "0.4", "0.6")),  # ties
    (("going south", "going south", "going south"), ("1", "1", None)),  # majority of 3
]


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, list[str]]:
    db = tmp_path / "p.db"
    cb = parse_codebook(BOOK, "probe.yaml")
    with Store(db) as store:
        import_files(store, sorted((REPO / "data" / "demo_self" / "log").glob("*.jsonl")))
        store.codebooks.register_codebook(LoadedCodebook(cb, BOOK, "probe.yaml"))
        ids = [r[0] for r in store.db.query("SELECT id FROM actions ORDER BY session, seq")]
        ids = ids[: len(VOTES)]
        for action_id, (texts, numbers) in zip(ids, VOTES, strict=True):
            for coder, text, number in zip(CODERS, texts, numbers, strict=True):
                store.labels.save_answer(action_id, cb, "state", coder, Answer(text))
                if number is not None:
                    store.labels.save_answer(action_id, cb, "conf", coder, Answer(number))
    return db, ids


def _plan(store: Store):
    selection = select(store, codebook="probe", coders=list(CODERS), purpose="adjudication")
    return adjudicate_majority(store, selection, "zoe", read_cases=True)


def _gold(store: Store) -> dict[tuple[str, str], dict]:
    rows = store.labels.label_rows("probe", coders=["gold"])
    return {(g["action_id"], g["question"]): g for g in rows}


def test_a_majority_of_equal_texts_or_numbers_is_gold(project) -> None:
    db, ids = project
    with Store(db) as store:
        plan, written = _plan(store)
        gold = _gold(store)
    assert written == 4
    assert gold[ids[0], "state"]["value"] == "at the mill"
    assert gold[ids[0], "conf"]["value"] == "0.5"
    assert gold[ids[2], "state"]["value"] == "going south"
    assert gold[ids[2], "conf"]["value"] == "1"  # 2 of 3 selected coders, the third silent
    assert gold[ids[0], "conf"]["meta"]["reason"] == "majority 2 of 3"
    to_decide = {(c.action_id, c.question.id) for c in plan.to_decide}
    assert to_decide == {(ids[1], "state"), (ids[1], "conf")}


def test_the_cli_adjudicates_text_and_number_questions(project) -> None:
    db, _ = project
    r = CliRunner().invoke(cli_app, ["adjudicate", "--codebook", "probe", "--majority-only",
                                     "--adjudicator", "zoe", "--db", str(db)])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "skipped" not in r.output
    with Store(db) as store:
        assert len(_gold(store)) == 4


async def test_a_text_case_takes_a_coders_answer_by_its_key(project) -> None:
    db, ids = project
    with Store(db) as store:
        plan, _ = _plan(store)
        app = make_app(store, plan, "zoe")
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            assert isinstance(app.screen, AdjudicationScreen)
            while app.session.case.question.id != "state":
                await pilot.press("right")
            text = app.export_screenshot().replace("&#160;", " ")
            assert "exploring (ben)" in text and "Type the gold text" in text
            await pilot.press("2")  # ben's answer
            await pilot.pause()
            gold = _gold(store)[ids[1], "state"]
            assert gold["value"] == "exploring" and gold["meta"]["method"] == "decided"
            votes = {"ana": "lost", "ben": "exploring", "caro": "at the start"}
            assert gold["meta"]["votes"] == votes


async def test_a_number_case_takes_a_typed_number_within_the_range(project) -> None:
    db, ids = project
    with Store(db) as store:
        plan, _ = _plan(store)
        app = make_app(store, plan, "zoe")
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            while app.session.case.question.id != "conf":
                await pilot.press("right")
            await pilot.press("t")
            await pilot.pause()
            assert isinstance(app.screen, TextAnswerPrompt)
            await pilot.press("escape")  # nothing stored
            await pilot.pause()
            assert isinstance(app.screen, AdjudicationScreen)
            assert (ids[1], "conf") not in _gold(store)
            await pilot.press("t")
            await pilot.pause()
            await pilot.press("ctrl+a", "ctrl+k", *"1.5", "enter")  # outside 0 to 1: refused
            await pilot.pause()
            assert isinstance(app.screen, TextAnswerPrompt)
            assert (ids[1], "conf") not in _gold(store)
            await pilot.press("ctrl+a", "ctrl+k", *"0.45", "enter")
            await pilot.pause()
            assert isinstance(app.screen, AdjudicationScreen)
            gold = _gold(store)[ids[1], "conf"]
            assert gold["value"] == "0.45" and gold["meta"]["method"] == "decided"


def test_a_typed_number_off_the_step_is_refused_by_the_session(project) -> None:
    from annotate.reliability.adjudication import AdjudicationSession

    db, ids = project
    with Store(db) as store:
        plan, _ = _plan(store)
        session = AdjudicationSession(store, plan, "zoe")
        while session.case.question.id != "conf":
            session.go(1)
        feedback = session.answer_typed("0.33")
        assert feedback is not None and feedback.kind == "warning" and "0.33" in feedback.message
        assert (ids[1], "conf") not in _gold(store)
        assert session.answer_typed("0.40").kind == "saved"
        assert _gold(store)[ids[1], "conf"]["value"] == "0.4"
