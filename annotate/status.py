"""What a project file holds, and the next step that makes sense."""

from __future__ import annotations

import shlex
from typing import Any

from annotate.codebook import find_codebook
from annotate.coders import GOLD, is_human, is_llm
from annotate.errors import AnnotateError
from annotate.store import Store


def project_status(store: Store, db_option: str = "") -> dict[str, Any]:
    """What ``store`` holds; ``db_option`` (``--db PATH`` or nothing) ends the next command,
    so that it runs as pasted on the file that was asked about."""
    books = store.codebook_versions()
    samples = store.samples()
    progress = []
    for sample in samples:
        for name in sorted({b["name"] for b in books}):
            try:
                cb = store.stored_codebook(name)
            except AnnotateError:
                continue
            for p in store.coder_progress(sample["name"], cb):
                progress.append({"sample": sample["name"], "codebook": name, **p})
    coders_by_book = {b: store.coders(b) for b in store.labelled_codebooks()}
    status = {
        "db": str(store.path),
        "schema_version": store.schema_version(),
        "actions": store.count_actions(),
        "by_condition": store.overview_by_condition(),
        "codebooks": books,
        "samples": samples,
        "progress": progress,
        "gold": {b: GOLD in c for b, c in coders_by_book.items()},
        "llm_coders": {b: [c for c in cs if is_llm(c)] for b, cs in coders_by_book.items()},
        "llm_splits": store.splits(),
        "llm_runs": store.llm_runs(),
        "llm_batches": open_batches(store),
        "agreement_runs": [
            {k: r[k] for k in ("id", "created_at", "codebook", "sample")}
            for r in store.agreement_runs()
        ],
    }
    if status["llm_batches"]:  # the command that collects them already names its file
        status["next"] = status["llm_batches"][0]["command"]
    else:
        status["next"] = " ".join(filter(None, (next_step(status, coders_by_book), db_option)))
    return status


def open_batches(store: Store) -> list[dict[str, Any]]:
    """Batches whose results are still to come, with the command that collects them."""
    return [
        {
            "id": b["id"],
            "run": b["run_id"],
            "phase": b["phase"],
            "status": b["status"],
            "batch": b["provider_id"] or b["path"],
            "requests": b["n_requests"],
            "command": b["command"]
            if b["kind"] == "api"
            else f"annotate llm-import RESULTS (of {b['path']}), then {b['command']}",
        }
        for b in store.llm_batches(open_only=True)
    ]


def next_step(status: dict[str, Any], coders_by_book: dict[str, list[str]]) -> str:
    """One command to paste, for the first step of the workflow not yet done."""
    if not status["actions"]:
        return "annotate import data/demo"
    if not status["samples"]:
        return f"annotate sample --n {min(180, status['actions'])} --seed 7 --name main"
    names = [s["name"] for s in status["samples"]]
    sample = "main" if "main" in names else names[0]
    in_sample = f"--sample {shlex.quote(sample)}"
    with_llm = [b for b, cs in status["llm_coders"].items() if cs]
    if with_llm:
        return f"annotate report --codebook {shlex.quote(with_llm[0])}"
    if status["llm_splits"]:
        book = shlex.quote(status["llm_splits"][-1]["codebook"])
        return f"annotate llm-label --codebook {book} --model MODEL --shots 8"
    humans = {b: [c for c in cs if is_human(c)] for b, cs in coders_by_book.items()}
    if not any(humans.values()):
        return f"annotate code --codebook traum {in_sample} --coder YOUR_NAME"
    book = max(humans, key=lambda b: len(humans[b]))
    quoted = shlex.quote(book)
    if len(humans[book]) < 2:
        return (
            f"annotate code --codebook {quoted} {in_sample} --coder ANOTHER_CODER --new-coder"
        )
    coded = {
        p["coder"]: p["coded"]
        for p in status["progress"]
        if p["sample"] == sample and p["codebook"] == book
    }
    agreed = any(r["codebook"] == book and r["sample"] == sample for r in status["agreement_runs"])
    if not agreed:
        return f"annotate agree --codebook {quoted} {in_sample}"
    if coded.get(GOLD, 0) < max((coded.get(c, 0) for c in humans[book]), default=0):
        return f"annotate adjudicate --codebook {quoted} {in_sample}"
    return f"annotate split --codebook {quoted} {in_sample} --shots 8 --seed 7"


def codebook_is_current(name: str, stored_hash: str) -> bool | None:
    """Whether the codebook file on disk still has this hash (None if not found)."""
    try:
        return find_codebook(name).codebook.version_hash == stored_hash
    except AnnotateError:
        return None
