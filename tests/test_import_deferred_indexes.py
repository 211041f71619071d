"""An import into an empty file builds the indexes it does not read at its end
(``Actions.bulk_actions(defer_indexes=True)``): after it, or after it failed on a bad
file, or died, every index of ``actions`` is there, as a file that never dropped one has."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from contextlib import closing
from pathlib import Path

import pytest

from annotate.errors import ImportFormatError
from annotate.io import importing
from annotate.io.importing import import_files
from annotate.render.output import tell_waiting
from annotate.store import Store

REPO = Path(__file__).resolve().parents[1]


def _folder(folder: Path, files: int = 6, per_file: int = 30) -> Path:
    folder.mkdir()
    n = 0
    for f in range(files):
        lines = []
        for _ in range(per_file):
            n += 1
            lines.append(json.dumps({
                "action_id": f"a{n}", "session_id": f"s{f // 2}", "participant_id": f"p{f}",
                "participant_name": "Guide" if f % 2 else "Follower",
                "action_type": "send_message" if n % 3 else "map_draw_stop",
                "action_content": "go", "timestamp": f"2026-04-10T10:{n // 60:02d}:{n % 60:02d}Z",
                "condition": "hidden", "metadata": {"screenshot": f"s/{n}.jpg"},
            }))  # fmt: skip
        (folder / f"p{f}.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def _indexes(db: Path) -> list[tuple[str, str]]:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'actions'"
            " ORDER BY name"
        ).fetchall()


def _deferred(db: Path) -> list[tuple]:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT name, pid FROM deferred_indexes").fetchall()


@pytest.fixture
def every_index(tmp_path: Path) -> list[tuple[str, str]]:
    Store(tmp_path / "fresh.db").close()
    indexes = _indexes(tmp_path / "fresh.db")
    assert len(indexes) >= 6  # the primary key's, by session, and those left for the end
    return indexes


def test_an_import_in_groups_ends_with_every_index(tmp_path, monkeypatch, every_index) -> None:
    monkeypatch.setattr(importing, "GROUP_ROWS", 50)  # 4 groups
    built = []
    with Store(tmp_path / "p.db") as store:
        original = store.actions.restore_action_indexes

        def restore(**kwargs) -> None:  # what the run left for its end, seen at its end
            built.extend(r[0] for r in store.db.conn.execute("SELECT name FROM deferred_indexes"))
            original(**kwargs)

        monkeypatch.setattr(store.actions, "restore_action_indexes", restore)
        import_files(store, [_folder(tmp_path / "logs")])
    assert sorted(built) == sorted(
        n for n, sql in every_index if sql and n != "actions_session_seq"
    )
    assert _indexes(tmp_path / "p.db") == every_index
    assert _deferred(tmp_path / "p.db") == []


def test_a_bad_file_leaves_the_files_before_it_indexed(tmp_path, monkeypatch, every_index) -> None:
    monkeypatch.setattr(importing, "GROUP_ROWS", 50)
    folder = _folder(tmp_path / "logs")
    (folder / "p9.jsonl").write_text('{"action_id": "x"\n')
    with Store(tmp_path / "p.db") as store, pytest.raises(ImportFormatError, match=r"p9\.jsonl:1"):
        import_files(store, [folder])
    assert _indexes(tmp_path / "p.db") == every_index
    assert _deferred(tmp_path / "p.db") == []
    with closing(sqlite3.connect(tmp_path / "p.db")) as conn:
        assert conn.execute("SELECT count(*) FROM actions").fetchone()[0] == 180


def test_an_import_that_dies_leaves_its_indexes_to_the_next_open(
    tmp_path: Path, every_index, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _folder(tmp_path / "logs")
    db = tmp_path / "p.db"
    # the import is killed after its groups are written, before it builds the indexes
    script = textwrap.dedent(f"""
        import os
        from pathlib import Path
        from annotate.io import importing
        from annotate.store import Store
        importing.GROUP_ROWS = 50
        store = Store({str(db)!r})
        store.actions.restore_action_indexes = lambda **kw: os._exit(9)
        importing.import_files(store, [Path({str(folder)!r})])
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen([sys.executable, "-c", script], env=env, stderr=subprocess.PIPE)
    _, err = child.communicate()
    assert child.returncode == 9, err
    left = _deferred(db)
    assert len(left) == 4 and {pid for _, pid in left} == {child.pid}
    assert len(_indexes(db)) == 2  # the primary key's and the one by session
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT count(*) FROM actions").fetchone()[0] == 180
    # while the process that left them runs (here: this one), an open leaves them
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE deferred_indexes SET pid = ?", (os.getpid(),))
    capsys.readouterr()
    Store(db, on_wait=tell_waiting).close()
    assert len(_indexes(db)) == 2
    assert capsys.readouterr().err == ""
    # once it is gone, the next open builds them, and says so
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("UPDATE deferred_indexes SET pid = ?", (child.pid,))
    with Store(db, on_wait=tell_waiting) as store:
        assert store.actions.count_actions() == 180
    assert capsys.readouterr().err == (
        f"{db}: building the indexes an interrupted import left, once "
        "(seconds for a million actions)\n"
    )
    assert _indexes(db) == every_index
    assert _deferred(db) == []
    Store(db, on_wait=tell_waiting).close()
    assert capsys.readouterr().err == ""


def test_an_import_into_a_file_with_actions_drops_no_index(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(importing, "GROUP_ROWS", 50)
    folder = _folder(tmp_path / "logs")
    with Store(tmp_path / "p.db") as store:
        import_files(store, sorted(folder.glob("*.jsonl"))[:1])
        dropped = []
        store.db.conn.set_authorizer(
            lambda action, name, *_: dropped.append(name)
            if action == sqlite3.SQLITE_DROP_INDEX
            else sqlite3.SQLITE_OK
        )
        import_files(store, [folder])
        store.db.conn.set_authorizer(None)
    assert dropped == []
