"""Writing batch input files: the requests the online path would send, minus those answered.

Items are taken in chunks: their requests are built exactly as :class:`~llm_coder.runner.Runner`
builds them (same messages, schema, vote and hash), looked up in the request cache in bulk,
and the unanswered ones are written as lines and recorded in the store (``llm_batches``,
``llm_batch_items``, ``llm_batch_requests``). A file that would exceed the provider's
limits (requests, bytes) is closed and the next part opened; an item's votes stay in one
file. Nothing is held for the whole run but the item ids.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from llm_coder.batch import BatchLimits, LineWriter
from llm_coder.calls import ChatRequest, MemoryCache
from llm_coder.items import chunked
from llm_coder.schema import FormatMode

if TYPE_CHECKING:
    from llm_coder.job import LabelJob

CHUNK = 1000


@dataclass(frozen=True)
class Pending:
    """An item with requests still to answer: ``requests`` to send, ``hashes`` of every vote."""

    action_id: str
    requests: tuple[ChatRequest, ...]
    hashes: tuple[str, ...]


def item_requests(
    job: LabelJob, ids: Iterable[str], *, chunk: int = CHUNK
) -> Iterator[tuple[str, tuple[ChatRequest, ...], set[str]]]:
    """(action id, every vote's request, the hashes among them already answered)."""
    runner = job._runner(client=None, cache=MemoryCache())
    votes = job.options.votes
    for part in chunked(ids, chunk):
        built = []
        for item in job.sessions.items(part):
            messages = job.builder.messages(item)
            built.append(
                (item.action.id, tuple(runner._request(item, messages, v) for v in range(votes)))
            )
        cached = job.store.cached_hashes([r.hash for _, reqs in built for r in reqs])
        for aid, reqs in built:
            yield aid, reqs, cached


def pending_items(job: LabelJob, ids: Iterable[str]) -> Iterator[Pending]:
    for aid, reqs, cached in item_requests(job, ids):
        todo = tuple(r for r in reqs if r.hash not in cached)
        if todo:
            yield Pending(aid, todo, tuple(r.hash for r in reqs))


@dataclass
class WrittenBatch:
    batch_id: int
    path: Path
    requests: int = 0
    bytes: int = 0
    items: int = 0


class BatchFiles:
    """Writes one phase's pending items into one or more input files, recording each."""

    def __init__(
        self,
        job: LabelJob,
        run_id: int,
        phase: str,
        *,
        kind: str,
        mode: FormatMode,
        path_for: Callable[[int], Path],
        limits: BatchLimits | None = None,
        command: Callable[[Path], str] | None = None,
        flush_every: int = 2000,
    ):
        self.job = job
        self.store = job.store
        self.run_id = run_id
        self.phase = phase
        self.kind = kind
        self.mode = mode
        self.path_for = path_for
        self.limits = limits or BatchLimits()
        self.command = command
        self.flush_every = flush_every
        self.writer = LineWriter()
        self.written: list[WrittenBatch] = []
        self._file: IO[bytes] | None = None
        self._items: list[tuple[str, Sequence[str]]] = []
        self._lines: list[tuple[str, str, int, str, str, str]] = []
        self._schemas: dict[int, tuple[dict, str]] = {}

    @property
    def current(self) -> WrittenBatch | None:
        return self.written[-1] if self._file is not None else None

    def _open(self) -> WrittenBatch:
        part = len(self.written) + 1
        path = self.path_for(part)
        batch_id = self.store.create_llm_batch(
            run_id=self.run_id,
            kind=self.kind,
            phase=self.phase,
            part=part,
            status="writing",
            path=str(path),
        )
        self._file = open(path, "wb")  # noqa: SIM115  (closed in _close)
        batch = WrittenBatch(batch_id, path)
        self.written.append(batch)
        return batch

    def _flush(self) -> None:
        batch = self.written[-1]
        if self._items or self._lines:
            self.store.add_llm_batch_lines(batch.batch_id, self._items, self._lines)
        self._items, self._lines = [], []

    def _close(self) -> None:
        if self._file is None:
            return
        self._flush()
        self._file.close()
        self._file = None
        batch = self.written[-1]
        status = "exported" if self.kind == "file" else "written"
        self.store.update_llm_batch(
            batch.batch_id,
            status=status,
            n_requests=batch.requests,
            n_bytes=batch.bytes,
            command=self.command(batch.path) if self.command else None,
        )

    def _schema_json(self, request: ChatRequest) -> str:
        hit = self._schemas.get(id(request.schema))
        if hit is None or hit[0] is not request.schema:
            # as the store writes JSON (keys sorted, text as it is): one string per schema
            hit = (request.schema, json.dumps(request.schema, sort_keys=True, ensure_ascii=False))
            self._schemas[id(request.schema)] = hit
        return hit[1]

    def add(self, pending: Pending) -> None:
        built = [self.writer.line_and_tail(r, self.mode) for r in pending.requests]
        lines = [line.encode() for line, _ in built]
        size = sum(len(line) for line in lines)
        batch = self.current
        if (
            batch is not None
            and batch.requests
            and not self.limits.fits(batch.requests + len(lines), batch.bytes + size)
        ):
            self._close()
            batch = None
        if batch is None:
            batch = self._open()
        assert self._file is not None
        self._file.write(b"".join(lines))
        batch.requests += len(lines)
        batch.bytes += size
        batch.items += 1
        self._items.append((pending.action_id, pending.hashes))
        for r, (_, tail) in zip(pending.requests, built, strict=True):
            self._lines.append(
                (r.hash, pending.action_id, r.vote, tail, self._schema_json(r), self.mode)
            )
        if len(self._items) >= self.flush_every:
            self._flush()

    def write(self, ids: Sequence[str]) -> list[WrittenBatch]:
        self.store.save_llm_prompt(
            self.job.builder.prompt_hash, self.job.builder.prefix
        )
        try:
            for pending in pending_items(self.job, ids):
                self.add(pending)
        finally:
            self._close()
        return self.written
