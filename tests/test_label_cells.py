"""Reading labels at corpus scale: the hot queries of `agree` and `adjudicate` use an index
(no full SCAN of labels, no sort), chunks read what one pass reads, and each label's revision
changes when its answer does."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable

import pytest

from annotate.codebook import Answer, find_codebook
from annotate.models import Action
from annotate.reliability.agreement_run import agree
from annotate.reliability.label_hashes import label_digest
from annotate.reliability.question_labels import (
    LabelsRead,
    QuestionData,
    labels_hash_of,
    read_questions,
)
from annotate.reliability.selection import select
from annotate.store import LabelWrite, Store, label_cells
from annotate.store.label_cells import LabelScope
from annotate.store.revisions import content_revision

TRICKY = ['say "hi"', "back\\slash", "two\nlines", "tab\tand \x01", "café 中文 \u2028", "/"]


@pytest.fixture
def coded(store: Store) -> Store:
    actions = [
        Action(id=f"s1:{i:03d}", session="s1", seq=i, action_type="message", content=f"m {i}")
        for i in range(60)
    ]
    store.actions.add_actions(actions, path="t", sha256="-", fmt="jsonl")
    store.samples.create_sample("half", [a.id for a in actions[::2]], seed=1)
    loaded = find_codebook("traum")
    store.codebooks.register_codebook(loaded)
    cb = loaded.codebook
    codes = ["Initiate", "Continue", "Acknowledge", "other"]
    writes = []
    for i, a in enumerate(actions):
        for j, coder in enumerate(["ana", "ben", "caro"]):
            value = codes[(i + (j if i % 3 else 0)) % len(codes)]
            other = TRICKY[(i // 4 + j) % len(TRICKY)] if value == "other" else None
            writes.append(LabelWrite(a.id, "act", coder, Answer(value, (), other)))
    store.labels.save_answers(cb, writes)
    store.labels.set_skipped(actions[2].id, cb, "ben", ["act"])
    return store


def _plans(store: Store, call: Callable[[], object]) -> dict[str, list[str]]:
    """Every SELECT that ``call`` runs, with its query plan."""
    seen: list[str] = []
    store.db.conn.set_trace_callback(seen.append)
    try:
        call()
    finally:
        store.db.conn.set_trace_callback(None)
    plans = {}
    for sql in seen:
        if sql.lstrip().upper().startswith("SELECT") and "labels" in sql:
            rows = store.db.conn.execute("EXPLAIN QUERY PLAN " + sql).fetchall()
            plans[sql] = [r[3] for r in rows]
    return plans


def _scans_labels(line: str) -> bool:
    """A step that reads labels without an index (or from the table after an index)."""
    if not re.match(r"(SCAN|SEARCH) (l|labels)\b", line):
        return False
    return "INDEX" not in line


def _arrays(store: Store, scope: LabelScope) -> list[object]:
    with store.db.read_snapshot():
        if scope.sample is None:
            store.label_cells.number_labelled_items(scope)
        versions = store.label_cells.version_hashes(scope.codebook)
        return list(store.label_cells.label_arrays(scope, ["Initiate", "other"], versions))


@pytest.mark.parametrize("sample", ["half", None])
def test_hot_queries_use_an_index(coded: Store, sample: str | None) -> None:
    scope = LabelScope("traum", ("act",), ("ana", "ben", "caro"), sample)
    calls = {
        "label_arrays": lambda: _arrays(coded, scope),
        "coded_sets": lambda: list(coded.label_cells.coded_sets(scope)),
        "answer_counts": lambda: coded.label_cells.answer_counts(scope),
        "skipped_cells": lambda: coded.label_cells.skipped_cells(scope),
        "coders_with_answers": lambda: coded.agreement.coders_with_answers("traum", sample=sample),
        "answering_coders": lambda: coded.agreement.answering_coders("traum", sample=sample),
        "shared_items": lambda: coded.agreement.shared_items(
            "traum", ["ana", "ben"], sample=sample
        ),
        "label_ids": lambda: coded.agreement.label_ids(
            "traum", "act", ["ana", "ben"], sample=sample
        ),
        "answered_label_counts": coded.agreement.answered_label_counts,
        "has_answers": lambda: coded.agreement.has_answers("traum"),
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


def test_the_main_pass_needs_no_sort(coded: Store) -> None:
    for sample in ("half", None):
        scope = LabelScope("traum", ("act",), ("ana", "ben", "caro"), sample)
        for last in (False, True):
            sql, before, rest = coded.label_cells.label_arrays_sql(
                scope, ["Initiate"], [], last_chunk=last
            )
            bounds = ["", "~"][: 1 if last else 2]
            with coded.db.read_snapshot():
                if sample is None:
                    coded.label_cells.number_labelled_items(scope)
                plan = [
                    r[3]
                    for r in coded.db.conn.execute(
                        "EXPLAIN QUERY PLAN " + sql, [*before, *bounds, *rest]
                    )
                ]
            assert not any("TEMP B-TREE" in line for line in plan), plan
            # each item's labels are looked up, not scanned over the chunk's range per item
            on_labels = [line for line in plan if line.startswith("SEARCH l ")]
            assert len(on_labels) == 1 and on_labels[0].endswith("(codebook=? AND action_id=?)")
        # the chunks' bounds are found in an index of the items, without a sort
        with coded.db.read_snapshot():
            if sample is None:
                coded.label_cells.number_labelled_items(scope)
            items, params = coded.label_cells._items(scope, "action_id > ?")
            plan = [
                r[3]
                for r in coded.db.conn.execute(
                    f"EXPLAIN QUERY PLAN {items} ORDER BY action_id LIMIT 1 OFFSET 5", [*params, ""]
                )
            ]
        assert not any("TEMP B-TREE" in line or line.startswith("SCAN") for line in plan), plan


def test_answering_coders_are_the_coders_with_answers(coded: Store) -> None:
    cb = coded.codebooks.stored_codebook("traum")
    coded.labels.set_skipped("s1:003", cb, "dan", ["act"])  # a row without an answer
    odd = LabelWrite("s1:001", "act", "eve", Answer("Cancel", (), None))  # not in 'half'
    coded.labels.save_answers(cb, [odd])
    for sample in ("half", None):
        found = coded.agreement.answering_coders("traum", sample=sample)
        assert found == list(coded.agreement.coders_with_answers("traum", sample=sample))
        assert "dan" not in found and ("eve" in found) == (sample is None)


def _read(store: Store, sample: str | None) -> tuple[list[QuestionData], LabelsRead]:
    selection = select(store, codebook="traum", sample=sample)
    with store.db.read_snapshot():
        return read_questions(store, selection)


@pytest.mark.parametrize("sample", ["half", None])
def test_chunks_of_items_read_what_one_chunk_reads(
    coded: Store, sample: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole, read = _read(coded, sample)
    monkeypatch.setattr(label_cells, "ITEMS_PER_CHUNK", 7)
    chunked, read_chunked = _read(coded, sample)
    assert whole[0].items == chunked[0].items
    assert (whole[0].codes == chunked[0].codes).all()
    assert (read.label_ids == read_chunked.label_ids).all()
    assert read.labels_hash == read_chunked.labels_hash
    assert len(whole[0].items) == (30 if sample else 60)
    assert read.n_labels == (90 if sample else 180)
    row = whole[0].items.index("s1:004")
    assert whole[0].value_row(row) == ("Initiate", "Continue", "Acknowledge")


def test_a_value_outside_the_codebook_is_read_after_a_count(coded: Store) -> None:
    coded.db.conn.execute(  # SQL written by hand: the table, the revision left as it was
        "UPDATE coder_labels SET value = 'Grunt' WHERE action_id = 's1:000' AND coder = 'caro'"
    )
    data, _ = _read(coded, "half")
    row = data[0].items.index("s1:000")
    assert data[0].value_row(row)[2] == "Grunt"
    assert "Grunt" in data[0].names


def _revision(store: Store, action_id: str, coder: str) -> int:
    return store.db.conn.execute(
        "SELECT revision FROM labels WHERE action_id = ? AND coder = ?", (action_id, coder)
    ).fetchone()[0]


def test_a_label_gets_a_new_revision_when_its_answer_changes_and_only_then(coded: Store) -> None:
    cb = coded.codebooks.stored_codebook("traum")
    first = _revision(coded, "s1:005", "ana")
    value = coded.db.conn.execute(
        "SELECT value FROM labels WHERE action_id = 's1:005' AND coder = 'ana'"
    ).fetchone()[0]
    assert first == content_revision("s1:005", "act", "ana", value, (), None, cb.version_hash)
    coded.labels.set_note("s1:005", cb, "ana", ["act"], "a note")
    coded.labels.set_flag("s1:005", cb, "ana", ["act"])
    assert _revision(coded, "s1:005", "ana") == first
    coded.labels.save_answers(cb, [LabelWrite("s1:005", "act", "ana", Answer("Repair", (), None))])
    second = _revision(coded, "s1:005", "ana")
    assert second == content_revision("s1:005", "act", "ana", "Repair", (), None, cb.version_hash)
    coded.labels.save_answers(cb, [LabelWrite("s1:005", "act", "ana", Answer(value, (), None))])
    assert _revision(coded, "s1:005", "ana") == first  # the same content, the same revision
    # an undone answer: the revision of the unanswered label (the note keeps the row)
    coded.labels.clear_answer("s1:005", "traum", "act", "ana")
    empty = content_revision("s1:005", "act", "ana", None, (), None, cb.version_hash)
    assert _revision(coded, "s1:005", "ana") == empty
    # the view is read-only: no write escapes the rule (migration 23)
    with pytest.raises(sqlite3.OperationalError, match="cannot modify labels"):
        coded.db.conn.execute("UPDATE labels SET other_text = 'x' WHERE action_id = 's1:005'")
    assert _revision(coded, "s1:005", "ana") == empty


def test_a_run_keeps_the_revision_of_every_label_it_used(coded: Store) -> None:
    for sample in ("half", None):
        run = agree(coded, codebook="traum", sample=sample, n_boot=200)
        stored = coded.agreement.agreement_run(run.run_id)
        ids, revisions = coded.agreement.label_revisions(stored["label_ids"])
        assert len(ids) == run.n_labels == (90 if sample else 180)
        assert ids.tolist() == stored["label_ids"]
        rows = coded.agreement.labels_by_id(stored["label_ids"])
        assert {r["id"]: label_digest(r) for r in rows} == stored["label_digests"]
        assert labels_hash_of(revisions) == stored["labels_hash"] == run.labels_hash
        assert len({r["other_text"] for r in rows} & set(TRICKY)) >= 3


def test_the_gold_adjudicate_writes_keeps_its_revision_while_its_answer_stays(
    coded: Store,
) -> None:
    """The majority gold goes in by one SQL statement (no SHA-256 per item in Python): a
    new gold gets a revision as a raw SQL write does (new, never 0), which stays while its
    answer stays (another adjudicator, another run) and changes with the answer; the
    coders' labels keep the revision of their content."""
    from annotate.reliability.majority_pass import adjudicate_majority
    from annotate.store.revisions import stored_revision

    selection = select(coded, codebook="traum", sample=None, purpose="adjudication")
    assert adjudicate_majority(coded, selection, "lead")[1] > 0
    query = (
        "SELECT action_id, question, coder, value, codes, other_text, codebook_hash, revision "
        "FROM labels ORDER BY action_id, coder"
    )
    rows = coded.db.conn.execute(query).fetchall()
    gold = {r["action_id"]: r["revision"] for r in rows if r["coder"] == "gold"}
    assert gold and 0 not in gold.values() and None not in gold.values()
    assert all(r["revision"] == stored_revision(tuple(r)[:7]) for r in rows if r["coder"] != "gold")
    assert adjudicate_majority(coded, selection, "zoe")[1] == len(gold)
    again = {
        r["action_id"]: r["revision"] for r in coded.db.conn.execute(query) if r["coder"] == "gold"
    }
    assert again == gold


def test_a_revision_hashes_the_content_json_dumps_makes() -> None:
    import hashlib
    import json

    from annotate.store.revisions import answer_tail, item_revision

    for text in TRICKY:
        content = [text, "q", text, None, ["a", "b_c-1"], text, "h"]
        made = json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode()
        expected = int.from_bytes(hashlib.sha256(made).digest()[:8], "big", signed=True)
        assert content_revision(*content) == expected
        assert item_revision(text, answer_tail(*content[1:])) == expected


@pytest.mark.parametrize("spread", [1, 3, 50])  # ids close together, and far apart
def test_label_ids_are_ordered_as_a_sort_orders_them(spread: int) -> None:
    import numpy as np

    from annotate.reliability.question_labels import _id_order

    rng = np.random.default_rng(spread)
    for n in (0, 1, 2, 1000):
        ids = rng.choice(n * spread + 1, size=n, replace=False).astype(np.int64) + 7
        assert np.array_equal(_id_order(ids), np.argsort(ids, kind="stable"))
