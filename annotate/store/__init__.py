"""The store: the one place that owns SQL and the schema of the project's SQLite file.

:class:`Store` opens the file (:class:`Database`: the connection, transactions, upgrades)
and holds one repository per area, each owning the tables of that area; a repository that
needs another receives it when it is made.
"""

from __future__ import annotations

from pathlib import Path

from annotate.store.actions import Actions
from annotate.store.agreement_runs import AgreementRuns
from annotate.store.analysis import Analysis
from annotate.store.base import DEFAULT_DB, Database, default_db_path, silent
from annotate.store.codebooks import Codebooks
from annotate.store.embeddings import Embeddings
from annotate.store.exports import Exports
from annotate.store.gold import Gold
from annotate.store.gold_votes import GoldVotes
from annotate.store.label_cells import LabelCells
from annotate.store.labels import CORPUS_SOURCE, Labels, LabelWrite
from annotate.store.llm import LLM
from annotate.store.llm_batches import LLMBatches
from annotate.store.lock import Notify
from annotate.store.merge import Merge
from annotate.store.samples import Samples
from annotate.store.self_reports import SelfReports


class Store:
    """An open project file. ``Store(path)`` creates or upgrades it; ``on_wait`` is told
    when it waits for another writer or upgrades a large file (nothing by default)."""

    def __init__(self, path: str | Path, *, create: bool = True, on_wait: Notify = silent) -> None:
        db = Database(path, create=create, on_wait=on_wait)
        self.db = db
        self.path = db.path
        self.read_only = db.read_only
        self.actions = Actions(db)
        self.codebooks = Codebooks(db)
        self.samples = Samples(db)
        self.gold = Gold(db)
        self.labels = Labels(db, self.gold, self.samples)
        self.label_cells = LabelCells(db)
        self.gold_votes = GoldVotes(db, self.gold)
        self.agreement = AgreementRuns(db, self.gold, self.labels)
        self.llm = LLM(db, self.labels)
        self.llm_batches = LLMBatches(db)
        self.analysis = Analysis(db)
        self.merge = Merge(db, self.gold)
        self.exports = Exports(db, self.gold, self.samples)
        self.self_reports = SelfReports(db)
        self.embeddings = Embeddings(db)
        if not db.read_only:
            self.actions.repair()

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["CORPUS_SOURCE", "DEFAULT_DB", "Database", "LabelWrite", "Store", "default_db_path"]
