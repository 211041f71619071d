"""Reading labels at corpus scale: the hot queries of `agree` and `adjudicate` use an index
(no full SCAN of labels), and the label content SQLite makes is the one Python makes."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable

import pytest

from annotate.codebook import Answer, find_codebook
from annotate.models import Action
from annotate.reliability.agreement_data import agree, label_digest, labels_hash
from annotate.store import LabelWrite, Store
from annotate.store.label_cells import LabelScope, label_content, sql_content_matches

TRICKY = ['say "hi"', "back\\slash", "two\nlines", "tab\tand \x01", "café 中文 \u2028", "/"]


@pytest.fixture
def coded(store: Store) -> Store:
    actions = [
        Action(id=f"s1:{i:03d}", session="s1", seq=i, action_type="message", content=f"m {i}")
        for i in range(60)
    ]
    store.add_actions(actions, path="t", sha256="-", fmt="jsonl")
    store.create_sample("half", [a.id for a in actions[::2]], seed=1)
    loaded = find_codebook("traum")
    store.register_codebook(loaded)
    cb = loaded.codebook
    codes = ["Initiate", "Continue", "Acknowledge", "other"]
    writes = []
    for i, a in enumerate(actions):
        for j, coder in enumerate(["ana", "ben", "caro"]):
            value = codes[(i + (j if i % 3 else 0)) % len(codes)]
            other = TRICKY[(i // 4 + j) % len(TRICKY)] if value == "other" else None
            writes.append(LabelWrite(a.id, "act", coder, Answer(value, (), other)))
    store.save_answers(cb, writes)
    store.set_skipped(actions[2].id, cb, "ben", ["act"])
    return store


def _plans(store: Store, call: Callable[[], object]) -> dict[str, list[str]]:
    """Every SELECT that ``call`` runs, with its query plan."""
    seen: list[str] = []
    store.conn.set_trace_callback(seen.append)
    try:
        call()
    finally:
        store.conn.set_trace_callback(None)
    plans = {}
    for sql in seen:
        if sql.lstrip().upper().startswith("SELECT") and "labels" in sql:
            rows = store.conn.execute("EXPLAIN QUERY PLAN " + sql).fetchall()
            plans[sql] = [r[3] for r in rows]
    return plans


def _scans_labels(line: str) -> bool:
    """A step that reads labels without an index (or from the table after an index)."""
    if not re.match(r"(SCAN|SEARCH) (l|labels)\b", line):
        return False
    return "INDEX" not in line


@pytest.mark.parametrize("sample", ["half", None])
def test_hot_queries_use_an_index(coded: Store, sample: str | None) -> None:
    scope = LabelScope("traum", ("act",), ("ana", "ben", "caro"), sample)
    values = list(coded.answer_counts(scope)[0])
    calls = {
        "label_cells": lambda: [r for chunk in coded.label_cells(scope, values) for r in chunk],
        "answer_counts": lambda: coded.answer_counts(scope),
        "skipped_cells": lambda: coded.skipped_cells(scope),
        "coders_with_answers": lambda: coded.coders_with_answers("traum", sample=sample),
        "shared_items": lambda: coded.shared_items("traum", ["ana", "ben"], sample=sample),
        "label_ids": lambda: coded.label_ids("traum", "act", ["ana", "ben"], sample=sample),
        "answered_label_counts": coded.answered_label_counts,
    }
    for name, call in calls.items():
        plans = _plans(coded, call)
        assert plans, name
        for sql, plan in plans.items():
            assert not any(_scans_labels(line) for line in plan), (name, sql, plan)
            on_labels = [line for line in plan if re.match(r"(SCAN|SEARCH) (l|labels)\b", line)]
            assert on_labels, (name, plan)
            if name != "skipped_cells":  # the few skipped rows are read from the table
                assert all("COVERING INDEX" in line for line in on_labels), (name, plan)


def test_the_main_pass_needs_no_full_sort(coded: Store) -> None:
    for sample in ("half", None):
        scope = LabelScope("traum", ("act",), ("ana", "ben", "caro"), sample)
        sql, params = coded.label_cells_sql(scope, ["Initiate"])
        plan = [r[3] for r in coded.conn.execute("EXPLAIN QUERY PLAN " + sql, params)]
        assert "USE TEMP B-TREE FOR ORDER BY" not in plan, plan


def test_sqlite_makes_the_content_python_makes() -> None:
    assert sql_content_matches(sqlite3.sqlite_version)
    conn = sqlite3.connect(":memory:")
    for text in TRICKY:
        row = {
            "action_id": text,
            "question": "q",
            "coder": text,
            "value": None,
            "codes": ("a", "b_c-1"),  # codes are [A-Za-z0-9_-]: their JSON has no escapes
            "other_text": text,
            "codebook_hash": "h",
        }
        made = conn.execute(
            "SELECT json_array(?, ?, ?, ?, json(?), ?, ?)",
            (text, "q", text, None, json.dumps(["a", "b_c-1"]), text, "h"),
        ).fetchone()[0]
        assert made == label_content(row)


def test_a_run_keeps_the_digest_python_computes_of_every_label(coded: Store) -> None:
    for sample in ("half", None):
        run = agree(coded, codebook="traum", sample=sample, n_boot=200)
        stored = coded.agreement_run(run.run_id)
        rows = coded.labels_by_id(stored["label_ids"])
        assert len(rows) == run.n_labels == (90 if sample else 180)
        assert {r["id"]: label_digest(r) for r in rows} == stored["label_digests"]
        assert labels_hash(rows) == stored["labels_hash"] == run.labels_hash
        assert len({r["other_text"] for r in rows} & set(TRICKY)) >= 3
