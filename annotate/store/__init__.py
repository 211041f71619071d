"""The store: the one place that owns SQL and the schema of the project's SQLite file.

Each mixin owns the tables of one area; :class:`Store` is all of them over one connection.
"""

from __future__ import annotations

from annotate.store.actions import ActionsMixin
from annotate.store.agreement_runs import AgreementRunsMixin
from annotate.store.analysis import AnalysisMixin
from annotate.store.base import DEFAULT_DB, StoreBase, default_db_path
from annotate.store.codebooks import CodebooksMixin
from annotate.store.embeddings import EmbeddingsMixin
from annotate.store.exports import ExportMixin
from annotate.store.gold import GoldMixin
from annotate.store.gold_votes import GoldVotesMixin
from annotate.store.label_cells import LabelCellsMixin
from annotate.store.labels import CORPUS_SOURCE, LabelsMixin, LabelWrite
from annotate.store.llm import LLMStoreMixin
from annotate.store.llm_batches import LLMBatchesMixin
from annotate.store.samples import SamplesMixin
from annotate.store.self_reports import SelfReportsMixin


class Store(
    ActionsMixin,
    CodebooksMixin,
    SamplesMixin,
    LabelsMixin,
    LabelCellsMixin,
    GoldVotesMixin,
    GoldMixin,
    LLMStoreMixin,
    LLMBatchesMixin,
    AnalysisMixin,
    AgreementRunsMixin,
    ExportMixin,
    SelfReportsMixin,
    EmbeddingsMixin,
    StoreBase,
):
    """An open project file. ``Store(path)`` creates or upgrades it."""


__all__ = ["CORPUS_SOURCE", "DEFAULT_DB", "LabelWrite", "Store", "default_db_path"]
