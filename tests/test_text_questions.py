"""Free-text questions (``kind: text``): the codebook model, the shipped
``mental_model_self``, storage, export, agreement (the texts' similarity) and the LLM prompt."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from annotate.cli import app as cli_app
from annotate.codebook import Answer, find_codebook, parse_codebook
from annotate.errors import CodebookError
from annotate.io.importing import import_files
from annotate.store import Store
from llm_coder.prompt import render_codebook
from llm_coder.schema import answer_schema, parse_reply
from tests.test_coding_support import REPO

TEXT_BOOK = """
name: why
title: Why
version: "1"
questions:
  - id: R
    prompt: What was I trying to do?
    kind: text
    min_chars: 5
  - id: A
    prompt: Act
    options: [{code: a, label: A, key: "1"}, {code: b, label: B, key: "2"}]
"""


def _book(text: str = TEXT_BOOK):
    return parse_codebook(text, "why.yaml")


def test_text_question_model_and_answers() -> None:
    cb = _book()
    r = cb.question("R")
    assert (r.kind, r.min_chars, r.options, r.codes, r.set_codes) == ("text", 5, [], [], [])
    Answer("to see the lake").check(r)
    for bad, message in [
        (Answer("lake"), "write at least 5 characters (4 so far)"),
        (Answer("   "), "no text given"),
        (Answer("to see it", ("a",)), "a text answer is the text alone"),
        (Answer("to see it", other_text="x"), "a text answer is the text alone"),
    ]:
        with pytest.raises(CodebookError, match=re.escape(message)):
            bad.check(r)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("    options: [{code: a, label: A, key: '1'}]\n", "a text question has no options"),
        ("    allow_other: true\n", "a text question has no 'other'"),
    ],
)
def test_text_question_refuses_options_and_other(change: str, message: str) -> None:
    text = TEXT_BOOK.replace("    min_chars: 5\n", "    min_chars: 5\n" + change)
    with pytest.raises(CodebookError, match=message):
        _book(text)


def test_min_chars_only_on_text_and_choices_still_need_options() -> None:
    with pytest.raises(CodebookError, match=r"questions\[1\]: .*min_chars is for text"):
        _book(TEXT_BOOK + "    min_chars: 3\n")
    with pytest.raises(CodebookError, match=r"questions\[1\].options: Field required"):
        _book(TEXT_BOOK.replace(
            '    options: [{code: a, label: A, key: "1"}, {code: b, label: B, key: "2"}]\n', ""
        ))  # fmt: skip


def test_mental_model_self_is_the_survey_with_the_rationale_first() -> None:
    own = find_codebook("mental_model_self").codebook
    survey = find_codebook("mental_model").codebook
    assert own.questions[0].kind == "text" and own.questions[0].id == "R"
    assert own.questions[0].min_chars == 10
    assert "what was i trying to do" in own.questions[0].prompt.lower()
    assert own.questions[1:] == survey.questions  # Q1-Q4 word for word (first person)
    assert all(" my" in q.prompt or "I " in q.prompt for q in own.questions[1:])
    # the shipped codebooks without text questions keep their hashes (traum: its 1.1)
    assert survey.version_hash == "bdbebcb2fbcf"
    assert find_codebook("traum").codebook.version_hash == "df387c5b9632"


@pytest.fixture
def labelled(tmp_path: Path) -> Path:
    """The demo_self session with two participants' answers on Rosa's actions."""
    db = tmp_path / "p.db"
    cb = find_codebook("mental_model_self")
    with Store(db) as store:
        import_files(store, sorted((REPO / "data" / "demo_self" / "log").glob("*.jsonl")))
        store.codebooks.register_codebook(cb)
        ids = [r[0] for r in store.db.query(
            "SELECT id FROM actions WHERE participant = 'Rosa' AND action_type = 'message' "
            "ORDER BY seq"
        )]  # fmt: skip
        for n, action_id in enumerate(ids):
            for coder, q1 in (("self:Rosa", "t3"), ("ana", "t3" if n % 3 else "t2")):
                store.labels.save_answer(
                    action_id, cb.codebook, "R", coder, Answer(f"plan step {n}")
                )
                store.labels.save_answer(action_id, cb.codebook, "Q1", coder, Answer(q1))
                for q, code in (("Q2", "p1"), ("Q3", "r4")):
                    store.labels.save_answer(action_id, cb.codebook, q, coder, Answer(code))
                q4 = Answer("no", ("n3",)) if n < 2 else Answer("yes")
                store.labels.save_answer(action_id, cb.codebook, "Q4", coder, q4)
    return db


def test_text_answer_stored_as_value_and_exported(labelled: Path) -> None:
    with Store(labelled) as store:
        rows = store.db.query(
            "SELECT value, codes, other_text FROM labels WHERE question = 'R' AND coder = 'ana'"
        )
    assert len(rows) == 7
    assert all(r["value"].startswith("plan step ") for r in rows)
    assert all(r["codes"] is None and r["other_text"] is None for r in rows)
    r = CliRunner().invoke(
        cli_app,
        ["export", "--what", "labels", "--format", "csv", "--codebook", "mental_model_self",
         "--db", str(labelled)],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    exported = list(csv.DictReader(io.StringIO(r.stdout)))
    texts = {row["value"] for row in exported if row["question"] == "R"}
    assert texts == {f"plan step {n}" for n in range(7)}


def test_agreement_gives_text_questions_similarity_and_says_so(labelled: Path) -> None:
    runner = CliRunner()
    args = ["agree", "--codebook", "mental_model_self", "--coders", "self:Rosa,ana"]
    r = runner.invoke(cli_app, [*args, "--db", str(labelled)])
    assert r.exit_code == 0, r.output
    assert "free-text question R: similarity of the texts (SBERT, ROUGE-L)" in r.stderr
    assert "Q1" in r.stdout and "SBERT cosine" in r.stdout and "ROUGE-L F1" in r.stdout
    r = runner.invoke(cli_app, [*args, "--question", "R", "--db", str(labelled)])
    assert r.exit_code == 0, r.output
    assert "SBERT cosine" in r.stdout and "Q1" not in r.stdout
    r = runner.invoke(cli_app, [*args, "--question", "R", "--disagreements", "--db", str(labelled)])
    assert r.exit_code == 1
    assert "free-text answers have none" in r.stderr


def test_llm_prompt_and_reply_include_the_text_question() -> None:
    cb = find_codebook("mental_model_self").codebook
    prompt = render_codebook(cb)
    assert (
        "Question R: What was I trying to do with this action? "
        "(answer in your own words, at least 10 characters)" in prompt
    )
    assert '"R": {"text": "<free text>"}' in prompt
    schema = answer_schema(cb.questions)
    assert schema["properties"]["R"]["properties"] == {"text": {"type": "string"}}
    reply = (
        '{"R": {"text": "find the lake side"}, "Q1": {"code": "t1", "other_text": null}, '
        '"Q2": {"code": "p1", "other_text": null}, "Q3": {"code": "r1", "other_text": null}, '
        '"Q4": {"answer": "yes", "reasons": [], "other_text": null}}'
    )
    parsed = parse_reply(reply, cb.questions)
    assert parsed.valid and parsed.answers["R"] == Answer("find the lake side")
    short = parse_reply(reply.replace("find the lake side", "lake"), cb.questions)
    assert not short.valid and "at least 10 characters" in (short.error or "")


def test_codebooks_show_describes_a_text_question() -> None:
    r = CliRunner().invoke(cli_app, ["codebooks", "show", "mental_model_self"])
    assert r.exit_code == 0, r.output
    assert "R (text): What was I trying to do with this action?" in r.stdout
    assert "Free text, at least 10 characters (agreement skips it)." in r.stdout
    assert yaml.safe_load((REPO / "codebooks" / "mental_model_self.yaml").read_text())
