"""The schema is the same however a file got it: a blank file (every migration from zero)
and a file of each shipped schema version, upgraded, hold exactly the same objects with the
same SQL text in ``sqlite_master``. And shipped migrations stay as they shipped.

``tests/schemas/`` holds the schema of a blank file made by each version of annotate that
shipped a new or changed migration (main's history: the code of each commit run on an
empty database, ``sqlite_master`` and ``_migrations`` kept as JSON). A migration edited
after it shipped, or a new one that leaves an older file otherwise than a blank one, fails
here."""

from __future__ import annotations

import ast
import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from annotate.store import Store
from annotate.store.migrations import MIGRATIONS
from annotate.store.revisions import stored_revision

SHIPPED = sorted((Path(__file__).parent / "schemas").glob("*.json"))
MIGRATIONS_DIR = Path(__file__).parents[1] / "annotate" / "store" / "migrations"

EDITED_AFTER_SHIPPING = {
    # migration 20 as first shipped: no index labels_flagged (added by 3e29b24), and the
    # gold triggers of the view added an answer with INSERT OR IGNORE (83aa811); migration
    # 23 drops the triggers and makes the index where it is missing
    "1ecb095": {"labels_flagged", "labels_insert_gold", "labels_update_gold"},
    "3e29b24": {"labels_insert_gold", "labels_update_gold"},
}


def _schema(conn: sqlite3.Connection) -> set[tuple[str, str, str, str]]:
    return {
        tuple(r)
        for r in conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL"
        )
    }


def _shipped(path: Path) -> dict:
    return json.loads(path.read_text())


def _file_of(shipped: dict, path: Path) -> None:
    """A file with the schema and the ``_migrations`` of a shipped version (no rows)."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("BEGIN")
        for _, name, _, sql in shipped["schema"]:
            if not name.startswith("sqlite_"):  # made by SQLite (AUTOINCREMENT)
                conn.execute(sql)
        conn.executemany(
            "INSERT INTO _migrations (id, name, applied_at) VALUES (?, ?, 'then')",
            shipped["migrations"],
        )
        conn.execute("COMMIT")


@pytest.fixture(scope="module")
def blank_schema(tmp_path_factory: pytest.TempPathFactory) -> set:
    with Store(tmp_path_factory.mktemp("blank") / "blank.db") as s:
        return _schema(s.db.conn)


def test_the_shipped_versions_are_here() -> None:
    numbers = {_shipped(p)["migrations"][-1][0] for p in SHIPPED}
    assert {1, 12, 13, 14, 19, 20, 22} <= numbers


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_an_upgraded_file_has_the_blank_files_schema(
    path: Path, tmp_path: Path, blank_schema: set
) -> None:
    _file_of(_shipped(path), tmp_path / "old.db")
    with Store(tmp_path / "old.db") as s:
        assert s.db.schema_version() == max(n for n, _ in MIGRATIONS)
        upgraded = _schema(s.db.conn)
    assert {r[1] for r in upgraded - blank_schema} == set()  # nothing more, nothing other
    assert {r[1] for r in blank_schema - upgraded} == set()  # nothing missing
    assert upgraded == blank_schema


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_the_migrations_do_what_they_did_when_shipped(path: Path) -> None:
    """Today's code of the migrations a version had gives that version's schema (the only
    differences: those of the edit to migration 20 listed above)."""
    shipped = _shipped(path)
    by_number = dict(MIGRATIONS)
    with closing(sqlite3.connect(":memory:", isolation_level=None)) as conn:
        conn.execute(
            "CREATE TABLE _migrations "
            "(id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        for number, name in shipped["migrations"]:
            assert by_number[number].__name__ == name  # never renumbered nor renamed
            conn.execute("BEGIN")
            by_number[number](conn)
            conn.execute("COMMIT")
        now = _schema(conn)
    then = {tuple(r) for r in shipped["schema"]}
    differ = {r[1] for r in now ^ then}
    assert differ == EDITED_AFTER_SHIPPING.get(shipped["commit"], set())


def test_migrations_import_no_application_code() -> None:
    """Libraries and the migrations' own modules only: what a migration did when it shipped
    cannot change with the application."""
    own = "annotate.store.migrations"
    for path in sorted(MIGRATIONS_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                assert name == own or name.startswith(own + ".") or not (
                    name == "annotate" or name.startswith("annotate.")
                ), f"{path.name}: imports {name}"


def test_no_migration_module_is_long() -> None:
    assert max(len(p.read_text().splitlines()) for p in MIGRATIONS_DIR.glob("*.py")) <= 600


def test_migration_14s_copy_of_the_revision_is_the_stores() -> None:
    from annotate.store.migrations.m009_m019 import _revision

    rows = [
        ("s:1", "act", "ana", "Initiate", None, None, "h1"),
        ("s:é", "codes", "bén", None, '["a", "ü"]', "autre \"chose\"\n", "h2"),
        ("s:2", "q", "gold", None, None, None, "h3"),
    ]
    assert [_revision(r) for r in rows] == [stored_revision(r) for r in rows]


def test_the_view_labels_is_read_only(tmp_path: Path) -> None:
    """Writing to ``labels`` fails with SQLite's own error: the store writes the tables."""
    Store(tmp_path / "p.db").close()
    with closing(sqlite3.connect(tmp_path / "p.db")) as conn:
        for sql in (
            "INSERT INTO labels (action_id, codebook, codebook_hash, question, coder, "
            "created_at, updated_at) VALUES ('a', 'b', 'h', 'q', 'ana', 't', 't')",
            "UPDATE labels SET value = 'x'",
            "DELETE FROM labels",
        ):
            with pytest.raises(sqlite3.OperationalError, match="cannot modify labels"):
                conn.execute(sql)
        triggers = conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        assert triggers.fetchall() == []
