"""Analysis tables: actions, and labels joined with the actions they label (pandas)."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from annotate.errors import UsageError
from annotate.store import Store

if TYPE_CHECKING:  # pandas loads with the first table: the CLI imports this module to start
    import pandas as pd

ACTION_FIELDS = [
    "id",
    "session",
    "seq",
    "participant",
    "role",
    "condition",
    "timestamp",
    "elapsed_s",
    "action_type",
    "content",
]


class ExportWhat(StrEnum):
    actions = "actions"
    labels = "labels"
    gold = "gold"
    llm = "llm"


class ExportFormat(StrEnum):
    csv = "csv"
    jsonl = "jsonl"
    parquet = "parquet"


def actions_frame(store: Store, sample: str | None = None) -> pd.DataFrame:
    import pandas as pd

    frame = pd.DataFrame(store.action_rows(), columns=[*ACTION_FIELDS, "meta"])
    if sample:
        ids = store.sample_ids(sample)
        frame = frame.set_index("id").loc[ids].reset_index()
    return frame[ACTION_FIELDS]


def labels_frame(
    store: Store,
    *,
    codebook: str | None = None,
    coders: list[str] | None = None,
    sample: str | None = None,
) -> pd.DataFrame:
    """One row per answered (action, codebook, question, coder), with the action's fields."""
    import pandas as pd

    books = [codebook] if codebook else store.labelled_codebooks()
    ids = store.sample_ids(sample) if sample else None
    parts = [
        store.labels_frame(b, coders=coders, action_ids=ids, answered_only=True) for b in books
    ]
    labels = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if labels.empty:
        return pd.DataFrame(columns=["action_id", "codebook", "question", "coder", "value"])
    labels["codes"] = labels["codes"].map(lambda c: ";".join(c) if c else None)
    labels["meta"] = labels["meta"].map(lambda m: json.dumps(m, sort_keys=True) if m else None)
    actions = actions_frame(store).rename(columns={"id": "action_id"})
    return labels.merge(actions, on="action_id", how="left")


def llm_frame(
    store: Store,
    *,
    codebook: str | None = None,
    coders: list[str] | None = None,
    sample: str | None = None,
) -> pd.DataFrame:
    """One row per item an LLM run coded: its answer, raw replies, tokens, latency, and the
    run's provenance (model, endpoint, prompt and codebook hashes, shot ids, temperature)."""
    import pandas as pd

    frame = pd.DataFrame(store.llm_item_rows(codebook))
    if frame.empty:
        return pd.DataFrame(columns=["run_id", "coder", "model", "action_id", "valid", "answer"])
    if coders:
        frame = frame[frame["coder"].isin(coders)]
    if sample:
        frame = frame[frame["action_id"].isin(store.sample_ids(sample))]
    actions = actions_frame(store).rename(columns={"id": "action_id"})
    return frame.merge(actions, on="action_id", how="left").reset_index(drop=True)


def _build(store: Store, what: ExportWhat, **filters: object) -> pd.DataFrame:
    if what is ExportWhat.actions:
        return actions_frame(store, sample=filters.get("sample"))  # type: ignore[arg-type]
    if what is ExportWhat.llm:
        return llm_frame(
            store,
            codebook=filters.get("codebook"),  # type: ignore[arg-type]
            coders=filters.get("coders") or None,  # type: ignore[arg-type]
            sample=filters.get("sample"),  # type: ignore[arg-type]
        )
    coders = filters.get("coders") or None
    if what is ExportWhat.gold:
        coders = ["gold"]
    return labels_frame(
        store,
        codebook=filters.get("codebook"),  # type: ignore[arg-type]
        coders=coders,  # type: ignore[arg-type]
        sample=filters.get("sample"),  # type: ignore[arg-type]
    )


def build(store: Store, what: ExportWhat, **filters: object) -> pd.DataFrame:
    """The table to export; ``split=NAME`` adds a ``split`` column (train/test, by session)."""
    frame = _build(store, what, **filters)
    if filters.get("split"):
        parts = store.session_split_parts(str(filters["split"]))
        at = frame.columns.get_loc("session") + 1 if "session" in frame else len(frame.columns)
        frame.insert(at, "split", frame["session"].map(parts) if "session" in frame else None)
    return frame


def write(frame: pd.DataFrame, fmt: ExportFormat, out: Path | None) -> str | None:
    """Write to ``out``; without it, return the text (parquet needs a file)."""
    if fmt is ExportFormat.parquet:
        if out is None:
            raise UsageError("--format parquet needs --out FILE")
        frame.to_parquet(out, index=False)
        return None
    text = (
        frame.to_csv(index=False)
        if fmt is ExportFormat.csv
        else frame.to_json(orient="records", lines=True, force_ascii=False)
    )
    if out is None:
        return text
    out.write_text(text, encoding="utf-8")
    return None
