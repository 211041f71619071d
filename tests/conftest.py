"""Shared fixtures: a temp project file, the CLI runner, the read-only ../shared data."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

import annotate.render.console  # noqa: F401
from annotate.cli import app
from annotate.store import Store

# The CLI's consoles are made when first imported, and a Rich console made while COLUMNS is
# set keeps that width. The CLI imports them lazily (with the first command run): made here,
# before any test sets COLUMNS, they read it at each print, as in a new process.

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
DEMO = REPO / "data" / "demo"


@pytest.fixture(autouse=True)
def _no_ambient_db(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANNOTATE_DB", raising=False)
    os.environ.setdefault("NO_COLOR", "1")


@pytest.fixture
def shared() -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared (real Map Task and platform data) is not beside this checkout")
    return SHARED


def foreign_sqlite(path: Path, table: str) -> bytes:
    """Write a SQLite file of some other program (one table); return its bytes."""
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(f"CREATE TABLE {table} (x)")
    return path.read_bytes()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "project.db"


@pytest.fixture
def store(db_path: Path):
    s = Store(db_path)
    yield s
    s.close()


@pytest.fixture
def cli(db_path: Path) -> Callable[..., Result]:
    """Run `annotate ARGS --db <temp file>`; returns click's Result (exit_code, stdout, stderr)."""
    runner = CliRunner()

    def run(*args: str, db: Path | None = db_path) -> Result:
        argv = [*args, "--db", str(db)] if db is not None else list(args)
        return runner.invoke(app, argv, catch_exceptions=False, env={"COLUMNS": "160"})

    return run
