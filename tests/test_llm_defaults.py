"""`annotate llm-label --shots 8` as typed on a fresh file with gold (issue 35): the one
codebook with gold, the model from $ANNOTATE_MODEL or the endpoint's only model, and a
split made with `annotate split`'s defaults (random shots, the paper's procedure) when
there is none; `split --strategy random|cover`, recorded with the split."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from annotate.store import Store
from llm_coder.split import random_split, stratified_split
from tests.conftest import DEMO
from tests.test_analysis_support import DEMO_LABELS, write_csv
from tests.test_llm_real_server import RealServer, free_port, real_server  # noqa: F401

GOLD_ITEMS = 10  # 8 shots, 2 held out: the shared server serves one request at a time


def fresh_with_gold(cli, tmp_path: Path) -> None:
    """The demo's actions and 10 gold traum labels (ana's first 10, as gold)."""
    assert cli("import", str(DEMO)).exit_code == 0
    with DEMO_LABELS.open(encoding="utf-8") as fh:
        ana = [r for r in csv.DictReader(fh) if r["coder"] == "ana"][:GOLD_ITEMS]
    gold = write_csv(tmp_path / "gold.csv", [r | {"coder": "gold"} for r in ana])
    r = cli("import-labels", str(gold), "--codebook", "traum")
    assert r.exit_code == 0, r.output


def run(db: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("ANNOTATE_MODEL", "ANNOTATE_DB")}
    environ |= {"ANNOTATE_DB": str(db), "OPENAI_API_KEY": "sk-local", "COLUMNS": "200", **env}
    return subprocess.run(
        [sys.executable, "-m", "annotate", *args],
        capture_output=True, text=True, env=environ, timeout=900, check=False,
    )  # fmt: skip


@pytest.mark.real_llm
def test_llm_label_shots_8_as_typed(cli, db_path, tmp_path, real_server) -> None:  # noqa: F811
    fresh_with_gold(cli, tmp_path)
    # as typed, but for a short context and one request at a time (the server serves one)
    out = run(db_path, "llm-label", "--shots", "8", "--validate-only", "--context", "2",
              "--concurrency", "1", OPENAI_BASE_URL=real_server.base_url)  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "codebook: traum (the one codebook with gold)"
    host = real_server.base_url.split("//")[1].split("/")[0]
    assert lines[1] == f"model: smollm2 (the only model {host} lists)"
    assert lines[2].startswith(
        "no split 'traum' yet: made one as `annotate split --codebook traum --shots 8` would "
        "(its defaults) and stored it. split 'traum': 8 shots drawn at random, with"
    )
    assert "2 held out for validation (gold: 'gold', seed 7, strategy random)." in lines[2]
    with Store(db_path) as s:
        split = s.llm.split_info("traum")
        run_row = s.db.query("SELECT model, codebook, split, status FROM llm_runs")[0]
    assert (split.strategy, len(split.shots), len(split.heldout)) == ("random", 8, 2)
    assert tuple(run_row) == ("smollm2", "traum", "traum", "validated")
    # the same split as `annotate split` with its defaults would make
    expected = random_split(sorted(split.shots + split.heldout), 8, 7)
    assert set(expected.shots) == set(split.shots)
    # again: the stored split is used, not made anew
    out = run(db_path, "llm-label", "--shots", "8", "--validate-only", "--context", "2",
              "--concurrency", "1", OPENAI_BASE_URL=real_server.base_url,
              ANNOTATE_MODEL="smollm2")  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines()[1] == "model: smollm2 ($ANNOTATE_MODEL)"
    assert "no split" not in out.stdout


def test_no_model_names_both_ways(cli, db_path, tmp_path) -> None:
    fresh_with_gold(cli, tmp_path)
    closed = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    out = run(db_path, "llm-label", "--shots", "8", OPENAI_BASE_URL=closed)
    assert out.returncode == 1
    err = out.stderr.splitlines()
    assert err[0] == "error: no model: pass --model NAME or set $ANNOTATE_MODEL"
    assert err[1].startswith("hint: neither was given, and the endpoint's list could not choose: ")
    assert f"{closed}/models did not answer" in err[1]
    with Store(db_path) as s:  # nothing was made before the model was known
        assert s.db.query("SELECT count(*) FROM llm_splits")[0][0] == 0


def test_no_codebook_with_gold(cli, db_path) -> None:
    assert cli("import", str(DEMO)).exit_code == 0
    out = run(db_path, "llm-label", "--shots", "8", ANNOTATE_MODEL="m")
    assert out.returncode == 1
    assert out.stderr.startswith(
        "error: no codebook has gold labels to validate an LLM on: pass --codebook NAME"
    )


def test_split_strategies_are_recorded(cli, db_path, tmp_path) -> None:
    fresh_with_gold(cli, tmp_path)
    r = cli("split", "--codebook", "traum", "--name", "paper")
    assert r.exit_code == 0, r.output
    assert "shots drawn at random" in r.stdout and "strategy random)." in r.stdout
    r = cli("split", "--codebook", "traum", "--name", "cover", "--strategy", "cover")
    assert r.exit_code == 0 and "8 shots covering" in r.stdout and "strategy cover)." in r.stdout
    with Store(db_path) as s:
        paper, cover = s.llm.split_info("paper"), s.llm.split_info("cover")
        labels = {r["action_id"]: r["label"] for r in s.llm.split_items("cover")}
    assert (paper.strategy, cover.strategy) == ("random", "cover")
    assert paper.shots == random_split(sorted(labels), 8, 7).shots
    assert cover.shots == stratified_split(dict(sorted(labels.items())), 8, 7).shots
    r = cli("split", "--codebook", "traum", "--name", "x", "--strategy", "stratified")
    assert r.exit_code == 1 and "--strategy: unknown strategy 'stratified'" in r.stderr


def test_random_split_is_a_seeded_draw() -> None:
    items = [f"a{i:02d}" for i in range(30)]
    one = random_split(items, 8, 7)
    assert one.shots == random_split(list(reversed(items)), 8, 7).shots  # not the order given
    assert len(set(one.shots)) == 8 and set(one.shots).isdisjoint(one.heldout)
    assert sorted(one.shots + one.heldout) == items
    assert random_split(items, 8, 8).shots != one.shots
    with pytest.raises(ValueError):
        random_split(items, 31, 7)
