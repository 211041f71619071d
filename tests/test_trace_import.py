"""Multi-agent traces (issue 36): nested fields, open action types, several events per
timestep, events without a message or without an action, typed meta."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotate.field_paths import get, lookup, without
from annotate.models import describe
from annotate.store import Store


def _event(
    t: int,
    agent: str,
    action: tuple[str, str] | None = None,
    message: object = "",
    error: str = "",
    **extra: object,
) -> dict:
    """One record of episode e1 at timestep ``t``; ``action``: its name and object."""
    return {
        "episode": "e1",
        "t": t,
        "agent": agent,
        "action": {"name": action[0], "object": action[1]} if action else None,
        "message": message,
        "feedback": {"error": error},
        "recipe_relevant": True,
        **extra,
    }


REQUEST = {
    "text": "assistant, pick up onion_1",
    "request": {"object": "onion_1", "action": "pickup", "target": "assistant"},
}
TRACE = [
    _event(0, "chef", message=REQUEST, tokens=9),
    _event(1, "chef", ("chop", "tomato_1")),
    _event(1, "assistant", ("pickup", "onion_1"), error="onion_1 is not reachable"),
    _event(2, "assistant", ("pickup", "onion_1"), score=0.5),
]
MAP = (
    "session=episode,participant=agent,action_type=action.name,content=message.text,"
    "meta.timestep=t,meta.object=action.object,meta.request=message.request,"
    "meta.verifier=feedback.error"
)


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_lookup_reads_dotted_paths_and_names_the_missing_one() -> None:
    record = {"a": {"b": {"c": 1}}, "x.y": 2, "s": "text"}
    assert lookup(record, "a.b.c") == 1
    assert lookup(record, "x.y") == 2  # a key with a dot is found whole
    for path in ("a.b.d", "s.t", "nope"):
        with pytest.raises(KeyError) as info:
            lookup(record, path)
        assert info.value.args == (path,)
    assert get(record, "a.z", "default") == "default"
    assert without(record, "a.b.c") == {"x.y": 2, "s": "text"}  # emptied objects go too
    assert record["a"] == {"b": {"c": 1}}  # the record itself is not changed


def test_a_nested_trace_imports_as_written(cli, db_path, tmp_path) -> None:
    f = _write(tmp_path / "trace.jsonl", TRACE)
    r = cli("import", str(f), "--map", MAP)
    assert r.exit_code == 0, r.output
    assert "4 new actions of 4" in r.stdout
    with Store(db_path) as s:
        events = s.actions.session_actions("e1")
    # two events of timestep 1 keep the file's order; ids differ
    assert [(a.id, a.seq, a.participant, a.action_type) for a in events] == [
        ("e1:0", 0, "chef", "message"),
        ("e1:1", 1, "chef", "chop"),
        ("e1:2", 2, "assistant", "pickup"),
        ("e1:3", 3, "assistant", "pickup"),
    ]
    message, chop, corrected, accepted = events
    assert message.content == "assistant, pick up onion_1"
    assert message.meta["request"] == {
        "object": "onion_1",
        "action": "pickup",
        "target": "assistant",
    }
    assert message.meta["timestep"] == 0 and message.meta["recipe_relevant"] is True
    assert message.meta["tokens"] == 9 and "message" not in message.meta  # taken out whole
    assert chop.content is None and chop.meta["object"] == "tomato_1"
    assert "action" not in chop.meta  # both of its fields were mapped
    assert corrected.meta["verifier"] == "onion_1 is not reachable"
    assert accepted.meta["verifier"] == "" and accepted.meta["score"] == 0.5
    assert [describe(a) for a in events[1:3]] == ["chop(tomato_1)", "pickup(onion_1)"]
    # imported again: the same ids, nothing new
    r = cli("import", str(f), "--map", MAP)
    assert "0 new actions of 4" in r.stdout


def test_a_message_without_text_names_line_and_field(cli, db_path, tmp_path) -> None:
    rows = [dict(TRACE[0]), {**TRACE[1], "action": None}]
    f = _write(tmp_path / "trace.jsonl", rows)
    r = cli("import", str(f), "--map", MAP)
    assert r.exit_code == 1
    assert f"{f}:2: missing field 'message.text' (a message needs text" in r.stderr
    with Store(db_path) as s:
        assert s.actions.count_actions() == 0


def test_a_missing_nested_session_and_a_meta_name_mapping(cli, db_path, tmp_path) -> None:
    f = _write(tmp_path / "t.jsonl", [{"ep": {"id": "x"}, "text": "hi", "deep": {"v": [1, 2]}}])
    r = cli("import", str(f), "--map", "session=ep.name,meta.values=deep.v")
    assert r.exit_code == 1 and f"{f}:1: missing field 'ep.name'" in r.stderr
    r = cli("import", str(f), "--map", "session=ep.id,content=text,meta.values=deep.v")
    assert r.exit_code == 0, r.output
    with Store(db_path) as s:
        (a,) = s.actions.session_actions("x")
    assert a.meta == {"values": [1, 2]}
    twice = tmp_path / "twice.jsonl"
    twice.write_text('{"ep": {"id": "y"}, "text": "hi", "deep": {"v": 1}}\n')
    r = cli("import", str(twice), "--map", "session=ep.id,content=text,meta.a=deep.v,meta.b=deep.v")
    assert r.exit_code == 0, r.output
    with Store(db_path) as s:
        (a,) = s.actions.session_actions("y")
    assert a.meta == {"a": 1, "b": 1}
    r = cli("import", str(f), "--map", "sesion=ep.id")
    assert r.exit_code == 1 and "--map: unknown field 'sesion'" in r.stderr
    assert "meta.NAME" in r.stderr
