"""Migration 20: gold in tables of its own, ``labels`` a view (shipped; never edit, add one)."""

from __future__ import annotations

import sqlite3
from typing import Any

from annotate.store.migrations.script import run_script

GOLD_IDS = 1 << 62
"""Gold label ids start above this (``gold``'s AUTOINCREMENT is seeded with it), so that they
never meet the coders' label ids, which agreement runs cite beside them."""


def m020_gold_table(conn: sqlite3.Connection) -> None:
    """Gold (coder ``gold``) in tables of its own, out of the coders' labels.

    Writing the majority gold of 1M items into ``labels`` took longer than `adjudicate`'s
    goal (< 6 s), whoever wrote it: each gold row entered the table and five indexes, two of
    which interleave it with the coders' rows. Gold is now one narrow row per (codebook,
    action, question) in ``gold``, whose answer and provenance, shared by many items, are a
    row of ``gold_answers``. The coders' table is renamed ``coder_labels`` and ``labels`` is
    a view of both, with the columns the table had, so every reader (and any SQL a user
    wrote) still finds gold as coder ``gold``. The gold rows keep their revision; their ids
    move above :data:`GOLD_IDS`, and the agreement runs that cite them are changed to
    match."""
    import numpy as np

    run_script(
        conn,
        """
        CREATE TABLE gold_answers (
            id INTEGER PRIMARY KEY,
            codebook TEXT NOT NULL,
            codebook_hash TEXT NOT NULL,
            question TEXT NOT NULL,
            value TEXT,
            codes TEXT,
            other_text TEXT,
            source TEXT NOT NULL,
            meta TEXT NOT NULL,
            content TEXT NOT NULL UNIQUE
        );
        CREATE TABLE gold (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            codebook TEXT NOT NULL,
            action_id TEXT NOT NULL,
            question TEXT NOT NULL,
            answer INTEGER NOT NULL REFERENCES gold_answers(id),
            revision INTEGER NOT NULL,
            note TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        );
        CREATE UNIQUE INDEX gold_item ON gold(codebook, action_id, question)
        """,
    )
    # the few flagged labels: what a majority vote sets aside, found without a pass
    conn.execute(
        "CREATE INDEX labels_flagged ON labels(codebook, action_id, question, coder) WHERE flagged"
    )
    conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('gold', ?)", (GOLD_IDS,))
    content = (
        "json_array(l.codebook, l.codebook_hash, l.question, l.value, l.codes, l.other_text, "
        "l.source, l.meta)"
    )
    conn.execute(
        "INSERT OR IGNORE INTO gold_answers (codebook, codebook_hash, question, value, codes, "
        f"other_text, source, meta, content) SELECT l.codebook, l.codebook_hash, l.question, "
        f"l.value, l.codes, l.other_text, l.source, l.meta, {content} FROM labels l "
        "WHERE l.coder = 'gold' ORDER BY l.id"
    )
    conn.execute(
        "INSERT INTO gold (id, codebook, action_id, question, answer, revision, note, "
        f"created_at, updated_at) SELECT l.id + {GOLD_IDS}, l.codebook, l.action_id, "
        "l.question, a.id, l.revision, l.note, l.created_at, l.updated_at FROM labels l "
        f"JOIN gold_answers a ON a.content = {content} WHERE l.coder = 'gold' "
        "ORDER BY l.codebook, l.action_id, l.question"
    )
    moved = np.array(
        [r[0] for r in conn.execute("SELECT id FROM labels WHERE coder = 'gold' ORDER BY id")],
        dtype=np.int64,
    )
    if moved.size:
        _move_run_label_ids(conn, moved, GOLD_IDS)
    run_script(
        conn,
        f"""
        DELETE FROM labels WHERE coder = 'gold';
        ALTER TABLE labels RENAME TO coder_labels;
        {LABELS_VIEW}
        """,
    )
    # as shipped (the text of each trigger it stores ends "; END"); migration 23 drops them
    for trigger in LABELS_VIEW_WRITES.split("END;"):
        if trigger.strip():
            conn.execute(trigger.strip() + ("" if trigger.strip().endswith("END") else " END"))


LABELS_VIEW = """
    CREATE VIEW labels AS
    SELECT id, action_id, codebook, codebook_hash, question, coder, value, codes, other_text,
        note, flagged, skipped, seconds, source, meta, created_at, updated_at, revision
    FROM coder_labels
    UNION ALL
    SELECT g.id, g.action_id, g.codebook, a.codebook_hash, g.question, 'gold', a.value, a.codes,
        a.other_text, g.note, 0, 0, NULL, a.source, a.meta, g.created_at, g.updated_at,
        g.revision
    FROM gold g JOIN gold_answers a ON a.id = g.answer
"""
"""Every label, the coders' and the gold, with the columns of the table ``labels`` was."""

_GOLD_ANSWER = (
    "NEW.codebook, NEW.codebook_hash, NEW.question, NEW.value, NEW.codes, NEW.other_text, "
    "coalesce(NEW.source, 'tui'), coalesce(NEW.meta, '{}')"
)
_ADD_GOLD_ANSWER = (
    # not OR IGNORE: the conflict clause of the statement on the view (an INSERT OR REPLACE)
    # would replace it, and the answer row many gold rows share would go with its id
    "INSERT INTO gold_answers (codebook, codebook_hash, question, value, codes, "
    f"other_text, source, meta, content) SELECT {_GOLD_ANSWER}, json_array({_GOLD_ANSWER}) "
    f"WHERE NOT EXISTS (SELECT 1 FROM gold_answers WHERE content = json_array({_GOLD_ANSWER}))"
)
_GOLD_ANSWER_ID = f"(SELECT id FROM gold_answers WHERE content = json_array({_GOLD_ANSWER}))"
_CHANGED = (
    "(NEW.value IS NOT OLD.value OR NEW.codes IS NOT OLD.codes "
    "OR NEW.other_text IS NOT OLD.other_text OR NEW.codebook_hash IS NOT OLD.codebook_hash)"
)
LABELS_VIEW_WRITES = f"""
    CREATE TRIGGER labels_insert INSTEAD OF INSERT ON labels WHEN NEW.coder IS NOT 'gold' BEGIN
        INSERT INTO coder_labels (id, action_id, codebook, codebook_hash, question, coder, value,
            codes, other_text, note, flagged, skipped, seconds, source, meta, created_at,
            updated_at, revision)
        VALUES (NEW.id, NEW.action_id, NEW.codebook, NEW.codebook_hash, NEW.question, NEW.coder,
            NEW.value, NEW.codes, NEW.other_text, NEW.note, coalesce(NEW.flagged, 0),
            coalesce(NEW.skipped, 0), NEW.seconds, coalesce(NEW.source, 'tui'),
            coalesce(NEW.meta, '{{}}'), NEW.created_at, NEW.updated_at,
            coalesce(NEW.revision, 0));
    END;
    CREATE TRIGGER labels_insert_gold INSTEAD OF INSERT ON labels WHEN NEW.coder IS 'gold' BEGIN
        {_ADD_GOLD_ANSWER};
        INSERT INTO gold (codebook, action_id, question, answer, revision, note, created_at,
            updated_at)
        VALUES (NEW.codebook, NEW.action_id, NEW.question, {_GOLD_ANSWER_ID},
            CASE WHEN coalesce(NEW.revision, 0) = 0 THEN random() ELSE NEW.revision END,
            NEW.note, NEW.created_at, NEW.updated_at);
    END;
    CREATE TRIGGER labels_update INSTEAD OF UPDATE ON labels WHEN OLD.coder IS NOT 'gold' BEGIN
        UPDATE coder_labels SET action_id = NEW.action_id, codebook = NEW.codebook,
            codebook_hash = NEW.codebook_hash, question = NEW.question, coder = NEW.coder,
            value = NEW.value, codes = NEW.codes, other_text = NEW.other_text, note = NEW.note,
            flagged = NEW.flagged, skipped = NEW.skipped, seconds = NEW.seconds,
            source = NEW.source, meta = NEW.meta, created_at = NEW.created_at,
            updated_at = NEW.updated_at, revision = NEW.revision
        WHERE id = OLD.id;
    END;
    CREATE TRIGGER labels_update_gold INSTEAD OF UPDATE ON labels WHEN OLD.coder IS 'gold' BEGIN
        {_ADD_GOLD_ANSWER};
        UPDATE gold SET codebook = NEW.codebook, action_id = NEW.action_id,
            question = NEW.question, answer = {_GOLD_ANSWER_ID},
            revision = CASE WHEN NEW.revision IS NOT OLD.revision THEN NEW.revision
                WHEN {_CHANGED} THEN random() ELSE OLD.revision END,
            note = NEW.note, created_at = NEW.created_at, updated_at = NEW.updated_at
        WHERE id = OLD.id;
    END;
    CREATE TRIGGER labels_delete INSTEAD OF DELETE ON labels BEGIN
        DELETE FROM coder_labels WHERE id = OLD.id AND OLD.coder IS NOT 'gold';
        DELETE FROM gold WHERE id = OLD.id AND OLD.coder IS 'gold';
    END
"""
"""Writes to the view go to the table that holds the row, so SQL written for the table
``labels`` (a fix by hand, a script) still works; a changed answer gets a new revision."""


def _move_run_label_ids(conn: sqlite3.Connection, moved: Any, offset: int) -> None:
    """Add ``offset`` to the ids ``moved`` (sorted) wherever agreement runs cite them."""
    import numpy as np

    ids_dtype, digests_dtype = "<i8", ">u8"  # as agreement_runs packs them (migration 13)
    conn.execute("CREATE TEMP TABLE _moved_ids (id INTEGER PRIMARY KEY)")
    conn.executemany("INSERT INTO temp._moved_ids VALUES (?)", ((int(i),) for i in moved))
    conn.execute(
        f"UPDATE agreement_run_labels SET label_id = label_id + {offset} "
        "WHERE label_id IN (SELECT id FROM temp._moved_ids)"
    )
    conn.execute("DROP TABLE temp._moved_ids")
    rows = conn.execute("SELECT run_id, label_ids, digests FROM agreement_run_label_sets")
    for run_id, packed_ids, packed_digests in rows.fetchall():
        ids = np.frombuffer(packed_ids, dtype=ids_dtype).astype(np.int64)
        hit = np.isin(ids, moved)
        if not hit.any():
            continue
        ids[hit] += offset
        order = np.argsort(ids, kind="stable")
        digests = None
        if packed_digests is not None:
            digests = np.frombuffer(packed_digests, dtype=digests_dtype)[order].tobytes()
        conn.execute(
            "UPDATE agreement_run_label_sets SET label_ids = ?, digests = ? WHERE run_id = ?",
            (ids[order].astype(ids_dtype).tobytes(), digests, run_id),
        )
