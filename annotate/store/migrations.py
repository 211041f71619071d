"""Numbered, append-only schema migrations.

Each migration runs in one transaction together with its row in ``_migrations``. Never edit
a migration that has shipped: add a new one with the next number.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

Migration = Callable[[sqlite3.Connection], None]


def run_script(conn: sqlite3.Connection, script: str) -> None:
    """Run ``;``-separated DDL inside the current transaction.

    ``executescript`` would COMMIT first, breaking the one-transaction-per-migration rule.
    """
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def m001_initial(conn: sqlite3.Connection) -> None:
    run_script(
        conn,
        """
        CREATE TABLE imports (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            format TEXT NOT NULL,
            n_actions INTEGER NOT NULL,
            n_new INTEGER NOT NULL,
            imported_at TEXT NOT NULL
        );
        CREATE TABLE actions (
            id TEXT PRIMARY KEY,
            session TEXT NOT NULL,
            participant TEXT,
            role TEXT,
            seq INTEGER NOT NULL,
            timestamp TEXT,
            elapsed_s REAL,
            action_type TEXT NOT NULL,
            content TEXT,
            condition TEXT,
            meta TEXT NOT NULL DEFAULT '{}',
            import_id INTEGER REFERENCES imports(id)
        );
        CREATE INDEX actions_session_seq ON actions(session, seq);
        CREATE TABLE codebooks (
            name TEXT NOT NULL,
            version_hash TEXT NOT NULL,
            title TEXT NOT NULL,
            version TEXT NOT NULL,
            text TEXT NOT NULL,
            source TEXT,
            added_at TEXT NOT NULL,
            PRIMARY KEY (name, version_hash)
        );
        CREATE TABLE samples (
            name TEXT PRIMARY KEY,
            seed INTEGER,
            n INTEGER NOT NULL,
            stratify TEXT,
            where_clause TEXT,
            origin TEXT NOT NULL DEFAULT 'random',
            created_at TEXT NOT NULL
        );
        CREATE TABLE sample_items (
            sample TEXT NOT NULL REFERENCES samples(name) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            action_id TEXT NOT NULL REFERENCES actions(id),
            PRIMARY KEY (sample, position),
            UNIQUE (sample, action_id)
        );
        CREATE TABLE labels (
            id INTEGER PRIMARY KEY,
            action_id TEXT NOT NULL REFERENCES actions(id),
            codebook TEXT NOT NULL,
            codebook_hash TEXT NOT NULL,
            question TEXT NOT NULL,
            coder TEXT NOT NULL,
            value TEXT,
            codes TEXT,
            other_text TEXT,
            note TEXT,
            flagged INTEGER NOT NULL DEFAULT 0,
            skipped INTEGER NOT NULL DEFAULT 0,
            seconds REAL,
            source TEXT NOT NULL DEFAULT 'tui',
            meta TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            UNIQUE (action_id, codebook, question, coder)
        );
        CREATE INDEX labels_codebook_coder ON labels(codebook, coder);
        """,
    )


MIGRATIONS: list[tuple[int, Migration]] = [
    (1, m001_initial),
]
