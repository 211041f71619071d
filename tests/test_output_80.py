"""Golden output at 80 columns: stats, status, codebooks and merge conflicts on the demo.

Every line fits in 80 columns and no word is split (tests/narrow.py); the text is compared
with tests/golden/*.txt. After a deliberate change of the output (or of a shipped
codebook), regenerate the files and read the diff:

    UPDATE_GOLDEN=1 python -m pytest tests/test_output_80.py
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from annotate.cli import app
from annotate.codebook import find_codebook
from annotate.render.stats import mean_sd, measures
from tests.conftest import SHARED
from tests.narrow import assert_reads_at
from tests.test_analysis_support import DEMO, DEMO_LABELS, demo_traum_rows, write_csv

GOLDEN = Path(__file__).parent / "golden"
WIDTH = 80
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


def run(*args: str, width: int = WIDTH) -> str:
    r = CliRunner().invoke(
        app, list(args), env={"COLUMNS": str(width), "NO_COLOR": "1"}, catch_exceptions=False
    )
    assert r.exit_code == 0, r.output
    return r.stdout


def normal(text: str) -> str:
    """Trailing spaces off; times (same length) fixed."""
    fixed = TIME.sub(lambda m: "2026-01-01T00:00:00.000Z"[: len(m[0])], text)
    return "\n".join(line.rstrip() for line in fixed.splitlines()) + "\n"


def matches_golden(name: str, text: str) -> None:
    text = normal(text)
    assert_reads_at(text, WIDTH)
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), (
        f"{name} differs from {path}; if the change is meant, regenerate: "
        "UPDATE_GOLDEN=1 python -m pytest tests/test_output_80.py"
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """The Makefile's demo project (3 coders' traum labels, majority gold), in its folder."""
    folder = tmp_path_factory.mktemp("demo")
    db = str(folder / "project.db")
    run("import", str(DEMO), "--db", db)
    run("sample", "--n", "120", "--seed", "7", "--name", "main", "--stratify", "condition",
        "--db", db)  # fmt: skip
    run("import-labels", str(DEMO_LABELS), "--codebook", "traum", "--db", db)
    run("agree", "--codebook", "traum", "--db", db)
    run("adjudicate", "--codebook", "traum", "--majority-only", "--db", db)
    run("split-sessions", "--test", "1", "--per", "condition", "--name", "main", "--db", db)
    return folder


def test_stats(demo) -> None:
    out = run("stats", "--db", str(demo / "project.db"))
    matches_golden("stats", out)
    assert "57.2 (6.2)" in out and "follower" in out


def test_stats_by_split_part(demo) -> None:
    out = run("stats", "--split", "main", "--db", str(demo / "project.db"))
    matches_golden("stats_split", out)
    assert "test: hidden" in out and "train: all" in out


def test_status(demo, monkeypatch) -> None:
    monkeypatch.chdir(demo)  # the file's name, not a temp path, heads the output
    out = run("status", "--db", "project.db")
    matches_golden("status", out)
    for text in ("hidden", "traum", "112/120", "skip", "Agreement runs", "Next:"):
        assert text in out


def test_codebooks_list() -> None:
    out = run("codebooks", "list")
    matches_golden("codebooks_list", out)
    # titles wrap between words, never inside one (mental_model_self's name takes room)
    assert {"Traum", "grounding", "acts", "(self-annotation)"} <= set(out.split())


@pytest.mark.parametrize("name", ["traum", "mental_model"])
def test_codebooks_show(name) -> None:
    out = run("codebooks", "show", name)
    matches_golden(f"codebooks_show_{name}", out)
    cb = find_codebook(name).codebook
    phrases = [cb.instructions or ""]
    for q in cb.questions:
        phrases += [q.prompt, *(f"{o.label} {o.definition or ''}" for o in q.options)]
    assert_reads_at(out, WIDTH, phrases)


def test_merge_conflicts(tmp_path, monkeypatch) -> None:
    ours, theirs = tmp_path / "ours.db", tmp_path / "theirs.db"
    ana = demo_traum_rows("ana")[:20]
    changed = [dict(r) for r in ana]
    for row, value in ((changed[3], "Repair"), (changed[7], "ReqRepair")):
        row["value"] = value if row["value"] != value else "Initiate"
        row["other_text"] = ""
    changed[9] |= {"value": "other", "other_text": "a greeting before the task starts"}
    for path, rows in ((ours, ana), (theirs, changed)):
        run("import", str(DEMO), "--db", str(path))
        labels = write_csv(tmp_path / f"{path.stem}.csv", rows)
        run("import-labels", str(labels), "--codebook", "traum", "--db", str(path))
    monkeypatch.chdir(tmp_path)
    out = run("merge", "theirs.db", "--db", "ours.db")
    matches_golden("merge_conflicts", out)
    assert_reads_at(out, WIDTH, ['other ("a greeting before the task starts")', "kept ours"])


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """The demo project plus the whole Map Task corpus (hcrc labels) and the platform export."""
    if not (SHARED / "maptask").is_dir():
        pytest.skip("../shared (real Map Task and platform data) is not beside this checkout")
    db = tmp_path_factory.mktemp("corpus") / "project.db"
    run("import", str(DEMO), "--db", str(db))
    run("import-labels", str(DEMO_LABELS), "--codebook", "traum", "--db", str(db))
    run("import", str(SHARED / "maptask" / "dialogues"), "--labels-as", "hcrc", "--codebook",
        "hcrc_moves", "--db", str(db))  # fmt: skip
    run("import", *map(str, sorted((SHARED / "platform").glob("*.jsonl"))), "--db", str(db))
    run("sample", "--n", "120", "--seed", "7", "--name", "main", "--db", str(db))
    return db


@pytest.mark.parametrize("width", [80, 120])
def test_real_data_reads_at(corpus, width, monkeypatch) -> None:
    rows = json.loads(run("stats", "--format", "json", "--db", str(corpus)))
    values = [mean_sd(r[f"{m}_mean"], r[f"{m}_sd"]) for r in rows for m in measures(rows)]
    assert_reads_at(run("stats", "--db", str(corpus), width=width), width, values)
    titles = [find_codebook(b).codebook.title for b in ("traum", "hcrc_moves")]
    monkeypatch.chdir(corpus.parent)  # the Next: line names --db as typed (one line to paste)
    assert_reads_at(run("status", "--db", corpus.name, width=width), width, titles)
    for args in (["list"], ["show", "traum"], ["show", "mental_model"], ["show", "hcrc_moves"]):
        assert_reads_at(run("codebooks", *args, width=width), width)
