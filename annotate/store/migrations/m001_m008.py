"""Migrations 1-8: the tables of the first releases (shipped; never edit, add one)."""

from __future__ import annotations

import sqlite3

from annotate.store.migrations.script import run_script


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
