"""Prompt, schema and parsing for the LLM coder (no network)."""

from __future__ import annotations

import json

import pytest

from annotate.codebook import Answer, Codebook, find_codebook
from annotate.models import Action
from llm_coder.prompt import (
    TARGET_MARKER,
    Item,
    Shot,
    prefix_messages,
    prompt_hash,
    render_action,
    render_item,
    sha256_json,
    target_message,
)
from llm_coder.runner import PromptBuilder, majority
from llm_coder.schema import answer_schema, parse_reply, response_format
from tests.chat_server import target_text

MOVES = Codebook.model_validate(
    {
        "name": "moves",
        "title": "Moves",
        "version": "1",
        "instructions": "Code the move.",
        "questions": [
            {
                "id": "move",
                "prompt": "Which move?",
                "allow_other": True,
                "options": [
                    {
                        "code": "instruct",
                        "label": "Instruct",
                        "key": "i",
                        "definition": "A command.",
                    },
                    {"code": "acknowledge", "label": "Acknowledge", "key": "a", "examples": ["ok"]},
                ],
            }
        ],
    }
)


def act(seq: int, text: str, role: str = "giver", session: str = "s1") -> Action:
    return Action(
        id=f"{session}-{seq}",
        session=session,
        seq=seq,
        action_type="message",
        content=text,
        participant=role[0],
        role=role,
        elapsed_s=float(seq),
    )


def item(seq: int, text: str, context: int = 2) -> Item:
    before = tuple(act(s, f"line {s}") for s in range(max(0, seq - context), seq))
    return Item(act(seq, text), before)


def test_render_action_is_one_line_with_time_and_speaker():
    line = render_action(act(3, "go\n  left", role="giver"))
    assert line == "[#3 +3.0s] giver, message: go left"


def test_item_shows_context_then_target_last():
    text = render_item(item(5, "go left"))
    lines = text.splitlines()
    assert lines[0] == "Session s1"
    assert "line 3" in lines[2] and "line 4" in lines[3]
    assert lines[-2] == TARGET_MARKER
    assert lines[-1].endswith("message: go left")
    assert target_text({"messages": [{"role": "user", "content": text}]}) == "go left"


def test_prefix_is_stable_and_shots_are_worked_examples():
    shots = [Shot(item(2, "ok"), {"move": Answer("acknowledge")})]
    a = prefix_messages(MOVES, shots)
    b = prefix_messages(MOVES, shots)
    assert a == b and prompt_hash(a) == prompt_hash(b)
    assert [m["role"] for m in a] == ["system", "user", "assistant"]
    assert json.loads(a[2]["content"]) == {"move": {"code": "acknowledge", "other_text": None}}
    system = a[0]["content"]
    assert "instruct: Instruct. A command." in system
    assert "Examples: ok." in system
    assert "- other:" in system
    builder = PromptBuilder(MOVES, shots)
    m1, m2 = builder.messages(item(7, "go")), builder.messages(item(9, "stop"))
    assert m1[:-1] == m2[:-1] == a
    assert m1[-1] == target_message(item(7, "go"))


def test_prompt_hash_changes_with_shots():
    one = prefix_messages(MOVES, [Shot(item(2, "ok"), {"move": Answer("acknowledge")})])
    other = prefix_messages(MOVES, [Shot(item(2, "ok"), {"move": Answer("instruct")})])
    assert prompt_hash(one) != prompt_hash(other)
    assert sha256_json({"b": 1, "a": 2}) == sha256_json({"a": 2, "b": 1})


def test_schema_enumerates_codes_and_is_strict():
    schema = answer_schema(MOVES.questions)
    move = schema["properties"]["move"]
    assert move["properties"]["code"]["enum"] == ["instruct", "acknowledge", "other"]
    assert schema["required"] == ["move"] and schema["additionalProperties"] is False
    assert response_format("json_schema", schema)["json_schema"]["strict"] is True
    assert response_format("json_object", schema) == {"type": "json_object"}
    assert response_format("none", schema) is None


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"move": {"code": "instruct", "other_text": null}}', Answer("instruct")),
        ('{"move": "acknowledge"}', Answer("acknowledge")),
        ('Sure:\n```json\n{"move": {"code": "instruct"}}\n```', Answer("instruct")),
        ('{"move": {"code": "other", "other_text": "greeting"}}', Answer("other", (), "greeting")),
        ('{"move": {"code": "instruct", "other_text": "ignored"}}', Answer("instruct")),
    ],
)
def test_parse_valid(reply, expected):
    parsed = parse_reply(reply, MOVES.questions)
    assert parsed.valid and parsed.answers == {"move": expected}


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ('{"move": {"code": "instruct"', "the reply is not valid JSON"),
        ("no idea", "the reply is not valid JSON"),
        ("[1]", "the reply is not a JSON object"),
        ("{}", "question move is not answered"),
        ('{"move": {"code": "Instruct"}}', "question move: unknown code 'Instruct'"),
        ('{"move": {"code": "other"}}', "question move: 'other' needs a free-text description"),
    ],
)
def test_parse_invalid_is_never_coerced(reply, error):
    parsed = parse_reply(reply, MOVES.questions)
    assert not parsed.valid and parsed.error == error


def test_mental_model_is_one_json_object():
    cb = find_codebook("mental_model").codebook
    schema = answer_schema(cb.questions)
    assert list(schema["properties"]) == ["Q1", "Q2", "Q3", "Q4"]
    q4 = schema["properties"]["Q4"]["properties"]
    assert q4["answer"]["enum"] == ["yes", "no"]
    assert "n1" in q4["reasons"]["items"]["enum"]
    reply = json.dumps(
        {
            "Q1": {"code": "t2", "other_text": None},
            "Q2": {"code": "other", "other_text": "was distracted"},
            "Q3": {"code": "r4", "other_text": None},
            "Q4": {"answer": "no", "reasons": ["n2", "n4"], "other_text": None},
        }
    )
    parsed = parse_reply(reply, cb.questions)
    assert parsed.answers == {
        "Q1": Answer("t2"),
        "Q2": Answer("other", (), "was distracted"),
        "Q3": Answer("r4"),
        "Q4": Answer("no", ("n2", "n4")),
    }
    bad = json.loads(reply)
    bad["Q4"] = {"answer": "yes", "reasons": ["n1"], "other_text": None}
    assert parse_reply(json.dumps(bad), cb.questions).error == (
        "question Q4: reasons are only given with 'no'"
    )
    assert "Q4" in prefix_messages(cb, [])[0]["content"]


def test_majority_and_confidence():
    q = MOVES.questions
    a, b = {"move": Answer("instruct")}, {"move": Answer("acknowledge")}
    assert majority([a, a, b], q) == (a, pytest.approx(2 / 3))
    assert majority([a, None, None], q) == (a, pytest.approx(1 / 3))
    assert majority([b, a], q) == (b, 0.5)  # first seen wins a tie
    assert majority([None, None], q) == (None, None)


def test_drawing_actions_read_as_on_the_coding_screen():
    draw = Action(id="d", session="s", seq=4, action_type="draw", content='{"x": 1}', role="f")
    assert render_action(draw) == "[#4] f, draw: [draws a stroke]"
