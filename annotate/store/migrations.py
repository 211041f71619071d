"""Numbered, append-only schema migrations.

Each migration runs in one transaction together with its row in ``_migrations``. Never edit
a migration that has shipped: add a new one with the next number.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

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


def m002_llm(conn: sqlite3.Connection) -> None:
    """Few-shot splits, and the LLM coder's runs, cached requests and per-item results."""
    run_script(
        conn,
        """
        CREATE TABLE llm_splits (
            name TEXT PRIMARY KEY,
            codebook TEXT NOT NULL,
            codebook_hash TEXT NOT NULL,
            gold_coder TEXT NOT NULL,
            sample TEXT,
            seed INTEGER NOT NULL,
            n_shots INTEGER NOT NULL,
            n_heldout INTEGER NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE TABLE llm_split_items (
            split TEXT NOT NULL REFERENCES llm_splits(name) ON DELETE CASCADE,
            action_id TEXT NOT NULL REFERENCES actions(id),
            role TEXT NOT NULL CHECK (role IN ('shot', 'heldout')),
            position INTEGER NOT NULL,
            label TEXT,
            PRIMARY KEY (split, action_id)
        );
        CREATE TABLE llm_runs (
            id INTEGER PRIMARY KEY,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            status TEXT NOT NULL DEFAULT 'running',
            coder TEXT NOT NULL,
            model TEXT NOT NULL,
            endpoint_host TEXT NOT NULL,
            codebook TEXT NOT NULL,
            codebook_hash TEXT NOT NULL,
            split TEXT NOT NULL,
            prompt_hash TEXT NOT NULL,
            shot_ids TEXT NOT NULL,
            temperature REAL NOT NULL,
            votes INTEGER NOT NULL,
            context INTEGER NOT NULL,
            target TEXT,
            min_kappa REAL,
            forced INTEGER NOT NULL DEFAULT 0,
            validate_only INTEGER NOT NULL DEFAULT 0,
            gate TEXT,
            kappa REAL,
            report TEXT,
            response_format TEXT,
            settings TEXT NOT NULL DEFAULT '{}',
            sent INTEGER NOT NULL DEFAULT 0,
            cached INTEGER NOT NULL DEFAULT 0,
            tokens_in INTEGER NOT NULL DEFAULT 0,
            tokens_out INTEGER NOT NULL DEFAULT 0,
            cost REAL
        );
        CREATE TABLE llm_prompts (
            prompt_hash TEXT PRIMARY KEY,
            messages TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE TABLE llm_requests (
            request_hash TEXT PRIMARY KEY,
            prompt_hash TEXT NOT NULL REFERENCES llm_prompts(prompt_hash),
            tail TEXT NOT NULL,
            model TEXT NOT NULL,
            endpoint_host TEXT NOT NULL,
            temperature REAL NOT NULL,
            vote INTEGER NOT NULL,
            schema TEXT NOT NULL,
            response_format TEXT NOT NULL,
            reply TEXT NOT NULL,
            tokens_in INTEGER NOT NULL,
            tokens_out INTEGER NOT NULL,
            latency_s REAL NOT NULL,
            attempts INTEGER NOT NULL,
            run_id INTEGER REFERENCES llm_runs(id),
            created_at TEXT NOT NULL
        );
        CREATE TABLE llm_items (
            run_id INTEGER NOT NULL REFERENCES llm_runs(id) ON DELETE CASCADE,
            action_id TEXT NOT NULL REFERENCES actions(id),
            phase TEXT NOT NULL CHECK (phase IN ('validate', 'label')),
            valid INTEGER NOT NULL,
            answer TEXT,
            error TEXT,
            confidence REAL,
            request_hashes TEXT NOT NULL,
            raw_replies TEXT NOT NULL,
            tokens_in INTEGER NOT NULL,
            tokens_out INTEGER NOT NULL,
            latency_s REAL NOT NULL,
            cached INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (run_id, action_id)
        );
        CREATE INDEX llm_items_action ON llm_items(action_id);
        """,
    )


def m004_session_splits(conn: sqlite3.Connection) -> None:
    """Named session-level train/test splits (`annotate split-sessions`)."""
    run_script(
        conn,
        """
        CREATE TABLE session_splits (
            name TEXT PRIMARY KEY,
            per TEXT,
            n_test INTEGER NOT NULL,
            seed INTEGER NOT NULL,
            codebooks TEXT NOT NULL DEFAULT '[]',
            coders TEXT NOT NULL DEFAULT '[]',
            method TEXT NOT NULL,
            objective REAL NOT NULL,
            random_objective REAL,
            details TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL
        );
        CREATE TABLE session_split_items (
            split TEXT NOT NULL REFERENCES session_splits(name) ON DELETE CASCADE,
            session TEXT NOT NULL,
            part TEXT NOT NULL CHECK (part IN ('train', 'test')),
            grp TEXT,
            PRIMARY KEY (split, session)
        );
        """,
    )


def m003_agreement_runs(conn: sqlite3.Connection) -> None:
    """`annotate agree` runs: inputs, settings and results, and the exact labels used."""
    run_script(
        conn,
        """
        CREATE TABLE agreement_runs (
            id INTEGER PRIMARY KEY,
            created_at TEXT NOT NULL,
            annotate_version TEXT NOT NULL,
            codebook TEXT NOT NULL,
            codebook_hash TEXT NOT NULL,
            label_codebook_hashes TEXT NOT NULL DEFAULT '[]',
            sample TEXT,
            sample_hash TEXT,
            coders TEXT NOT NULL,
            questions TEXT NOT NULL,
            n_labels INTEGER NOT NULL,
            labels_hash TEXT NOT NULL,
            settings TEXT NOT NULL DEFAULT '{}',
            results TEXT NOT NULL
        );
        CREATE TABLE agreement_run_labels (
            run_id INTEGER NOT NULL REFERENCES agreement_runs(id) ON DELETE CASCADE,
            label_id INTEGER NOT NULL,
            PRIMARY KEY (run_id, label_id)
        ) WITHOUT ROWID;
        CREATE INDEX agreement_run_labels_label ON agreement_run_labels(label_id);
        """,
    )


def m005_agreement_run_digests(conn: sqlite3.Connection) -> None:
    """A digest of each label's content as an agreement run read it, so `annotate agree
    --run` can tell which labels changed since (runs stored before keep NULL)."""
    run_script(conn, "ALTER TABLE agreement_run_labels ADD COLUMN digest TEXT")


def m006_llm_endpoint_formats(conn: sqlite3.Connection) -> None:
    """The response format each endpoint + model accepted, so that the next run starts there
    and sends no request that is bound to be refused."""
    run_script(
        conn,
        """
        CREATE TABLE llm_endpoint_formats (
            endpoint_host TEXT NOT NULL,
            model TEXT NOT NULL,
            response_format TEXT NOT NULL,
            reason TEXT,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (endpoint_host, model)
        );
        """,
    )


def m007_explicit_other(conn: sqlite3.Connection) -> None:
    """Codebooks declare "Other" explicitly (``allow_other: true``). The versions stored
    before were written when an omitted ``allow_other`` meant true: ``other_by_default`` = 1
    keeps that reading for them, so their text, version hash, codes and labels are unchanged.
    Versions stored from now on have 0."""
    run_script(
        conn,
        """
        ALTER TABLE codebooks ADD COLUMN other_by_default INTEGER NOT NULL DEFAULT 0;
        UPDATE codebooks SET other_by_default = 1
        """,
    )


def m008_llm_batches(conn: sqlite3.Connection) -> None:
    """Batches of LLM requests handed to a batch API (``llm-label --batch``) or written to a
    file for an offline runner (``--batch-export``), the items each holds and the request
    of each line (custom_id = request hash), so that replies are matched and stored as
    online replies, in any number of later invocations."""
    run_script(
        conn,
        """
        CREATE TABLE llm_batches (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES llm_runs(id),
            kind TEXT NOT NULL CHECK (kind IN ('api', 'file')),
            phase TEXT NOT NULL CHECK (phase IN ('validate', 'label')),
            part INTEGER NOT NULL DEFAULT 1,
            status TEXT NOT NULL,
            provider_id TEXT,
            input_file_id TEXT,
            output_file_id TEXT,
            error_file_id TEXT,
            path TEXT,
            command TEXT,
            n_requests INTEGER NOT NULL DEFAULT 0,
            n_bytes INTEGER NOT NULL DEFAULT 0,
            n_done INTEGER NOT NULL DEFAULT 0,
            n_errors INTEGER NOT NULL DEFAULT 0,
            tokens_in INTEGER NOT NULL DEFAULT 0,
            tokens_out INTEGER NOT NULL DEFAULT 0,
            cost REAL,
            message TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            collected_at TEXT
        );
        CREATE INDEX llm_batches_run ON llm_batches(run_id);
        CREATE TABLE llm_batch_items (
            batch_id INTEGER NOT NULL REFERENCES llm_batches(id) ON DELETE CASCADE,
            action_id TEXT NOT NULL,
            request_hashes TEXT NOT NULL,
            PRIMARY KEY (batch_id, action_id)
        ) WITHOUT ROWID;
        CREATE TABLE llm_batch_requests (
            custom_id TEXT NOT NULL,
            batch_id INTEGER NOT NULL REFERENCES llm_batches(id) ON DELETE CASCADE,
            action_id TEXT NOT NULL,
            vote INTEGER NOT NULL,
            tail TEXT NOT NULL,
            schema TEXT NOT NULL,
            response_format TEXT NOT NULL,
            error TEXT
        );
        CREATE UNIQUE INDEX llm_batch_requests_line ON llm_batch_requests(custom_id, batch_id);
        CREATE INDEX llm_batch_requests_batch ON llm_batch_requests(batch_id);
        """,
    )


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
    from annotate.store.revisions import refresh_revisions

    conn.execute("ALTER TABLE labels ADD COLUMN revision INTEGER NOT NULL DEFAULT 0")
    refresh_revisions(conn, table="labels")
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
        "CREATE INDEX labels_flagged ON labels(codebook, action_id, question, coder) "
        "WHERE flagged"
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


MIGRATIONS: list[tuple[int, Migration]] = [
    (1, m001_initial),
    (2, m002_llm),
    (3, m003_agreement_runs),
    (4, m004_session_splits),
    (5, m005_agreement_run_digests),
    (6, m006_llm_endpoint_formats),
    (7, m007_explicit_other),
    (8, m008_llm_batches),
    (9, m009_label_indexes),
    (10, m010_scale_indexes),
    (11, m011_scale_indexes),
    (12, m012_actions_by_participant),
    (13, m013_agreement_run_label_sets),
    (14, m014_label_revisions),
    (15, m015_llm_items_by_run_and_phase),
    (16, m016_actions_naming_screenshots),
    (17, m017_deferred_indexes),
    (18, m018_llm_items_in_export_order),
    (19, m019_actions_condition_with_role),
    (20, m020_gold_table),
    (21, m021_embeddings),
    (22, m022_split_strategy),
]
