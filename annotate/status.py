"""What a project file holds, and the next step that makes sense."""

from __future__ import annotations

from typing import Any

from annotate.codebook import find_codebook
from annotate.coders import GOLD, is_human, is_llm
from annotate.errors import AnnotateError
from annotate.store import Store


def project_status(store: Store) -> dict[str, Any]:
    books = store.codebooks.codebook_versions()
    samples = store.samples.samples()
    progress = []
    for sample in samples:
        for name in sorted({b["name"] for b in books}):
            try:
                cb = store.codebooks.stored_codebook(name)
            except AnnotateError:
                continue
            for p in store.labels.coder_progress(sample["name"], cb):
                progress.append({"sample": sample["name"], "codebook": name, **p})
    coders_by_book = {b: store.labels.coders(b) for b in store.labels.labelled_codebooks()}
    status = {
        "db": str(store.path),
        "schema_version": store.db.schema_version(),
        "actions": store.actions.count_actions(),
        "by_condition": store.actions.overview_by_condition(),
        "codebooks": books,
        "samples": samples,
        "progress": progress,
        "gold": {b: GOLD in c for b, c in coders_by_book.items()},
        "llm_coders": {b: [c for c in cs if is_llm(c)] for b, cs in coders_by_book.items()},
        "llm_splits": store.llm.splits(),
        "llm_runs": store.llm.llm_runs(),
        "llm_batches": open_batches(store),
        "agreement_runs": [
            {k: r[k] for k in ("id", "created_at", "codebook", "sample")}
            for r in store.agreement.agreement_runs()
        ],
    }
    status["next"] = next_step(status, coders_by_book)
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
        for b in store.llm_batches.llm_batches(open_only=True)
    ]


def next_step(status: dict[str, Any], coders_by_book: dict[str, list[str]]) -> str:
    """One command to paste, for the first step of the workflow not yet done."""
    if not status["actions"]:
        return "annotate import data/demo"
    if not status["samples"]:
        return f"annotate sample --n {min(180, status['actions'])} --seed 7 --name main"
    names = [s["name"] for s in status["samples"]]
    sample = "main" if "main" in names else names[0]
    with_llm = [b for b, cs in status["llm_coders"].items() if cs]
    if status["llm_batches"]:
        return status["llm_batches"][0]["command"]
    if with_llm:
        return f"annotate report --codebook {with_llm[0]}"
    if status["llm_splits"]:
        book = status["llm_splits"][-1]["codebook"]
        return f"annotate llm-label --codebook {book} --model MODEL --shots 8"
    humans = {b: [c for c in cs if is_human(c)] for b, cs in coders_by_book.items()}
    if not any(humans.values()):
        return f"annotate code --codebook traum --sample {sample} --coder YOUR_NAME"
    book = max(humans, key=lambda b: len(humans[b]))
    if len(humans[book]) < 2:
        return (
            f"annotate code --codebook {book} --sample {sample} --coder ANOTHER_CODER --new-coder"
        )
    coded = {
        p["coder"]: p["coded"]
        for p in status["progress"]
        if p["sample"] == sample and p["codebook"] == book
    }
    agreed = any(r["codebook"] == book and r["sample"] == sample for r in status["agreement_runs"])
    if not agreed:
        return f"annotate agree --codebook {book} --sample {sample}"
    if coded.get(GOLD, 0) < max((coded.get(c, 0) for c in humans[book]), default=0):
        return f"annotate adjudicate --codebook {book} --sample {sample}"
    return f"annotate split --codebook {book} --sample {sample} --shots 8 --seed 7"


def codebook_is_current(name: str, stored_hash: str) -> bool | None:
    """Whether the codebook file on disk still has this hash (None if not found)."""
    try:
        return find_codebook(name).codebook.version_hash == stored_hash
    except AnnotateError:
        return None
