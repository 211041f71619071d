"""`annotate sample` draws the same items for the same seed and file, release after release.

The expected lists were frozen from the draw of commit 8f993e9 (ids cut to their first 8
characters) on the demo project, whose actions are stored in another order than the
session order the draw follows (the demo's files are imported one participant at a time).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing

import pytest

from annotate.coding.sampling import draw_sample
from annotate.store import Store
from tests.test_analysis_support import DEMO

FROZEN = {
    "plain": (
        ["--n", "12", "--seed", "5"],
        "3d0cf4c5 02c5f49a 2eabe6b6 8950d454 0b1639e2 d20fc372 eedaf136 84f8f5ab 0b8735a8 "
        "7d12b49b df6c7ca7 61ec44f7",
    ),
    "where": (
        ["--n", "10", "--seed", "9", "--where", "action_type = 'message' AND role = 'guide'"],
        "52280395 85093cbc c89f621b c1734d3a 26d24425 2e650145 0b8735a8 12aee5b9 5c615e43 3c4a0d13",
    ),
    "strata": (
        ["--n", "15", "--seed", "2", "--stratify", "action_type"],
        "ba19d91a 05469607 2380c1d6 3a4a8309 243cc7e0 e4db7612 d7d05638 224864a9 9c8602dc "
        "f52d3cab 942f7432 f539fd6e d084d8f3 4ca7ffb2 6584374d",
    ),
    "both": (
        [
            *("--n", "14", "--seed", "11", "--stratify", "condition,role"),
            *("--where", "action_type <> 'reset'"),
        ],
        "222584bb 843a4ea0 daaa5746 6062bb7f b9ced5ce b9fa96fe 5f35c882 888fb942 99de04b7 "
        "7df179e6 3ed4b30e 3926f63c 4a30d49a cbcf1685",
    ),
}


@pytest.fixture
def demo(cli, db_path):
    assert cli("import", str(DEMO)).exit_code == 0
    with closing(sqlite3.connect(db_path)) as conn:
        stored = [r[0] for r in conn.execute("SELECT rowid FROM actions ORDER BY session, seq")]
    assert stored != sorted(stored)  # the draw cannot follow the rows' storage order
    return db_path


@pytest.mark.parametrize("name", FROZEN)
def test_a_draw_is_the_frozen_one(cli, demo, name) -> None:
    args, expected = FROZEN[name]
    r = cli("sample", *args, "--name", name)
    assert r.exit_code == 0, r.output
    with Store(demo) as store:
        ids = store.samples.sample_ids(name)
        n = store.db.conn.execute("SELECT n FROM samples WHERE name = ?", (name,)).fetchone()[0]
    assert [i[:8] for i in ids] == expected.split()
    assert n == len(ids)


def test_the_draw_from_the_file_is_the_draw_from_rows_in_memory(cli, demo) -> None:
    """:func:`draw_sample` (rows in memory) and the command (row ids read from SQLite,
    items written by SQLite) give the same items in the same order."""
    with Store(demo) as store:
        rows = store.actions.action_rows()
    for name, (args, _) in FROZEN.items():
        options = dict(zip(args[::2], args[1::2], strict=True))
        if "--where" in options:
            continue  # action_rows(where) is the same filter; covered by the frozen lists
        stratify = options.get("--stratify", "").split(",") if "--stratify" in options else []
        expected = draw_sample(rows, int(options["--n"]), int(options["--seed"]), stratify)
        assert cli("sample", *args, "--name", f"m-{name}").exit_code == 0
        with Store(demo) as store:
            assert store.samples.sample_ids(f"m-{name}") == expected


def test_replace_rewrites_the_items_and_a_failed_draw_keeps_the_old(cli, demo) -> None:
    assert cli("sample", "--n", "30", "--seed", "1").exit_code == 0
    with Store(demo) as store:
        before = store.samples.sample_ids("main")
    r = cli("sample", "--n", "400", "--seed", "2", "--replace")
    assert r.exit_code == 1 and "--n 400 is more than the 343 actions that match" in r.stderr
    with Store(demo) as store:
        assert store.samples.sample_ids("main") == before
    assert cli("sample", "--n", "5", "--seed", "2", "--replace").exit_code == 0
    with Store(demo) as store:
        after = store.samples.sample_ids("main")
        positions = [
            r[0]
            for r in store.db.conn.execute(
                "SELECT position FROM sample_items WHERE sample = 'main' ORDER BY position"
            )
        ]
    assert len(after) == 5 and after != before[:5] and positions == list(range(5))
