"""`annotate stats`: the dataset table on the demo (numbers from data/README.md) and Map Task."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from annotate.analysis.stats import dataset_stats, session_counts
from annotate.cli import app
from tests.test_analysis_support import import_demo


def _by(rows):
    return {(r["split"], r["condition"], r["role"]): r for r in rows}


def test_demo_stats_match_the_demo_readme(cli) -> None:
    import_demo(cli)
    r = cli("stats", "--format", "json")
    assert r.exit_code == 0, r.output
    rows = _by(json.loads(r.stdout))
    total = rows[("all", "all", "all")]
    assert (total["sessions"], total["actions"]) == (6, 343)
    assert rows[("all", "visible", "all")]["actions"] == 159
    assert rows[("all", "hidden", "all")]["actions"] == 184
    # 257 messages, 62 strokes, 4 erases, 6 undos, 14 resets over 6 sessions
    for measure, count in [("messages", 257), ("draws", 62), ("erases", 4), ("undos", 6),
                           ("resets", 14)]:  # fmt: skip
        assert total[f"{measure}_mean"] * 6 == pytest.approx(count)
    guide, follower = rows[("all", "all", "guide")], rows[("all", "all", "follower")]
    assert guide["actions"] + follower["actions"] == 343
    assert guide["draws_mean"] == 0 and follower["draws_mean"] * 6 == pytest.approx(62)
    # the SD is the sample SD of the per-session counts (demo README: 51, 56, 58, 66, 50, 62)
    assert total["actions_sd"] == pytest.approx(pd.Series([51, 56, 58, 66, 50, 62]).std())
    assert not any(k[0] != "all" for k in rows)  # no split: one part


def test_stats_formats(cli, db_path) -> None:
    import_demo(cli)
    table = cli("stats").stdout
    assert "Per session: mean (SD)" in table and "57.2 (6.2)" in table
    md = cli("stats", "--format", "markdown").stdout
    assert md.startswith("### Per session: mean (SD)")
    assert "| condition | role | sessions | actions | actions/session |" in md
    narrow = CliRunner().invoke(app, ["stats", "--format", "markdown", "--db", str(db_path)],
                                env={"COLUMNS": "80"}).stdout  # fmt: skip
    rows = [line for line in narrow.splitlines() if line and not line.startswith("#")]
    assert rows and all(r.startswith("|") and r.endswith("|") for r in rows), narrow
    csv = pd.read_csv(io.StringIO(cli("stats", "--format", "csv").stdout))
    assert list(csv.columns[:6]) == [
        "split", "condition", "role", "sessions", "actions", "actions_mean",
    ]  # fmt: skip
    assert len(csv) == 9  # (hidden, visible, all) x (all, guide, follower)


def test_one_session_has_no_sd_and_missing_roles_count_as_zero() -> None:
    counts = session_counts(
        [
            {"session": "a", "condition": "c", "role": "guide", "action_type": "message", "n": 3},
            {"session": "b", "condition": "c", "role": "guide", "action_type": "message", "n": 1},
            {"session": "b", "condition": "c", "role": "follower", "action_type": "draw", "n": 2},
        ]
    )
    rows = _by(dataset_stats(counts, {"a": "test", "b": "train"}))
    follower = rows[("all", "c", "follower")]
    assert follower["sessions"] == 2 and follower["draws_mean"] == 1.0  # 0 in a, 2 in b
    assert rows[("test", "c", "all")]["actions_sd"] is None  # one session
    assert rows[("train", "c", "all")]["actions"] == 3
    assert ("all", "all", "all") not in rows  # one condition: no total row


def test_maptask_stats(cli, shared) -> None:
    assert cli("import", str(shared / "maptask" / "dialogues")).exit_code == 0
    rows = _by(json.loads(cli("stats", "-f", "json").stdout))
    assert rows[("all", "ec", "all")]["sessions"] == 48
    assert rows[("all", "nc", "all")]["sessions"] == 54
    assert rows[("all", "all", "all")]["actions"] == 21052
    assert (
        rows[("all", "all", "guide")]["actions"] + rows[("all", "all", "follower")]["actions"]
        == 21052
    )
    assert rows[("all", "all", "all")]["draws_mean"] == 0  # speech only


def test_stats_on_an_empty_project_says_what_to_do(cli, store) -> None:
    r = cli("stats")
    assert r.exit_code == 1
    assert "error: no actions yet" in r.stderr and "annotate import PATH" in r.stderr
