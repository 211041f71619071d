"""Migrations 9-19: indexes for corpus scale, label revisions, packed run label sets
(shipped; never edit, add one)."""

from __future__ import annotations

import hashlib
import json
import sqlite3

from annotate.store.migrations.script import run_script


def m009_label_indexes(conn: sqlite3.Connection) -> None:
    """Indexes for reading labels at corpus scale (`agree`, `adjudicate`, `status`): every
    answered label of a codebook in item order with its whole answer, so that counting and
    the statistics read this index alone, in order, and never the table; the few skipped
    labels; a sample's items by action id with their position."""
    run_script(
        conn,
        """
        CREATE INDEX labels_answered ON labels(codebook, action_id, question, coder, value,
            codes, other_text, codebook_hash) WHERE value IS NOT NULL OR codes IS NOT NULL;
        CREATE INDEX labels_skipped ON labels(codebook, action_id) WHERE skipped;
        CREATE INDEX sample_items_action ON sample_items(sample, action_id, position)
        """,
    )


def m010_scale_indexes(conn: sqlite3.Connection) -> None:
    """Indexes for `status` at corpus scale (a million actions): the actions by condition
    and session (the overview counts this index alone), and each coder's labels of a
    codebook with what coding progress and the count of labels per codebook version read."""
    run_script(
        conn,
        """
        CREATE INDEX actions_condition ON actions(condition, session, action_type);
        CREATE INDEX labels_progress
            ON labels(codebook, coder, action_id, codebook_hash, value, codes, skipped, flagged,
                seconds)
        """,
    )


def m011_scale_indexes(conn: sqlite3.Connection) -> None:
    """Indexes for the queries that must stay fast at corpus scale (1M actions, 300k labels):
    the coders and the action types of a file found by a loose index scan instead of a pass
    over every row, the actions of some types (``llm-label`` targets) read by index, and
    whether the request cache holds replies to a prompt (``llm-label --dry-run``)."""
    run_script(
        conn,
        """
        CREATE INDEX labels_coder_codebook ON labels(coder, codebook);
        CREATE INDEX actions_type ON actions(action_type);
        CREATE INDEX llm_requests_prompt ON llm_requests(prompt_hash);
        """,
    )


def m012_actions_by_participant(conn: sqlite3.Connection) -> None:
    """Self-annotation (``annotate code --self NAME``) reads one participant's actions."""
    conn.execute("CREATE INDEX IF NOT EXISTS actions_participant ON actions(participant)")


def m013_agreement_run_label_sets(conn: sqlite3.Connection) -> None:
    """A run's labels as one row: the sorted label ids (little-endian int64) and the
    first 8 bytes of each label's SHA-256 digest in the same order, as two BLOBs, instead
    of one ``agreement_run_labels`` row per label (300k rows per `agree` at corpus scale).
    Runs stored before keep their rows; both are read back the same way."""
    run_script(
        conn,
        """
        CREATE TABLE agreement_run_label_sets (
            run_id INTEGER PRIMARY KEY REFERENCES agreement_runs(id) ON DELETE CASCADE,
            label_ids BLOB NOT NULL,
            digests BLOB
        )
        """,
    )


def m014_label_revisions(conn: sqlite3.Connection) -> None:
    """Each label's revision (see :mod:`annotate.store.revisions`): the hash of its content,
    set by the store on every write, kept in the index `agree` reads, so that a run keeps
    each label's digest without hashing every label in Python. Writes the store does not
    make get a new random revision from these triggers (an insert without one, or a change
    of answer that leaves it as it was)."""
    conn.execute("ALTER TABLE labels ADD COLUMN revision INTEGER NOT NULL DEFAULT 0")
    _hash_revisions(conn)
    new_revision = "BEGIN UPDATE labels SET revision = random() WHERE id = NEW.id; END"
    conn.execute(
        "CREATE TRIGGER labels_revision_insert AFTER INSERT ON labels WHEN NEW.revision = 0 "
        + new_revision
    )
    conn.execute(
        "CREATE TRIGGER labels_revision_update "
        "AFTER UPDATE OF value, codes, other_text, codebook_hash ON labels "
        "WHEN NEW.revision = OLD.revision AND (OLD.value IS NOT NEW.value "
        "OR OLD.codes IS NOT NEW.codes OR OLD.other_text IS NOT NEW.other_text "
        "OR OLD.codebook_hash IS NOT NEW.codebook_hash) " + new_revision
    )
    run_script(
        conn,
        """
        DROP INDEX labels_answered;
        CREATE INDEX labels_answered ON labels(codebook, action_id, question, coder, value,
            codes, other_text, codebook_hash, revision)
            WHERE value IS NOT NULL OR codes IS NOT NULL
        """,
    )


def m015_llm_items_by_run_and_phase(conn: sqlite3.Connection) -> None:
    """What a resumed ``llm-label`` run has stored, per phase (its items and how many were
    valid), counted in this index alone: from the table, 900,000 stored items took 2.8 s
    per count, twice per resume."""
    conn.execute("CREATE INDEX llm_items_run_phase ON llm_items(run_id, phase, valid)")


SCREENSHOT_WORD = "screenshot"
"""What the meta of an action that names a screenshot holds (the key of
:data:`annotate.media.SCREENSHOT_KEYS`): the condition of the index below."""


def m016_actions_naming_screenshots(conn: sqlite3.Connection) -> None:
    """The actions whose meta mentions a screenshot, as a partial index, so that the coding
    screen knows whether a sample of 100k items names any (it then shows the screenshot
    panel and key) from the few actions that mention one instead of reading every action of
    the sample (1.8 s at corpus scale). A superset: the session checks each meta it finds."""
    conn.execute(
        "CREATE INDEX IF NOT EXISTS actions_screenshot ON actions(id) "
        f"WHERE instr(meta, '{SCREENSHOT_WORD}') > 0"
    )


def m017_deferred_indexes(conn: sqlite3.Connection) -> None:
    """The indexes of ``actions`` that an import into an empty table dropped, to build them
    once at its end instead of row by row (``Actions.bulk_actions``), with the process
    that did it: if that process dies before its end, the next open of the file builds them
    (``Actions.restore_action_indexes``)."""
    conn.execute(
        "CREATE TABLE deferred_indexes (name TEXT PRIMARY KEY, sql TEXT NOT NULL,"
        " pid INTEGER NOT NULL)"
    )


def m018_llm_items_in_export_order(conn: sqlite3.Connection) -> None:
    """The index of migration 15 with the action after the phase: the LLM table is exported
    in (run, phase, action) order read from it, in ranges read side by side, instead of
    sorted whole before its first row; the counts of a resume still read it alone."""
    run_script(
        conn,
        """
        CREATE INDEX llm_items_run_phase_action ON llm_items(run_id, phase, action_id, valid);
        DROP INDEX llm_items_run_phase
        """,
    )


def m019_actions_condition_with_role(conn: sqlite3.Connection) -> None:
    """The role in ``actions_condition`` (after the columns `status` counts over), so that
    the report's actions per session, condition, role and type are counted in this index
    alone and in its order: through the old one each row's role was looked up in the
    table and the groups sorted, 1.1 s for a million actions against 0.25 s."""
    run_script(
        conn,
        """
        DROP INDEX IF EXISTS actions_condition;
        CREATE INDEX actions_condition ON actions(condition, session, action_type, role)
        """,
    )


def _hash_revisions(conn: sqlite3.Connection) -> None:
    """Every label's revision, the hash of its content, as annotate computed it when
    migration 14 shipped (annotate.store.revisions; a frozen copy: a migration imports no
    application code, so that a later change there cannot change what this one did)."""
    cursor = conn.execute(
        "SELECT id, action_id, question, coder, value, codes, other_text, codebook_hash FROM labels"
    )
    while rows := cursor.fetchmany(5_000):
        conn.executemany(
            "UPDATE labels SET revision = ? WHERE id = ?",
            [(_revision(r[1:]), r[0]) for r in rows],
        )


def _revision(row: tuple) -> int:
    action_id, question, coder, value, codes, other_text, codebook_hash = row
    content = json.dumps(
        [action_id, question, coder, value, json.loads(codes) if codes else [], other_text,
         codebook_hash],
        ensure_ascii=False,
        separators=(",", ":"),
    )  # fmt: skip
    return int.from_bytes(hashlib.sha256(content.encode()).digest()[:8], "big", signed=True)
