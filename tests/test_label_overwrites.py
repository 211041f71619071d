"""`import-labels` never silently replaces a stored answer: coders' answers need --replace,
adjudicated gold (and its record of who decided and how) needs --replace-gold."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from annotate.store import Store
from tests.conftest import DEMO, REPO


@pytest.fixture
def demo_gold(cli, db_path: Path) -> Path:
    assert cli("import", str(DEMO)).exit_code == 0
    r = cli("import-labels", str(REPO / "data" / "demo_labels.csv"), "--codebook", "traum")
    assert r.exit_code == 0, r.output
    r = cli("adjudicate", "--majority-only", "--adjudicator", "zoe")
    assert r.exit_code == 0, r.output
    return db_path


def _rows(db: Path, coder: str) -> list[dict]:
    with Store(db) as s:
        return s.labels.label_rows("traum", coders=[coder])


def _write(path: Path, rows: list[dict]) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, ["action_id", "coder", "question", "value", "other_text"])
        w.writeheader()
        w.writerows(rows)
    return path


def _other(value: str) -> str:
    return "Continue" if value != "Continue" else "Repair"


def test_a_second_import_over_gold_is_refused_and_changes_nothing(
    cli, demo_gold: Path, tmp_path: Path
) -> None:
    gold = [g for g in _rows(demo_gold, "gold") if g["value"] != "other"]
    assert gold[0]["meta"]["method"] == "majority" and gold[0]["meta"]["adjudicator"] == "zoe"
    changed = [
        {
            "action_id": g["action_id"],
            "coder": "gold",
            "question": "act",
            "value": _other(g["value"]),
        }
        for g in gold[:5]
    ]
    path = _write(tmp_path / "gold.csv", changed)
    before = _rows(demo_gold, "gold")
    for flags in ((), ("--replace",)):
        r = cli("import-labels", str(path), "--codebook", "traum", *flags)
        assert r.exit_code == 1
        first, hint = r.stderr.splitlines()
        assert first.startswith(f"error: {path}: 5 rows would change adjudicated gold labels: ")
        assert (
            f"line 2: gold's act for action '{gold[0]['action_id']}' is {gold[0]['value']!r}, "
            f"the file says {_other(gold[0]['value'])!r}" in first
        )
        assert first.endswith("; and 2 more")
        assert hint.startswith("hint: nothing was stored; pass --replace-gold")
    assert _rows(demo_gold, "gold") == before  # answers, source, meta, times: all as they were
    r = cli("import-labels", str(path), "--codebook", "traum", "--replace-gold")
    assert r.exit_code == 0, r.output
    assert "5 labels read: 0 new, 0 answers replaced, 5 gold labels replaced" in r.stdout
    replaced = {g["action_id"]: g for g in _rows(demo_gold, "gold")}
    assert replaced[gold[0]["action_id"]]["value"] == _other(gold[0]["value"])
    assert replaced[gold[0]["action_id"]]["source"] == "import"


def test_changing_a_coders_answer_needs_replace(cli, demo_gold: Path, tmp_path: Path) -> None:
    ana = [a for a in _rows(demo_gold, "ana") if a["value"] != "other"][:2]
    rows = [
        {"action_id": a["action_id"], "coder": "ana", "question": "act", "value": value}
        for a, value in ((ana[0], ana[0]["value"]), (ana[1], _other(ana[1]["value"])))
    ]
    path = _write(tmp_path / "ana.csv", rows)
    r = cli("import-labels", str(path), "--codebook", "traum")
    assert r.exit_code == 1
    assert r.stderr.splitlines()[0] == (
        f"error: {path}: 1 row would change coders' existing answers: line 3: ana's act for "
        f"action '{ana[1]['action_id']}' is {ana[1]['value']!r}, the file says "
        f"{_other(ana[1]['value'])!r}"
    )
    assert "pass --replace to overwrite them" in r.stderr
    assert {a["action_id"]: a["value"] for a in _rows(demo_gold, "ana")}[ana[1]["action_id"]] == (
        ana[1]["value"]
    )
    r = cli("import-labels", str(path), "--codebook", "traum", "--replace")
    assert r.exit_code == 0, r.output
    assert "2 labels read: 0 new, 1 answers replaced, 1 unchanged; coders: ana" in r.stdout
    assert {a["action_id"]: a["value"] for a in _rows(demo_gold, "ana")}[ana[1]["action_id"]] == (
        _other(ana[1]["value"])
    )


def test_a_note_on_gold_is_a_change_to_gold(cli, demo_gold: Path, tmp_path: Path) -> None:
    g = _rows(demo_gold, "gold")[0]
    path = tmp_path / "note.csv"
    path.write_text(
        "action_id,coder,value,other_text,note\n"
        f"{g['action_id']},gold,{g['value']},{g['other_text'] or ''},looks fine\n"
    )
    r = cli("import-labels", str(path), "--codebook", "traum")
    assert r.exit_code == 1 and "1 row would change adjudicated gold labels" in r.stderr
    assert "with note 'looks fine'" in r.stderr
    assert _rows(demo_gold, "gold")[0]["meta"] == g["meta"]
