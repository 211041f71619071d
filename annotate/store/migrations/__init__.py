"""Numbered, append-only schema migrations.

Each migration runs in one transaction together with its row in ``_migrations``. Never edit
a migration that has shipped: add a new one with the next number (migration 20 was edited
after it shipped; migration 23 brings the files it left behind to the same schema). A
migration imports no application code (only this package's modules and libraries), so that what it
does stays what it did when it shipped; ``tests/test_schema_exact.py`` checks that a blank
file and a file of every shipped version, upgraded, have the same schema.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from annotate.store.migrations.m001_m008 import (
    m001_initial,
    m002_llm,
    m003_agreement_runs,
    m004_session_splits,
    m005_agreement_run_digests,
    m006_llm_endpoint_formats,
    m007_explicit_other,
    m008_llm_batches,
)
from annotate.store.migrations.m009_m019 import (
    SCREENSHOT_WORD,
    m009_label_indexes,
    m010_scale_indexes,
    m011_scale_indexes,
    m012_actions_by_participant,
    m013_agreement_run_label_sets,
    m014_label_revisions,
    m015_llm_items_by_run_and_phase,
    m016_actions_naming_screenshots,
    m017_deferred_indexes,
    m018_llm_items_in_export_order,
    m019_actions_condition_with_role,
)
from annotate.store.migrations.m020_gold import GOLD_IDS, LABELS_VIEW, m020_gold_table
from annotate.store.migrations.m021_on import (
    m021_embeddings,
    m022_split_strategy,
    m023_labels_read_only,
)
from annotate.store.migrations.script import run_script

Migration = Callable[[sqlite3.Connection], None]

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
    (23, m023_labels_read_only),
]

__all__ = ["GOLD_IDS", "LABELS_VIEW", "MIGRATIONS", "SCREENSHOT_WORD", "Migration", "run_script"]
