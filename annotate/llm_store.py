"""The project file as the LLM coder sees it: :class:`llm_coder.ports.LLMStore` over the
store's repositories.

The LLM coder owns that interface and never imports the store; each of its calls is one
call of a repository here (nothing is computed in between)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from annotate.store.base import now

if TYPE_CHECKING:
    from annotate.store import Store
    from llm_coder.ports import LLMStore


class StoreForLLM:
    """Every call of :class:`~llm_coder.ports.LLMStore`, bound to the repository that owns it."""

    def __init__(self, store: Store):
        self.store = store
        self.path: Path = store.path
        self.transaction = store.db.transaction
        self.timestamp = now
        actions = store.actions
        self.action = actions.action
        self.actions_by_ids = actions.actions_by_ids
        self.context = actions.context
        self.session_actions = actions.session_actions
        self.stored_action_types = actions.stored_action_types
        self.action_groups = store.analysis.action_groups
        self.register_codebook = store.codebooks.register_codebook
        self.stored_codebook = store.codebooks.stored_codebook
        self.gold_codebooks = store.gold.gold_codebooks
        self.coders = store.labels.coders
        self.samples = store.samples.samples
        self.sample_ids = store.samples.sample_ids
        self.create_sample = store.samples.create_sample
        llm = store.llm
        self.coder_answers = llm.coder_answers
        self.create_split = llm.create_split
        self.split_info = llm.split_info
        self.heldout_targets = llm.heldout_targets
        self.count_targets = llm.count_targets
        self.target_page = llm.target_page
        self.target_ids_unordered = llm.target_ids_unordered
        self.start_llm_run = llm.start_llm_run
        self.resumable_llm_run = llm.resumable_llm_run
        self.finished_llm_run = llm.finished_llm_run
        self.resume_llm_run = llm.resume_llm_run
        self.mark_llm_runs_interrupted = llm.mark_llm_runs_interrupted
        self.update_llm_run = llm.update_llm_run
        self.llm_run = llm.llm_run
        self.save_llm_items = llm.save_llm_items
        self.llm_item_answers = llm.llm_item_answers
        self.llm_cache = llm.llm_cache
        self.prompt_has_replies = llm.prompt_has_replies
        self.endpoint_format = llm.endpoint_format
        self.save_endpoint_format = llm.save_endpoint_format
        batches = store.llm_batches
        self.action_types = batches.action_types
        self.llm_item_counts = batches.llm_item_counts
        self.llm_item_ids = batches.llm_item_ids
        self.cached_hashes = batches.cached_hashes
        self.cached_replies = batches.cached_replies
        self.open_batch_run = batches.open_batch_run
        self.create_llm_batch = batches.create_llm_batch
        self.update_llm_batch = batches.update_llm_batch
        self.delete_llm_batch = batches.delete_llm_batch
        self.llm_batch = batches.llm_batch
        self.llm_batches = batches.llm_batches
        self.add_llm_batch_lines = batches.add_llm_batch_lines
        self.add_llm_batch_counts = batches.add_llm_batch_counts
        self.llm_batch_lines = batches.llm_batch_lines
        self.llm_batch_line_ids = batches.llm_batch_line_ids
        self.llm_batch_line_errors = batches.llm_batch_line_errors
        self.set_llm_batch_line_errors = batches.set_llm_batch_line_errors
        self.llm_batch_items_of = batches.llm_batch_items_of
        self.save_llm_prompt = batches.save_llm_prompt
        self.llm_prompt_messages = batches.llm_prompt_messages
        self.save_batch_replies = batches.save_batch_replies


def llm_store(store: Store) -> LLMStore:
    """The store as the LLM coder's :class:`~llm_coder.ports.LLMStore`."""
    return StoreForLLM(store)
