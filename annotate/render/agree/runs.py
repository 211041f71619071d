"""`annotate agree --runs`: the stored agreement runs."""

from __future__ import annotations

from typing import Any

from annotate.render.agree.layout import md_table, rich_table
from annotate.render.console import console
from annotate.render.rows import OutputFormat, csv_text, to_json


def print_runs(rows: list[dict[str, Any]], fmt: OutputFormat) -> None:
    if fmt is OutputFormat.json:
        console.print(to_json(rows), markup=False, highlight=False, soft_wrap=True)
        return
    shown = [
        r
        | {
            "created_at": r["created_at"][5:16].replace("T", " "),
            "sample": r["sample"] or "-",
            "coders": ", ".join(r["coders"]),
            "questions": ", ".join(r["questions"]),
            "labels_hash": r["labels_hash"][:8],
        }
        for r in rows
    ]
    columns = [("id", "Run", "right"), ("created_at", "When", "left"),
               ("codebook", "Codebook", "left"), ("sample", "Sample", "left"),
               ("coders", "Coders", "left"), ("questions", "Questions", "left"),
               ("n_labels", "Labels", "right"), ("labels_hash", "sha256", "left")]  # fmt: skip
    if fmt is OutputFormat.table:
        texts = [
            {key: "-" if r[key] is None else str(r[key]) for key, _, _ in columns} for r in shown
        ]
        wrap = frozenset({"created_at", "codebook", "sample", "coders", "questions"})
        console.print(rich_table("Agreement runs (UTC)", columns, texts, wrap))
    elif fmt is OutputFormat.markdown:
        console.print(
            md_table(shown, [(k, h) for k, h, _ in columns]), markup=False, soft_wrap=True
        )
    else:
        keys = [k for k, _, _ in columns]
        console.print(csv_text(rows, keys), end="", markup=False, soft_wrap=True)
