"""Analysis tables: actions, and labels joined with the actions they label (pandas)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from annotate.errors import NotFoundError, UsageError
from annotate.render.output import write_data
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


def _check_filters(store: Store, codebook: object, coders: object) -> None:
    """An unknown codebook or coder would give an empty table that looks like a result."""
    books = store.labelled_codebooks()
    if codebook and codebook not in books:
        raise NotFoundError(
            f"--codebook: no labels of codebook '{codebook}' in this file",
            hint="codebooks with labels: " + (", ".join(books) or "none yet"),
        )
    if coders:
        known = store.coders(str(codebook) if codebook else None)
        unknown = [c for c in coders if c not in known]  # type: ignore[attr-defined]
        if unknown:
            raise NotFoundError(
                f"--coders: no labels by {', '.join(map(repr, unknown))}"
                + (f" in codebook '{codebook}'" if codebook else ""),
                hint="coders: " + (", ".join(known) or "none yet"),
            )


def build(store: Store, what: ExportWhat, **filters: object) -> pd.DataFrame:
    """The table to export; ``split=NAME`` adds a ``split`` column (train/test, by session)."""
    if what is not ExportWhat.actions:
        _check_filters(store, filters.get("codebook"), filters.get("coders"))
    frame = _build(store, what, **filters)
    if filters.get("split"):
        parts = store.session_split_parts(str(filters["split"]))
        at = frame.columns.get_loc("session") + 1 if "session" in frame else len(frame.columns)
        frame.insert(at, "split", frame["session"].map(parts) if "session" in frame else None)
    return frame


ROWS_PER_CHUNK = 20_000
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: object) -> object:
    """A text cell a spreadsheet would run as a formula (``=``, ``+``, ``-``, ``@``, tab,
    carriage return first), prefixed with ``'`` so that it is shown as text (OWASP)."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def _safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Text columns only: a number such as -1 is a value, not a formula."""
    text = [c for c in frame.columns if frame[c].dtype.kind == "O"]
    if not text:
        return frame
    frame = frame.copy()
    for c in text:
        frame[c] = frame[c].map(safe_cell)
    return frame


def chunks(frame: pd.DataFrame, fmt: ExportFormat, *, safe_csv: bool = True) -> Iterator[str]:
    """The CSV or JSON-lines text of ``frame``, in pieces of rows (the same bytes as one
    piece, without holding them all)."""
    if fmt is ExportFormat.csv and len(frame) == 0:
        yield frame.to_csv(index=False)
        return
    for start in range(0, len(frame), ROWS_PER_CHUNK):
        part = frame.iloc[start : start + ROWS_PER_CHUNK]
        if fmt is ExportFormat.csv:
            yield (_safe_frame(part) if safe_csv else part).to_csv(index=False, header=start == 0)
        else:
            yield part.to_json(orient="records", lines=True, force_ascii=False)


def write(
    frame: pd.DataFrame, fmt: ExportFormat, out: Path | None, *, safe_csv: bool = True
) -> None:
    """Write to ``out``, or to standard output through the one writer (a failed write is an
    error, exit 1; in a file or pipe every byte of the content is kept, escape sequences
    included; on a terminal they are shown escaped).

    The file is written beside ``out`` and renamed into place, so a failed export never
    leaves a half-written file where an earlier one was."""
    if fmt is ExportFormat.parquet and out is None:
        raise UsageError("--format parquet needs --out FILE")
    if out is None:
        for piece in chunks(frame, fmt, safe_csv=safe_csv):
            write_data(piece)
        return
    partial = out.with_name(f".{out.name}.partial")
    try:
        if fmt is ExportFormat.parquet:
            frame.to_parquet(partial, index=False)
        else:
            with partial.open("w", encoding="utf-8", newline="") as f:
                for piece in chunks(frame, fmt, safe_csv=safe_csv):
                    f.write(piece)
        partial.replace(out)
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot write ({exc.strerror or exc})") from None
    finally:
        partial.unlink(missing_ok=True)  # gone after the rename; a failed write's leftovers


def check_out(out: Path | None) -> None:
    """Fail before any work when ``--out`` cannot be written."""
    if out is not None and not out.parent.is_dir():
        raise UsageError(f"--out {out}: folder {out.parent} does not exist")
    if out is not None and out.is_dir():
        raise UsageError(f"--out {out}: is a folder; give a file name")
