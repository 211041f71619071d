"""`annotate agree` on free-text questions: SBERT cosine and ROUGE-L F1 per question with a
bootstrap CI over items and n, computed from the real model and cached in the project file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from agreement.text_similarity import rouge_l_f1
from annotate.cli import app as cli_app
from annotate.codebook import Answer, LoadedCodebook, parse_codebook
from annotate.embeddings import LOCAL_MODEL, local_sbert
from annotate.io.importing import import_files
from annotate.store import Store
from tests.test_coding_support import REPO

BOOK = """
name: probe
title: Probe
version: "1"
questions:
  - id: state
    prompt: What is the task state?
    kind: text
  - id: go
    prompt: Go?
    options: [{code: y, label: Go, key: "1"}, {code: n, label: Stay, key: "2"}]
"""

ANA = [
    "We are at the old mill and heading south.",
    "The follower has lost the route near the swamp.",
    "We agreed to go around the lake on the left.",
    "I am describing the landmark below the crest.",
    "My partner is checking where the start is.",
    "We finished the first half of the route.",
    "The guide is waiting for me to confirm.",
    "We disagree about where the bridge is.",
    "I think we are close to the finish.",
    "The map shows a forest my partner lacks.",
    "We are exploring the top left corner.",
    "Nothing is happening right now.",
]
BEN = [
    "We're by the old mill, going south.",
    "The route near the swamp got lost by the follower.",
    "Going left around the lake, as agreed.",
    "The crest landmark is being described.",
    "Stocks fell sharply today.",
    "Half of the route is done.",
    "I wait for the follower's confirmation.",
    "There is a disagreement about the bridge.",
    "Almost at the finish line.",
    "My partner's map has no forest.",
    "Exploring the upper left part of the map.",
    "I have no idea.",
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    db = tmp_path / "p.db"
    cb = parse_codebook(BOOK, "probe.yaml")
    with Store(db) as store:
        import_files(store, sorted((REPO / "data" / "demo_self" / "log").glob("*.jsonl")))
        store.codebooks.register_codebook(LoadedCodebook(cb, BOOK, "probe.yaml"))
        ids = [r[0] for r in store.db.query("SELECT id FROM actions ORDER BY session, seq")][:13]
        for i, action_id in enumerate(ids[:12]):
            for coder, text in (("ana", ANA[i]), ("ben", BEN[i])):
                store.labels.save_answer(action_id, cb, "state", coder, Answer(text))
                store.labels.save_answer(action_id, cb, "go", coder, Answer("y" if i % 4 else "n"))
        store.labels.save_answer(ids[12], cb, "state", "ana", Answer("only one answer here"))
    return db


def _agree(db: Path, *args: str):
    r = CliRunner().invoke(
        cli_app, ["agree", "--codebook", "probe", "--coders", "ana,ben", *args, "--db", str(db)]
    )
    assert r.exit_code == 0, r.output
    return r


def test_sbert_and_rouge_per_text_question_with_ci_and_n(project: Path):
    r = _agree(project, "--question", "state", "--format", "json")
    (result,) = json.loads(r.stdout)["text_similarity"]
    sbert, rouge = result["sbert_cosine"], result["rouge_l_f1"]
    vectors = local_sbert().embed(ANA + BEN)
    cosines = (vectors[:12] * vectors[12:]).sum(axis=1)
    assert sbert["mean"] == pytest.approx(float(cosines.mean()), abs=1e-6)
    rouges = [rouge_l_f1(a, b) for a, b in zip(ANA, BEN, strict=True)]
    assert rouge["mean"] == pytest.approx(np.mean(rouges))
    for figure in (sbert, rouge):
        assert (figure["n_items"], figure["n_pairs"], figure["n_items_single"]) == (12, 12, 1)
        assert figure["ci"]["low"] < figure["mean"] < figure["ci"]["high"]
    assert 0.5 < sbert["mean"] < 0.95 and rouge["mean"] < sbert["mean"]
    assert result["model"] == LOCAL_MODEL and result["n_embedded"] == 24


def test_a_rerun_embeds_nothing(project: Path):
    first = _agree(project, "--question", "state")
    assert "SBERT: 24 texts embedded now, 0 from the project file's cache." in first.stderr
    again = _agree(project, "--question", "state")
    assert "SBERT: 0 texts embedded now, 24 from the project file's cache." in again.stderr
    assert again.stdout == first.stdout
    with Store(project) as store:
        assert store.embeddings.count_embeddings(LOCAL_MODEL) == 24


def test_coded_and_text_questions_together(project: Path):
    r = _agree(project)
    assert "SBERT cosine" in r.stdout and "ROUGE-L F1" in r.stdout and "Fleiss" in r.stdout
    data = json.loads(_agree(project, "--format", "json").stdout)
    assert data["questions"] == ["go"] and [q["question"] for q in data["results"]] == ["go"]
    assert [t["question"] for t in data["text_similarity"]] == ["state"]
    rows = _agree(project, "--question", "state", "--format", "csv").stdout.splitlines()
    assert rows[0].startswith("question,measure,mean,ci_low,ci_high,sd,n_items,n_pairs")
    assert [row.split(",")[1] for row in rows[1:]] == ["SBERT cosine", "ROUGE-L F1"]
