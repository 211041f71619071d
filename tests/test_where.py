"""`sample --where`: one condition, nothing that reorders, limits, recurses or draws by
chance (checked by SQLite's compiler and authorizer); Ctrl-C stops a long condition with one
line. A seed numpy cannot take is one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from annotate.errors import UsageError
from annotate.store import Store
from annotate.store.where import check_where


@pytest.fixture
def actions_db(cli, tmp_path: Path, db_path: Path) -> Path:
    log = tmp_path / "log.jsonl"
    log.write_text(
        "".join(
            json.dumps({"session": f"s{i % 4}", "content": f"turn {i}", "role": "guide"}) + "\n"
            for i in range(200)
        )
    )
    assert cli("import", str(log), "--format", "jsonl").exit_code == 0
    return db_path


@pytest.mark.parametrize(
    ("where", "problem"),
    [
        ("1=1 ORDER BY random() LIMIT 5 --", "ORDER is not allowed"),
        ("1=1 LIMIT 5", "LIMIT is not allowed"),
        ("1=1 LIMIT 5 OFFSET 2", "LIMIT is not allowed"),
        (
            "id IN (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT x FROM c)",
            "WITH RECURSIVE is not allowed",
        ),
        ("1=1; DELETE FROM labels", "';' is not allowed"),
        ("1=1)\n; DELETE FROM labels; SELECT (1", "';' is not allowed"),
        ("1=1) UNION SELECT 1 FROM labels WHERE (1", "UNION is not allowed"),
        ("1=1)) UNION SELECT 1 FROM labels WHERE ((1", "a ')' closes more than was opened"),
        ("1=1) ORDER BY random() --", "ORDER is not allowed"),
        ("1=1 GROUP BY session", "GROUP is not allowed"),
        ("(1=1", "a '(' or a quote is not closed"),
        ("content = 'x", "a quote is not closed"),
        ("random() % 2 = 0", "random() is not allowed"),
        ("id IN (SELECT id FROM actions ORDER BY RANDOM() LIMIT 5)", "random() is not allowed"),
        ("hex(randomblob(2)) > 'A'", "randomblob() is not allowed"),
        ("timestamp > datetime('now', '-1 day')", "'now' reads the clock"),
        ("julianday( ' NOW ' ) - julianday(timestamp) < 7", "'now' reads the clock"),
        ("strftime('%s', 'now') > 0", "'now' reads the clock"),
        ("timestamp > date(/* today */ 'now')", "'now' reads the clock"),
        # 'now' passed on to the date function through a function, a subquery or a CTE
        ("date(lower('now')) > '2020'", "'now' reads the clock"),
        ("date(trim(' now ')) > '2020'", "'now' reads the clock"),
        ("julianday((SELECT 'now')) > 0", "'now' reads the clock"),
        (
            "id IN (WITH t AS (SELECT 'now' AS n) SELECT a.id FROM actions a, t "
            "WHERE date(t.n) > '2020')",
            "'now' reads the clock",
        ),
        ("date() > '2020-01-01'", "date() reads the clock"),
        ("unixepoch() > 0", "unixepoch() reads the clock"),
        ("timestamp < CURRENT_TIMESTAMP", "CURRENT_TIMESTAMP is not allowed"),
        ("changes() = 0", "changes() is not allowed"),
    ],
)
def test_where_refuses_what_is_not_one_reproducible_condition(
    cli, actions_db: Path, where: str, problem: str
) -> None:
    r = cli("sample", "--n", "5", "--seed", "1", "--where", where)
    assert r.exit_code == 1
    first = r.stderr.splitlines()[0]
    assert first.startswith("error: --where ") and problem in first, r.stderr
    assert "no ORDER BY, LIMIT" in r.stderr  # the hint states the rules
    assert len(r.stderr.splitlines()) == 2
    with Store(actions_db) as s:
        assert s.samples.samples() == []


@pytest.mark.parametrize(
    "where",
    [
        "content = 'now'",  # a word in the log, not the clock
        "date(timestamp) = '2026-01-01' AND content LIKE 'now%'",
        "content = 'now' AND date(timestamp, '+1 day') > '2020'",
        "content = 'a -- b; ORDER BY (x'",
        '"order" = 1 OR 1=1',  # a quoted identifier is a name, not a keyword
        "1=1 -- a comment ends before the tool's parenthesis",
        "1=1 /* ) ORDER BY random() */",
        "session IN (SELECT session FROM actions GROUP BY session HAVING count(*) > 10)",
        "id IN (WITH s(x) AS (SELECT 's1') SELECT id FROM actions, s WHERE session = x)",
        "id IN (SELECT id FROM actions ORDER BY id LIMIT 50)",
        "strftime('%Y', timestamp) IS NULL",
    ],
)
def test_a_condition_that_only_reads_the_same_rows_is_kept(
    cli, actions_db: Path, where: str
) -> None:
    with Store(actions_db) as s:
        assert check_where(s.db, where) == where
    r = cli("sample", "--n", "5", "--seed", "3", "--where", where, "--name", "kept")
    # the query ran: a sample, or too few actions to draw from (no text in the log matches)
    assert r.exit_code == 0 or "5 is more than the 0 actions that match" in r.stderr, r.stderr


def test_the_check_compiles_on_a_read_only_connection(actions_db: Path) -> None:
    with Store(actions_db) as s, pytest.raises(UsageError, match="no such table: nowhere"):
        check_where(s.db, "id IN (SELECT id FROM nowhere)")
    actions_db.chmod(0o444)
    try:
        with Store(actions_db) as s:
            assert check_where(s.db, "session = 's1'") == "session = 's1'"
            with pytest.raises(UsageError, match="random"):
                check_where(s.db, "random() > 0")
    finally:
        actions_db.chmod(0o644)


def test_the_same_seed_gives_the_same_items_whatever_the_where(cli, actions_db: Path) -> None:
    for name in ("a", "b"):
        r = cli("sample", "--n", "5", "--seed", "7", "--name", name, "--where", "1=1 OR 1=1")
        assert r.exit_code == 0, r.stderr
    with Store(actions_db) as s:
        assert s.samples.sample_ids("a") == s.samples.sample_ids("b")


def test_ctrl_c_stops_a_long_where_with_one_line(actions_db: Path) -> None:
    endless = "(SELECT count(*) FROM actions a, actions b, actions c, actions d) > 0"
    args = ["sample", "--n", "5", "--seed", "1", "--where", endless, "--db", str(actions_db)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "annotate", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    time.sleep(3)  # start-up, then well inside the query
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 1
    assert err.startswith("error: --where: stopped by Ctrl-C after"), err
    assert "Traceback" not in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("seed", ["-1", str(2**63)])
def test_a_seed_numpy_or_sqlite_cannot_take_is_one_line(cli, actions_db: Path, seed: str) -> None:
    r = cli("sample", "--n", "5", "--seed", seed)
    assert r.exit_code == 1
    assert r.stderr.startswith(f"error: --seed must be a whole number from 0 to {2**63 - 1}, not")
    r = cli("split-sessions", "--test", "1", "--seed", seed)
    assert r.exit_code == 1 and r.stderr.startswith("error: --seed must be"), r.stderr
