"""Shared set-ups for the analysis tests (stats, report, split-sessions, merge).

The demo project gets three kinds of labels on top of ana/ben/caro's Traum labels:
``gold`` (ana's answers on two thirds of the actions), ``llm:fake`` (ben's answers on every
action) and seeded mental-model answers by ``gold`` whose alignment depends on the act and
rises over the session, so every section of the report has something to show.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Callable
from pathlib import Path

from typer.testing import Result

from annotate.store import Store
from tests.conftest import DEMO, REPO

DEMO_LABELS = REPO / "data" / "demo_labels.csv"
SAME_PAGE_BY_ACT = {
    "Acknowledge": 0.85,
    "Initiate": 0.6,
    "Continue": 0.6,
    "ReqAck": 0.5,
    "Repair": 0.3,
    "ReqRepair": 0.2,
    "Cancel": 0.2,
    "other": 0.5,
}


def write_csv(path: Path, rows: list[dict[str, str]]) -> Path:
    columns = ["action_id", "coder", "question", "value", "other_text", "codes"]
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow(row)
    return path


def demo_traum_rows(coder: str) -> list[dict[str, str]]:
    with DEMO_LABELS.open(encoding="utf-8") as fh:
        return [r for r in csv.DictReader(fh) if r["coder"] == coder]


def mental_model_rows(store: Store, acts: dict[str, str], coder: str = "gold") -> list[dict]:
    rng = random.Random(11)
    rows = []
    for p in store.action_positions():
        progress = p["position"] / p["session_length"]
        act = acts.get(p["action_id"], "other")
        same_page = rng.random() < min(0.95, SAME_PAGE_BY_ACT.get(act, 0.5) + 0.3 * progress)
        q1 = "t3" if same_page and rng.random() < 0.8 else rng.choice(["t1", "t2", "t4"])
        q2 = "p1" if same_page and rng.random() < 0.8 else rng.choice(["p2", "p3", "p4", "p5"])
        base = {"action_id": p["action_id"], "coder": coder}
        rows += [
            {**base, "question": "Q1", "value": q1},
            {**base, "question": "Q2", "value": q2},
            {**base, "question": "Q3", "value": rng.choice(["r1", "r3", "r4"])},
            {**base, "question": "Q4", "value": "yes"}
            if same_page
            else {**base, "question": "Q4", "value": "no", "codes": rng.choice(["n2", "n3;n4"])},
        ]
    return rows


def import_demo(cli: Callable[..., Result]) -> None:
    assert cli("import", str(DEMO)).exit_code == 0
    assert cli("import-labels", str(DEMO_LABELS), "--codebook", "traum").exit_code == 0


def record_gate(
    db_path: Path, coder: str, gate: str, kappa: float, codebook: str = "traum"
) -> int:
    """An `llm-label` validation run of ``coder`` with this gate (pass, fail or forced), as
    the workflow stores it (the report reads the newest per coder)."""
    with Store(db_path) as store:
        run = store.start_llm_run(
            coder=coder, model=coder.removeprefix("llm:"), endpoint_host="localhost",
            codebook=codebook, codebook_hash="-", split=codebook, prompt_hash="-",
            shot_ids=[], temperature=0.0, votes=1, context=2, min_kappa=0.6,
            forced=int(gate == "forced"),
        )  # fmt: skip
        store.update_llm_run(run, gate=gate, kappa=kappa, status="done")
    return run


def demo_with_gold(
    cli: Callable[..., Result], db_path: Path, tmp_path: Path, llm_gate: str | None = "pass"
) -> Path:
    """The demo project with gold, llm:fake and gold mental-model labels (see module docs);
    llm:fake passed its validation gate (``llm_gate``; None: never validated)."""
    import_demo(cli)
    ana = demo_traum_rows("ana")
    gold = [r | {"coder": "gold"} for i, r in enumerate(ana) if i % 3 != 0]
    llm = [r | {"coder": "llm:fake"} for r in demo_traum_rows("ben")]
    assert cli("import-labels", str(write_csv(tmp_path / "gold.csv", gold)), "--codebook",
               "traum").exit_code == 0  # fmt: skip
    assert cli("import-labels", str(write_csv(tmp_path / "llm.csv", llm)), "--codebook",
               "traum").exit_code == 0  # fmt: skip
    if llm_gate is not None:
        record_gate(db_path, "llm:fake", llm_gate, 0.8 if llm_gate == "pass" else 0.3)
    with Store(db_path) as store:
        mm = mental_model_rows(store, {r["action_id"]: r["value"] for r in ana})
    r = cli("import-labels", str(write_csv(tmp_path / "mm.csv", mm)), "--codebook", "mental_model")
    assert r.exit_code == 0, r.output
    return db_path


def test_mental_model_rows_are_valid_and_seeded(cli, db_path) -> None:
    import_demo(cli)
    with Store(db_path) as store:
        a = mental_model_rows(store, {})
        b = mental_model_rows(store, {})
    assert a == b and len(a) == 4 * 343
    assert {r["value"] for r in a if r["question"] == "Q4"} == {"yes", "no"}
    assert all(r.get("codes") for r in a if r["value"] == "no")
