"""`llm-label --batch` and `--batch-export`: the batches through which the workflow's
validate -> gate -> label runs, one step per call (:func:`llm_coder.workflow.label_batch`
takes the steps; this module moves the batches).

Everything the cycle knows is in the project file, so each invocation picks up where the
last one stopped: the run (status ``batch``) of these settings, its batches and their
states. One invocation:

1. brings every open batch of the run forward: a file written but not uploaded is
   uploaded, an upload without a batch becomes one (after looking the batch up by its tag:
   a process killed between creating it and recording its id does not submit it twice), a
   submitted batch is polled, and a finished one (completed, expired, cancelled, failed) is
   collected: its output and error files are downloaded and imported;
2. while any batch of the run is open, stops there (the reporter shows its counts);
3. otherwise takes the next phase: the held-out items first (their own batch), then, once
   every one has a reply and the workflow's gate has passed, the rest. Items without a reply
   (never sent, a per-line error, an expired or cancelled batch) go into the next batch.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llm_coder.batch import BatchLimits
from llm_coder.batch_api import TERMINAL, BatchAPI, BatchState
from llm_coder.batch_export import BatchFiles, WrittenBatch, item_requests
from llm_coder.batch_import import Importer, ImportResult, item_from_replies, result_lines
from llm_coder.runner import ItemResult

if TYPE_CHECKING:
    from llm_coder.job import LabelJob

UNLIMITED = BatchLimits(max_requests=10**12, max_bytes=10**15)


@dataclass
class Collected:
    batch: dict[str, Any]
    imported: ImportResult
    missing: int
    """Requests of the batch with neither a reply nor an error line (expired, cancelled)."""


@dataclass
class Advance:
    """What bringing the open batches forward did."""

    collected: list[Collected] = field(default_factory=list)
    open: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class PhaseState:
    """One phase's items: done (every vote answered) or still to send."""

    phase: str
    items: int
    results: list[ItemResult]
    pending: int
    submitted: list[dict[str, Any]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.pending == 0


class BatchCycle:
    def __init__(
        self,
        job: LabelJob,
        *,
        kind: str,
        api: BatchAPI | None = None,
        export_path: Path | None = None,
        limits: BatchLimits | None = None,
        command: str = "",
        log: Callable[[str], None] = lambda line: None,
    ):
        if kind == "api" and api is None:
            raise ValueError("kind 'api' needs a BatchAPI")
        if kind == "file" and export_path is None:
            raise ValueError("kind 'file' needs an export path")
        self.job = job
        self.store = job.store
        self.kind = kind
        self.api = api
        self.export_path = export_path
        self.limits = limits or (BatchLimits() if kind == "api" else UNLIMITED)
        self.command = command
        self.log = log
        self.run_id = self._open_run()
        self.workdir = Path(str(self.store.path) + ".batches")

    # -- the run ------------------------------------------------------------------------

    def _open_run(self) -> int:
        job, o = self.job, self.job.options
        found = self.store.open_batch_run(
            coder=job.coder,
            codebook=job.codebook.name,
            prompt_hash=job.builder.prompt_hash,
            endpoint_host=job.endpoint_host,
            temperature=o.temperature,
            votes=o.votes,
            split=job.split.name,
            target=o.target,
            context=o.context,
        )
        if found is not None:
            job.run_id = found
            return found
        run_id = job.start()
        self.store.update_llm_run(run_id, status="batch", response_format=job.fallback.mode)
        return run_id

    @property
    def run(self) -> dict[str, Any]:
        return self.store.llm_run(self.run_id)

    # -- bringing open batches forward --------------------------------------------------

    def advance(self) -> Advance:
        out = Advance()
        for batch in self.store.llm_batches(self.run_id, open_only=True):
            status = batch["status"]
            if status == "writing":  # killed while writing: its items were never sent
                self.log(f"batch {batch['id']}: dropped, its file was never finished")
                with contextlib.suppress(OSError):
                    Path(batch["path"]).unlink()
                self.store.delete_llm_batch(batch["id"])
                continue
            if batch["kind"] == "file":
                batch = self.store.llm_batch(batch["id"])
                if batch["status"] in ("exported",):
                    out.open.append(batch)
                continue
            batch = self._submit(batch)
            batch = self._poll(batch, out)
            if batch["status"] not in TERMINAL:
                out.open.append(batch)
        return out

    def _tag(self, batch: dict[str, Any]) -> str:
        return f"{self.run['prompt_hash'][:12]}-{self.run_id}-{batch['id']}-{batch['created_at']}"

    def _submit(self, batch: dict[str, Any]) -> dict[str, Any]:
        assert self.api is not None
        bid = batch["id"]
        if batch["status"] == "written":
            file_id = self.api.upload(Path(batch["path"]))
            self.store.update_llm_batch(bid, status="uploaded", input_file_id=file_id)
            batch = self.store.llm_batch(bid)
        if batch["status"] in ("uploaded", "creating"):
            tag = self._tag(batch)
            found = self.api.find(tag) if batch["status"] == "creating" else None
            if found is None:
                self.store.update_llm_batch(bid, status="creating")
                found = self.api.create(batch["input_file_id"], tag)
            self.store.update_llm_batch(bid, provider_id=found.id, status=found.status)
            with contextlib.suppress(OSError):
                Path(batch["path"]).unlink()  # the provider holds it now
            batch = self.store.llm_batch(bid)
        return batch

    def _poll(self, batch: dict[str, Any], out: Advance) -> dict[str, Any]:
        assert self.api is not None
        state = self.api.retrieve(batch["provider_id"])
        if state.status not in TERMINAL:
            if state.status != batch["status"]:
                self.store.update_llm_batch(batch["id"], status=state.status)
            batch = {**self.store.llm_batch(batch["id"]), "counts": state}
            return batch
        out.collected.append(self._collect(batch, state))
        return self.store.llm_batch(batch["id"])

    def _collect(self, batch: dict[str, Any], state: BatchState) -> Collected:
        """Import the output and error files, then record the final state (in that order:
        a process killed in between collects again, and the import adds nothing twice)."""
        assert self.api is not None
        self.workdir.mkdir(exist_ok=True)
        importer = Importer(self.store)
        for file_id in (state.output_file_id, state.error_file_id):
            if not file_id:
                continue
            path = self.workdir / f"{batch['id']}-{file_id}.jsonl"
            self.api.download(file_id, path)
            importer.add(result_lines(path))
            path.unlink()
        result = importer.result
        answered = self.store.cached_hashes(
            list(self.store.llm_batch_line_ids(batch["id"]))
        )
        errors, _ = self.store.llm_batch_line_errors(batch["id"])
        missing = max(0, batch["n_requests"] - len(answered) - errors)
        message = "; ".join(state.errors) or None
        self.store.update_llm_batch(
            batch["id"], status=state.status, collected_at=self.store.timestamp(), message=message,
            output_file_id=state.output_file_id, error_file_id=state.error_file_id,
        )  # fmt: skip
        return Collected(self.store.llm_batch(batch["id"]), result, missing)

    def cancel(self) -> list[dict[str, Any]]:
        cancelled = []
        for batch in self.store.llm_batches(self.run_id, open_only=True):
            if batch["provider_id"] and self.api is not None:
                state = self.api.cancel(batch["provider_id"])
                self.store.update_llm_batch(batch["id"], status=state.status)
            else:  # never reached the provider, or an exported file
                with contextlib.suppress(OSError):
                    if batch["kind"] == "api":
                        Path(batch["path"]).unlink()
                self.store.update_llm_batch(
                    batch["id"], status="cancelled", collected_at=self.store.timestamp()
                )
            cancelled.append(self.store.llm_batch(batch["id"]))
        return cancelled

    # -- phases -------------------------------------------------------------------------

    def phase_state(self, phase: str, ids: Sequence[str], *, keep: bool) -> PhaseState:
        """Store the items of ``ids`` every vote of which has a reply (cached from any run,
        or imported) as this run's results; count the rest."""
        store = self.store
        saved = store.llm_item_ids(self.run_id, phase)
        results: list[ItemResult] = []
        pending = 0
        chunk: list[tuple[str, tuple[str, ...]]] = []
        provenance = {**self.job.provenance(), "phase": phase}

        def flush() -> None:
            if not chunk:
                return
            replies = store.cached_replies([h for _, hashes in chunk for h in hashes])
            types = store.action_types([aid for aid, _ in chunk])
            done = []
            for aid, hashes in chunk:
                item = item_from_replies(
                    aid, self.job.codebook, types[aid], hashes, replies, cached=True
                )
                assert item is not None
                done.append(item)
            fresh = [r for r in done if r.action_id not in saved]
            if fresh:
                store.save_llm_items(
                    self.run_id, phase, self.job.codebook, self.job.coder, fresh,
                    provenance=provenance,
                )  # fmt: skip
            if keep:
                results.extend(done)
            chunk.clear()

        for aid, reqs, cached in item_requests(self.job, ids):
            hashes = tuple(r.hash for r in reqs)
            if all(h in cached for h in hashes):
                chunk.append((aid, hashes))
                if len(chunk) >= 1000:
                    flush()
            else:
                pending += 1
        flush()
        return PhaseState(phase, len(ids), results, pending)

    def submit(self, phase: str, ids: Sequence[str]) -> list[dict[str, Any]]:
        """Write the phase's unanswered requests into batch files and hand them over."""
        mode = self.job.fallback.mode
        if self.kind == "file":
            assert self.export_path is not None
            base = self.export_path

            def path_for(part: int) -> Path:
                return base if part == 1 else base.with_name(f"{base.stem}.part{part}{base.suffix}")
        else:
            self.workdir.mkdir(exist_ok=True)
            token = secrets.token_hex(4)

            def path_for(part: int) -> Path:
                return self.workdir / f"run{self.run_id}-{phase}-{token}-part{part}.jsonl"

        def command(path: Path) -> str:
            return self.command

        files = BatchFiles(
            self.job, self.run_id, phase, kind=self.kind, mode=mode, path_for=path_for,
            limits=self.limits, command=command,
        )  # fmt: skip
        written: list[WrittenBatch] = files.write(ids)
        out = []
        for w in written:
            batch = self.store.llm_batch(w.batch_id)
            if self.kind == "api":
                batch = self._submit(batch)
            out.append(batch)
        return out
