"""Probe logs as they come (nested action and probes per agent turn), dotted-path mapping,
and probe alignment over task progress in `annotate report`."""

from __future__ import annotations

import csv
import json
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from annotate.analysis.grouping import groups_of
from annotate.analysis.probe_alignment import by_decile, number_points, text_points
from annotate.cli import app as cli_app
from annotate.embeddings import local_sbert
from annotate.field_paths import lookup
from annotate.store import Store
from tests.test_coding_support import REPO

DEMO = REPO / "data" / "demo_probes"
MAPPING = DEMO / "mapping.yaml"


def _cli(*args: str):
    return CliRunner().invoke(cli_app, [str(a) for a in args])


def test_lookup_follows_dotted_paths_and_names_what_is_missing():
    record = {"action": {"type": "trade"}, "a.b": 1}
    assert lookup(record, "action.type") == "trade"
    assert lookup(record, "a.b") == 1
    with pytest.raises(KeyError) as err:
        lookup(record, "probes.task_state")
    assert err.value.args[0] == "probes.task_state"


def test_the_demo_log_imports_unflattened_and_again_adds_nothing(tmp_path):
    db = tmp_path / "p.db"
    r = _cli("import-probes", DEMO / "log.jsonl", "--mapping", MAPPING, "--db", db)
    assert r.exit_code == 0, r.output
    assert "108 new actions of 108, 432 probe answers (432 new or changed" in r.stdout
    again = _cli("import-probes", DEMO / "log.jsonl", "--mapping", MAPPING, "--db", db)
    assert "0 new actions of 108, 432 probe answers (0 new or changed" in again.stdout
    with Store(db) as store:
        action = store.actions.action("baseline-1:1:A")
        assert (action.action_type, action.participant, action.condition) == (
            "message",
            "A",
            "baseline",
        )
        assert action.meta == {
            "turn": 1,
            "action_type": "send_message",
            "group_size": 3,
            "model": "llama-4",
        }
        coders = [r[0] for r in store.db.query("SELECT DISTINCT coder FROM labels ORDER BY 1")]
        assert coders == ["self:A", "self:B", "self:C"]
        kinds = dict(
            tuple(r) for r in store.db.query("SELECT question, COUNT(*) FROM labels GROUP BY 1")
        )
        assert kinds == {"Q1": 108, "Q2": 108, "Q3": 108, "conf": 108}


def _write(tmp_path: Path, lines: list[dict]) -> Path:
    path = tmp_path / "probes.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _line(turn: int, agent: str, **changes) -> dict:
    line = {
        "session": "s",
        "turn": turn,
        "agent": agent,
        "condition": "baseline",
        "config": {"group_size": 3, "model": "m"},
        "action": {"type": "send_message", "content": "hi"},
        "probes": {
            "task_state": f"state {turn}",
            "partner_intent": "x",
            "own_plan": "y",
            "confidence": 0.5,
        },
    }
    line.update(changes)
    return line


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"action": {"content": "hi"}}, "probes.jsonl:2: no field 'action.type'"),
        (
            {"action": {"type": "dance", "content": "x"}},
            "probes.jsonl:2: action.type: 'dance' is not an action type of annotate",
        ),
        (
            {"probes": {"task_state": "a", "confidence": 1.5}},
            "probes.jsonl:2: probes.confidence: question conf: 1.5 is outside 0 to 1",
        ),
        ({"turn": "third"}, "probes.jsonl:2: "),
        ({"turn": 1}, "probes.jsonl:2: turn 1 of A in session s is also on line 1"),
    ],
)
def test_a_bad_line_is_named_and_nothing_of_the_file_is_stored(tmp_path, change, message):
    db = tmp_path / "p.db"
    second = _line(2, "A")
    second.update(change)
    path = _write(tmp_path, [_line(1, "A"), second])
    r = _cli("import-probes", path, "--mapping", MAPPING, "--db", db)
    assert r.exit_code == 1
    assert message in r.stderr.replace(str(path), "probes.jsonl")
    with Store(db) as store:
        assert store.actions.count_actions() == 0


def test_alignment_takes_each_agents_latest_answer_at_or_before_the_turn(tmp_path):
    db = tmp_path / "p.db"
    texts = {
        1: "We start at the mill.",
        2: "We are at the mill now.",
        3: "The lake is next.",
        4: "Heading to the lake.",
    }
    agents = {1: "A", 2: "B", 3: "C", 4: "A"}
    lines = [
        _line(t, agents[t], probes={"task_state": texts[t], "confidence": 0.25 * t}) for t in texts
    ]
    _cli("import-probes", _write(tmp_path, lines), "--mapping", MAPPING, "--db", db)
    model = local_sbert()
    v = dict(zip(texts, model.embed(list(texts.values())), strict=True))
    with Store(db) as store:
        book = store.codebooks.stored_codebook("collabsim_probes")
        points = text_points(store, book, book.question("Q1"), model).points
        conf = number_points(store, book, book.question("conf")).points

    def mean_cos(turns):
        return np.mean([float(v[a] @ v[b]) for a, b in combinations(turns, 2)])

    # turn 1: A alone (no point); 2: A1, B2; 3: A1, B2, C3; 4: A4 replaces A1
    assert points["turn"].tolist() == [2, 3, 4]
    assert points["n_agents"].tolist() == [2, 3, 3]
    assert points["value"].tolist() == pytest.approx(
        [mean_cos([1, 2]), mean_cos([1, 2, 3]), mean_cos([4, 2, 3])], abs=1e-6
    )
    assert points["progress"].tolist() == [0.5, 0.75, 1.0]
    assert points["decile"].tolist() == [5, 7, 9]
    assert conf["value"].tolist() == [0.25, 0.5, 0.75, 1.0]
    assert set(points.columns) >= {"condition", "meta.group_size", "meta.model"}
    table = by_decile(conf, "condition")
    assert table["n"].tolist() == [1, 1, 1, 1]


def test_probe_groups_are_report_by_groups(tmp_path):
    """The groups come from grouping.groups_of, as `report --by meta.X` reads them: numbers as
    text, a session without the field as '-' (not a group of its own kind)."""
    db = tmp_path / "p.db"
    lines = [_line(t, "AB"[t % 2]) for t in (1, 2, 3, 4)]
    other = [_line(t, "AB"[t % 2], session="s2", config={"group_size": 2}) for t in (1, 2)]
    r = _cli("import-probes", _write(tmp_path, lines + other), "--mapping", MAPPING, "--db", db)
    assert r.exit_code == 0, r.output
    with Store(db) as store:
        book = store.codebooks.stored_codebook("collabsim_probes")
        points = number_points(store, book, book.question("conf")).points
        by = ["condition", "meta.group_size", "meta.model"]
        expected = groups_of(store, points["action_id"].tolist(), by)
    assert "meta.turn" not in points.columns and "meta.action_type" not in points.columns
    assert points[by].values.tolist() == expected[by].values.tolist()
    sizes = {r.session: (r[2], r[3]) for r in points[["session", *by[1:]]].itertuples()}
    assert sizes == {"s": ("3", "m"), "s2": ("2", "-")}


def test_report_gives_alignment_by_progress_and_by_group_with_n(tmp_path):
    db = tmp_path / "p.db"
    _cli("import-probes", DEMO / "log.jsonl", "--mapping", MAPPING, "--db", db)
    out = tmp_path / "rep"
    r = _cli("report", "--codebook", "collabsim_probes", "--out", out, "--db", db)
    assert r.exit_code == 0, r.output

    def rows(name):
        with (out / f"{name}.csv").open() as fh:
            return list(csv.DictReader(fh))

    table7 = {row["probe"]: row for row in rows("probe_alignment")}
    assert set(table7) == {"Q1", "Q2", "Q3", "conf"}
    assert table7["Q1"]["measure"] == "SBERT cosine" and int(table7["Q1"]["n"]) == 102
    assert int(table7["conf"]["n"]) == 108 and int(table7["Q1"]["sessions"]) == 6
    progress = rows("probe_Q1_progress")
    assert {row["condition"] for row in progress} == {"baseline", "limited_bandwidth"}
    assert sum(int(row["n"]) for row in progress) == 102
    late = {row["condition"]: float(row["mean"]) for row in progress if row["decile"] == "90-100%"}
    assert late["baseline"] > late["limited_bandwidth"]  # the demo converges faster there
    by_model = rows("probe_Q2_by_meta_model")
    assert {row["meta.model"] for row in by_model} == {"llama-4", "qwen-3"}
    assert (out / "probe_conf_progress.csv").is_file()
    assert any(p.name.endswith("probe_conf_progress.png") for p in out.iterdir())
    assert not any("collabsim_probes_Q1" in p.name for p in out.iterdir())  # no "codes" of text


def test_the_demo_log_is_what_its_generator_writes(tmp_path, monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "make_demo_probes", REPO / "data" / "make_demo_probes.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "OUT", tmp_path / "log.jsonl")
    module.main()
    assert (tmp_path / "log.jsonl").read_bytes() == (DEMO / "log.jsonl").read_bytes()
