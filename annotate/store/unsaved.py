"""Paid LLM replies the project file could not take (a full disk, read-only storage).

Such a reply is appended to a side file, beside the project file or, when that fails
too, in the temporary folder, and the run stops with the cause. The next time the
request cache is opened (the next `llm-label`) the kept replies are stored and the side
file removed, so a reply is never paid for twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from annotate.errors import StoreError

if TYPE_CHECKING:
    from annotate.store.llm import LLM
    from llm_coder.records import CallRecord

SUFFIX = ".unsaved-replies.jsonl"


def places(db: Path) -> list[Path]:
    """Where the replies of ``db`` are kept, in the order they are tried."""
    key = hashlib.sha256(str(db.resolve()).encode()).hexdigest()[:16]
    return [
        db.with_name(db.name + SUFFIX),
        Path(tempfile.gettempdir()) / f"annotate-{key}{SUFFIX}",
    ]


def _line(record: CallRecord, run_id: int | None) -> str:
    req = record.request
    request = {
        "model": req.model,
        "endpoint_host": req.endpoint_host,
        "messages": list(req.messages),
        "prefix_len": req.prefix_len,
        "temperature": req.temperature,
        "schema": req.schema,
        "vote": req.vote,
        "send_seed": req.send_seed,
        "prefix_hash": req.prefix_hash,
    }
    reply = asdict(record.reply)
    return json.dumps({"hash": req.hash, "run_id": run_id, "request": request, "reply": reply})


def keep(db: Path, record: CallRecord, run_id: int | None, cause: StoreError) -> StoreError:
    """Append ``record`` to the first side file that takes it; the error to stop with."""
    line = _line(record, run_id) + "\n"
    problems = []
    for place in places(db):
        try:
            with place.open("a", encoding="utf-8") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            problems.append(f"{place}: {exc.strerror or exc}")
            continue
        return StoreError(
            f"{cause.message}; the reply just paid for is kept in {place}",
            hint="the next llm-label stores it (nothing is requested again); " + (cause.hint or ""),
        )
    return StoreError(
        f"{cause.message}; the reply just paid for could not be kept ({'; '.join(problems)})",
        hint=cause.hint,
    )


def restore(llm: LLM) -> int:
    """Store the replies kept for the file of ``llm``; remove the side files. How many."""
    # the LLM coder's records: loaded when the LLM is used, not by every command
    from llm_coder.records import CallRecord, ChatRequest, Reply

    n = 0
    for place in places(llm.db.path):
        if not place.exists():
            continue
        for raw in place.read_text(encoding="utf-8").splitlines():
            try:
                data = json.loads(raw)
            except ValueError:
                continue  # a line cut by the failure that stopped the run
            req = data["request"]
            request = ChatRequest(**{**req, "messages": tuple(req["messages"])})
            if request.hash != data["hash"]:
                continue  # not what was sent: never store a reply under another request
            llm.save_call(CallRecord(request, Reply(**data["reply"])), data["run_id"])
            n += 1
        place.unlink()
    return n
