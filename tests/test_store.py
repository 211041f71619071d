"""The store: schema from blank, upgrades, refusal of newer files, concurrent writers."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
from pathlib import Path

import pytest
import sqlite_utils

from annotate.codebook import Answer, find_codebook
from annotate.errors import StoreError
from annotate.models import Action
from annotate.render.output import tell_waiting
from annotate.store import Store
from annotate.store.migrations import MIGRATIONS
from tests.conftest import foreign_sqlite

EXPECTED_TABLES = {
    "_migrations",
    "imports",
    "actions",
    "codebooks",
    "samples",
    "sample_items",
    "coder_labels",
    "gold",
    "gold_answers",
}


def _actions(n: int, session: str = "s1") -> list[Action]:
    return [
        Action(
            id=f"{session}:{i}",
            session=session,
            seq=i,
            action_type="message",
            content=f"line {i}",
            role="guide" if i % 2 else "follower",
        )
        for i in range(n)
    ]


def test_blank_file_gets_every_migration(db_path: Path) -> None:
    with Store(db_path) as s:
        assert s.db.schema_version() == max(n for n, _ in MIGRATIONS)
        utils = sqlite_utils.Database(s.db.conn)
        assert set(utils.table_names()) >= EXPECTED_TABLES
        assert "labels" in utils.view_names()  # the coders' labels and the gold
        assert s.db.query("PRAGMA journal_mode")[0][0] == "wal"
        names = [r["name"] for r in s.db.query("SELECT name FROM _migrations ORDER BY id")]
        assert names == [m.__name__ for _, m in MIGRATIONS]


def test_reopening_applies_nothing_twice(db_path: Path) -> None:
    Store(db_path).close()
    with Store(db_path) as s:
        assert s.db.query("SELECT count(*) FROM _migrations")[0][0] == len(MIGRATIONS)


def test_older_file_is_upgraded(db_path: Path) -> None:
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TABLE _migrations (id INTEGER PRIMARY KEY, name TEXT, applied_at TEXT)")
    conn.commit()
    conn.close()
    with Store(db_path) as s:
        assert s.db.schema_version() == max(n for n, _ in MIGRATIONS)


def test_upgrading_a_large_file_says_so_once(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import annotate.store.base as base

    newest = max(n for n, _ in MIGRATIONS)
    with Store(db_path) as s:
        s.actions.add_actions(_actions(3), path="x", sha256="x", fmt="jsonl")

    def one_more(number: int) -> None:  # a newer annotate, with one more migration
        def m_next(conn: sqlite3.Connection) -> None:
            conn.execute(f"CREATE TABLE next_{number} (x)")

        monkeypatch.setattr(base, "MIGRATIONS", [*base.MIGRATIONS, (number, m_next)])

    one_more(newest + 1)
    Store(db_path, on_wait=tell_waiting).close()  # a small file is upgraded without a word
    assert capsys.readouterr().err == ""
    one_more(newest + 2)
    monkeypatch.setattr(base, "LARGE_FILE_BYTES", 1)
    with Store(db_path, on_wait=tell_waiting) as s:
        assert s.db.schema_version() == newest + 2
    assert capsys.readouterr().err == (
        f"{db_path}: upgrading this project file from schema {newest + 1} to {newest + 2}, "
        "once (a large file: this can take a minute)\n"
    )
    Store(db_path, on_wait=tell_waiting).close()  # up to date: nothing to say
    assert capsys.readouterr().err == ""


def test_newer_file_is_refused_with_a_clear_message(db_path: Path) -> None:
    Store(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute("INSERT INTO _migrations VALUES (999, 'm999_future', 'x')")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=r"newer version of annotate \(schema 999"):
        Store(db_path)


def test_another_programs_sqlite_file_is_refused_untouched(tmp_path: Path) -> None:
    foreign = tmp_path / "theirs.sqlite"
    before = foreign_sqlite(foreign, "measurements")
    with pytest.raises(StoreError, match=r"holds other tables: measurements"):
        Store(foreign)
    assert foreign.read_bytes() == before
    empty = tmp_path / "empty.db"
    empty.touch()
    with pytest.raises(StoreError, match=r"empty.db: not an annotate database \(it is empty"):
        Store(empty, create=False)
    assert empty.stat().st_size == 0
    with Store(empty) as s:  # creating one is what an empty file is for
        assert s.db.schema_version() == max(n for n, _ in MIGRATIONS)


def test_not_a_database(tmp_path: Path) -> None:
    bad = tmp_path / "notes.db"
    bad.write_text("hello, this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not an annotate database"):
        Store(bad)


def test_answer_keeps_first_time_and_updates(store: Store) -> None:
    store.actions.add_actions(_actions(3), path="x", sha256="x", fmt="jsonl")
    cb = find_codebook("traum").codebook
    store.labels.save_answer("s1:0", cb, "act", "ana", Answer("Initiate"), seconds=2.0)
    first = store.labels.label_rows("traum")[0]
    store.labels.save_answer("s1:0", cb, "act", "ana", Answer("Continue"), seconds=1.5)
    again = store.labels.label_rows("traum")[0]
    assert again["value"] == "Continue"
    assert again["created_at"] == first["created_at"]
    assert again["updated_at"] >= first["updated_at"]
    assert again["seconds"] == pytest.approx(3.5)
    assert again["codebook_hash"] == cb.version_hash


def test_invalid_answer_is_refused_and_nothing_written(store: Store) -> None:
    store.actions.add_actions(_actions(1), path="x", sha256="x", fmt="jsonl")
    cb = find_codebook("traum").codebook
    with pytest.raises(Exception, match="unknown code"):
        store.labels.save_answer("s1:0", cb, "act", "ana", Answer("Nope"))
    assert store.labels.label_rows("traum") == []


def _write_labels(db: str, coder: str, n: int) -> None:
    cb = find_codebook("traum").codebook
    with Store(db) as s:
        for i in range(n):
            s.labels.save_answer(f"s1:{i}", cb, "act", coder, Answer("Acknowledge"), seconds=0.1)


def test_two_processes_write_to_one_file_at_once(db_path: Path) -> None:
    with Store(db_path) as s:
        s.actions.add_actions(_actions(150), path="x", sha256="x", fmt="jsonl")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_write_labels, args=(str(db_path), c, 150)) for c in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(180)
        assert p.exitcode == 0
    with Store(db_path) as s:
        counts = dict(s.db.query("SELECT coder, count(*) FROM labels GROUP BY coder"))
    assert counts == {"a": 150, "b": 150}
