"""TGCO's Algorithm 3 (seed paper 001, Appendix C.2): one hand-built case per branch, in
the paper's decision order, and `annotate audit` storing the rule as coder rule:tgco."""

from __future__ import annotations

import json
from typing import Any

import pytest

from annotate.rules.tgco import Params, audit_episode, event_of, parse_request
from annotate.store import Store


def msg(aid: str, t: int, agent: str, request: tuple | None = None, **meta: Any) -> dict:
    record: dict[str, Any] = {"id": aid, "type": "message", "agent": agent, "timestep": t}
    record["content"] = meta.pop("text", "a message")
    if request is not None:
        record["request"] = dict(zip(("object", "action", "target"), request, strict=True))
    return record | meta


def act(aid: str, t: int, agent: str, action: str, obj: str, verifier: str = "") -> dict:
    return {
        "id": aid,
        "type": action,
        "agent": agent,
        "timestep": t,
        "object": obj,
        "verifier": verifier,
        "content": None,
    }


def outcomes(records: list[dict], w: float = 5) -> dict[str, tuple[str, str | None, bool]]:
    events = [event_of(r, Params()) for r in records]
    return {d.action_id: (d.outcome, d.match, d.delayed) for d in audit_episode(events, w)}


PARTNERS = [act("a0", 0, "assistant", "wait", "counter"), act("c0", 0, "chef", "wait", "pot")]


def test_no_request_unit_is_unstructured() -> None:
    got = outcomes([*PARTNERS, msg("m", 1, "chef", text="great teamwork so far!")])
    assert got["m"][0] == "Unstructured"


@pytest.mark.parametrize(
    "target", ["chef", "robot", None], ids=["the speaker", "not in the episode", "none"]
)
def test_a_target_that_is_not_another_agent_is_ineffective(target) -> None:
    records = [
        *PARTNERS,
        msg("m", 1, "chef", ("onion_1", "pickup", target)),
        act("x", 2, "assistant", "pickup", "onion_1"),
        act("y", 2, "chef", "pickup", "onion_1"),
    ]
    assert outcomes(records)["m"] == ("Ineffective", None, False)


def test_a_request_not_recipe_relevant_is_ineffective() -> None:
    records = [
        *PARTNERS,
        msg("m", 1, "chef", ("onion_1", "pickup", "assistant"), recipe_relevant=False),
        act("x", 2, "assistant", "pickup", "onion_1"),
    ]
    assert outcomes(records)["m"][0] == "Ineffective"
    records[2]["recipe_relevant"] = "true"
    assert outcomes(records)["m"][0] == "Effective"


def test_work_done_before_the_message_is_redundant_before_any_lookup() -> None:
    records = [
        *PARTNERS,
        act("done", 1, "chef", "chop", "tomato_1"),
        msg("m", 2, "chef", ("tomato_1", "chop", "assistant")),
        act("again", 3, "assistant", "chop", "tomato_1"),  # a repetition is not Effective
    ]
    assert outcomes(records)["m"] == ("Redundant", None, False)


def test_only_accepted_work_at_an_earlier_timestep_makes_a_request_redundant() -> None:
    records = [
        *PARTNERS,
        act("rejected", 1, "chef", "chop", "tomato_1", verifier="knife is busy"),
        act("same_step", 2, "chef", "chop", "tomato_1"),  # timestep t, not before it
        msg("m", 2, "chef", ("tomato_1", "chop", "assistant")),
        act("x", 3, "assistant", "chop", "tomato_1"),
    ]
    assert outcomes(records)["m"] == ("Effective", "x", False)


def test_the_first_accepted_partner_action_within_the_window_is_the_match() -> None:
    records = [
        *PARTNERS,
        msg("m", 2, "chef", ("onion_1", "pickup", "assistant")),
        act("other_object", 3, "assistant", "pickup", "onion_2"),
        act("self_done", 4, "chef", "pickup", "onion_1"),  # the speaker, not the partner
        act("edge", 7, "assistant", "pickup", "onion_1"),  # t + w: inside
        act("later", 8, "assistant", "pickup", "onion_1"),
    ]
    assert outcomes(records)["m"] == ("Effective", "edge", False)


def test_no_partner_match_within_the_window_is_ineffective_and_delayed_when_done_later() -> None:
    late = [
        *PARTNERS,
        msg("m", 2, "chef", ("onion_1", "pickup", "assistant")),
        act("late", 8, "assistant", "pickup", "onion_1"),
    ]
    assert outcomes(late)["m"] == ("Ineffective", None, True)
    assert outcomes(late, w=6)["m"] == ("Effective", "late", False)
    never = [*PARTNERS, msg("m", 2, "chef", ("onion_1", "pickup", "assistant"))]
    assert outcomes(never)["m"] == ("Ineffective", None, False)


def test_a_correction_of_the_partner_before_the_match_is_assisted() -> None:
    records = [
        *PARTNERS,
        msg("m", 2, "chef", ("onion_1", "pickup", "assistant")),
        act("wrong", 3, "assistant", "pickup", "onion_1", verifier="onion_1 is not reachable"),
        act("right", 4, "assistant", "pickup", "onion_1"),
        act("after", 5, "assistant", "put", "onion_1", verifier="pot is full"),
    ]
    assert outcomes(records)["m"] == ("Assisted", "right", False)
    # a correction after the match, or of the speaker, leaves it Effective
    del records[3]
    records.insert(3, act("chef_wrong", 3, "chef", "chop", "onion_1", verifier="no knife"))
    assert outcomes(records)["m"] == ("Effective", "right", False)


def test_a_request_is_read_from_the_message_when_the_trace_has_no_structured_one() -> None:
    actions, agents = ["pickup", "chop", "put_in"], ["chef", "assistant"]
    assert parse_request("Assistant, please pick up onion_1!", actions, agents, "chef") == (
        "onion_1",
        "pickup",
        "assistant",
    )
    assert parse_request("can you put in the tomato_2?", actions, agents, "chef") == (
        "tomato_2",
        "put_in",
        "assistant",
    )
    assert parse_request("chef: chop(onion_3)", actions, agents, "assistant") == (
        "onion_3",
        "chop",
        "chef",
    )
    assert parse_request("I will chop onion_3", actions, ["a", "b", "c"], "a") == (
        "onion_3",
        "chop",
        None,
    )
    assert parse_request("thanks, nice work", actions, agents, "chef") is None
    records = [
        *PARTNERS,
        act("before", 1, "assistant", "pickup", "Onion_1", verifier="too far"),
        msg("m", 2, "chef", text="you, pick up onion_1"),  # the object as the trace spells it
        act("x", 3, "assistant", "pickup", "Onion_1"),
    ]
    assert outcomes(records)["m"] == ("Effective", "x", False)  # corrected before: no matter


def test_params_are_checked() -> None:
    assert Params.parse({"w": "3", "verifier": "feedback.error"}).w == 3
    for bad in ({"w": "soon"}, {"w": "-1"}, {"window": "3"}):
        with pytest.raises(ValueError):
            Params.parse(bad)


TRACE = [
    {
        "ep": "e1",
        "t": 0,
        "agent": "chef",
        "msg": {
            "text": "assistant, pick up onion_1",
            "request": {"object": "onion_1", "action": "pickup", "target": "assistant"},
        },
    },
    {
        "ep": "e1",
        "t": 1,
        "agent": "assistant",
        "act": {"name": "pickup", "object": "onion_1"},
        "feedback": "not reachable",
    },
    {"ep": "e1", "t": 1, "agent": "chef", "act": {"name": "chop", "object": "tomato_1"}},
    {"ep": "e1", "t": 2, "agent": "assistant", "act": {"name": "pickup", "object": "onion_1"}},
    {"ep": "e1", "t": 3, "agent": "chef", "msg": {"text": "assistant, chop tomato_1"}},
    {"ep": "e1", "t": 4, "agent": "chef", "msg": {"text": "well done"}},
    {"ep": "e2", "t": 0, "agent": "chef", "msg": {"text": "assistant, chop onion_2"}},
    {"ep": "e2", "t": 9, "agent": "assistant", "act": {"name": "chop", "object": "onion_2"}},
]
MAP = (
    "session=ep,participant=agent,action_type=act.name,content=msg.text,meta.timestep=t,"
    "meta.object=act.object,meta.request=msg.request,meta.verifier=feedback"
)


def test_audit_stores_the_rule_as_a_coder_with_its_provenance(cli, db_path, tmp_path) -> None:
    f = tmp_path / "trace.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in TRACE))
    r = cli("audit", "--rules", "tgco")
    assert r.exit_code == 1 and "no such database" in r.stderr
    assert cli("import", str(f), "--map", MAP).exit_code == 0
    r = cli("audit", "--rules", "tgco", "--format", "json")
    assert r.exit_code == 0, r.output
    counts = {row["outcome"]: row["messages"] for row in json.loads(r.stdout)}
    assert counts == {
        "Effective": 0,
        "Assisted": 1,
        "Redundant": 1,
        "Ineffective": 1,
        "Unstructured": 1,
    }
    with Store(db_path) as s:
        rows = s.query(
            "SELECT action_id, value, coder, source, meta FROM labels ORDER BY action_id"
        )
    got = {row["action_id"]: (row["value"], json.loads(row["meta"])) for row in rows}
    assert {k: v[0] for k, v in got.items()} == {
        "e1:0": "Assisted",
        "e1:4": "Redundant",
        "e1:5": "Unstructured",
        "e2:0": "Ineffective",
    }
    assert {row["coder"] for row in rows} == {"rule:tgco"}
    assert {row["source"] for row in rows} == {"rule"}
    meta = got["e1:0"][1]
    assert meta["rule"] == "tgco" and meta["version"] == "1.0"
    assert meta["params"]["w"] == 5 and meta["match"] == "e1:3"
    assert got["e2:0"][1]["delayed"] is True
    # a wider window: the same labels brought up to date, the new parameters with them
    r = cli("audit", "--rules", "tgco", "--param", "w=10")
    assert r.exit_code == 0, r.output
    assert "w=10" in r.stdout
    with Store(db_path) as s:
        row = s.query("SELECT value, meta FROM labels WHERE action_id = 'e2:0'")[0]
    assert row["value"] == "Effective" and json.loads(row["meta"])["params"]["w"] == 10
    r = cli("audit", "--rules", "nope")
    assert r.exit_code == 1 and "unknown rule set 'nope'" in r.stderr
    r = cli("audit", "--rules", "tgco", "--param", "w=soon")
    assert r.exit_code == 1 and "w must be a number" in r.stderr


def test_rule_coders_agree_like_any_coder(cli, db_path, tmp_path) -> None:
    f = tmp_path / "trace.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in TRACE))
    assert cli("import", str(f), "--map", MAP).exit_code == 0
    assert cli("audit", "--rules", "tgco").exit_code == 0
    labels = tmp_path / "ana.csv"
    labels.write_text(
        "action_id,coder,question,value\n"
        "e1:0,ana,outcome,Assisted\ne1:4,ana,outcome,Redundant\n"
        "e1:5,ana,outcome,Unstructured\ne2:0,ana,outcome,Effective\n"
    )
    r = cli("import-labels", str(labels), "--codebook", "tgco")
    assert r.exit_code == 0, r.output
    r = cli("agree", "--codebook", "tgco", "--coders", "rule:tgco,ana", "--format", "json")
    assert r.exit_code == 0, r.output
    result = json.loads(r.stdout)
    assert result["coders"] == ["rule:tgco", "ana"]
    (pair,) = result["results"][0]["value"]["pairwise"]
    assert (pair["coder_a"], pair["coder_b"], pair["n_items"]) == ("rule:tgco", "ana", 4)
    assert pair["observed_agreement"] == 0.75  # e2:0: ana saw the late action as Effective
    # not named, a rule set is not one of the coders compared
    r = cli("agree", "--codebook", "tgco")
    assert r.exit_code == 1 and "rule:tgco" not in r.stdout
