"""Migrations 21 on (shipped ones are never edited: add one)."""

from __future__ import annotations

import sqlite3

from annotate.store.migrations.script import run_script


def m021_embeddings(conn: sqlite3.Connection) -> None:
    """Text embeddings by model and text hash (sha256 of the UTF-8 text), so that a text
    is embedded once per model: the vector as float32 bytes."""
    run_script(
        conn,
        """
        CREATE TABLE embeddings (
            model TEXT NOT NULL,
            text_sha256 TEXT NOT NULL,
            dim INTEGER NOT NULL,
            vector BLOB NOT NULL,
            PRIMARY KEY (model, text_sha256)
        ) WITHOUT ROWID
        """,
    )


def m022_split_strategy(conn: sqlite3.Connection) -> None:
    """How a few-shot split chose its shots: ``cover`` (as many distinct labels as the
    shots allow; every split before this one) or ``random`` (a plain random draw, as the
    ALMANAC paper did)."""
    conn.execute("ALTER TABLE llm_splits ADD COLUMN strategy TEXT NOT NULL DEFAULT 'cover'")


LABEL_WRITE_TRIGGERS = (
    "labels_insert",
    "labels_insert_gold",
    "labels_update",
    "labels_update_gold",
    "labels_delete",
    "labels_revision_insert",
    "labels_revision_update",
)
"""The triggers of migrations 14 and 20: the INSTEAD OF writes of the view ``labels`` and the
random revision of a coder's label written without one."""


def m023_labels_read_only(conn: sqlite3.Connection) -> None:
    """One rule for writing a label, in the store (``annotate.store.labels``, ``gold``):
    ``labels`` is a read-only view (writing to it fails), and no trigger gives a revision
    any more: every write sets the hash of the label's content.

    Migration 20 was edited after it shipped (the index ``labels_flagged`` added, the gold
    triggers' INSERT OR IGNORE changed): a file upgraded by its first version lacks the
    index, which is made here if missing, so that every file ends with the same schema (its
    text as SQLite wrote it when migration 20 renamed the table).
    Revisions the triggers made at random stay as they are: agreement runs cite them."""
    for name in LABEL_WRITE_TRIGGERS:
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
    conn.execute(
        "CREATE INDEX IF NOT EXISTS labels_flagged "
        "ON \"coder_labels\"(codebook, action_id, question, coder) WHERE flagged"
    )
