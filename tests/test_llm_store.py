"""The LLM coder's part of the store: migration 2, splits, the request cache, results."""

from __future__ import annotations

import sqlite3

import pytest

from annotate.codebook import Answer
from annotate.errors import NotFoundError, UsageError
from annotate.models import Action
from annotate.store import Store
from annotate.store.migrations import m001_initial, m002_llm
from llm_coder.calls import CallRecord, Reply, request_for
from llm_coder.runner import ItemResult, VoteResult
from tests.test_llm_prompt import MOVES

LLM_TABLES = {
    "llm_splits",
    "llm_split_items",
    "llm_runs",
    "llm_prompts",
    "llm_requests",
    "llm_items",
}


def tables(conn) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_migration_2_from_blank_and_from_version_1(tmp_path):
    blank = Store(tmp_path / "blank.db")
    assert tables(blank.db.conn) >= LLM_TABLES
    names = [r[0] for r in blank.db.query("SELECT name FROM _migrations ORDER BY id")]
    assert names[:2] == ["m001_initial", "m002_llm"]
    blank.close()

    old = tmp_path / "old.db"
    conn = sqlite3.connect(old, isolation_level=None)
    conn.execute("CREATE TABLE _migrations (id INTEGER PRIMARY KEY, name TEXT, applied_at TEXT)")
    m001_initial(conn)
    conn.execute("INSERT INTO _migrations VALUES (1, 'm001_initial', 'then')")
    conn.close()
    upgraded = Store(old)
    assert tables(upgraded.db.conn) >= LLM_TABLES
    cols = {r[1] for r in upgraded.db.query("PRAGMA table_info(llm_requests)")}
    assert {"request_hash", "prompt_hash", "tail", "reply", "tokens_in", "latency_s"} <= cols
    upgraded.close()
    assert m002_llm.__name__ == "m002_llm"


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "p.db")
    acts = [
        Action(id=f"a{i}", session="s", seq=i, action_type="message", content=f"m{i}")
        for i in range(6)
    ]
    s.actions.add_actions(acts, path="x", sha256="x", fmt="test")
    yield s
    s.close()


def test_split_round_trip_and_errors(store):
    with pytest.raises(NotFoundError, match="no split named 'moves'") as info:
        store.llm.split_info("moves")
    assert "annotate split" in info.value.hint
    kw = dict(codebook=MOVES, gold_coder="gold", sample=None, seed=7, labels={"a1": "instruct"})
    store.llm.create_split("moves", shots=["a1", "a0"], heldout=["a2", "a3"], **kw)
    info = store.llm.split_info("moves")
    assert info.shots == ("a1", "a0") and info.heldout == ("a2", "a3")
    assert info.codebook_hash == MOVES.version_hash
    with pytest.raises(UsageError, match="already exists"):
        store.llm.create_split("moves", shots=["a1"], heldout=["a2"], **kw)
    store.llm.create_split("moves", shots=["a4"], heldout=["a5"], replace=True, **kw)
    assert store.llm.split_info("moves").shots == ("a4",)


def test_cache_keeps_the_prefix_once_and_replays_replies(store):
    cache = store.llm.llm_cache(None)
    prefix = [{"role": "system", "content": "codebook"}]
    reqs = [
        request_for(
            model="m",
            endpoint_host="h:1",
            messages=[*prefix, {"role": "user", "content": f"item {i}"}],
            prefix_len=1,
            temperature=0.0,
            schema={"type": "object"},
        )
        for i in range(3)
    ]
    for i, req in enumerate(reqs):
        assert cache.get(req.hash) is None
        cache.put(CallRecord(req, Reply(f"reply {i}", 10, 2, 0.1, "json_schema")))
    assert store.db.query("SELECT count(*) FROM llm_prompts")[0][0] == 1
    hit = cache.get(reqs[1].hash)
    assert hit == Reply("reply 1", 10, 2, 0.1, "json_schema", 1, cached=True)
    stored = store.llm.llm_request(reqs[1].hash)
    assert stored["messages"] == list(reqs[1].messages) and stored["reply"] == "reply 1"


def test_results_become_labels_of_the_llm_coder(store):
    run = store.llm.start_llm_run(
        coder="llm:m",
        model="m",
        endpoint_host="h:1",
        codebook="moves",
        codebook_hash=MOVES.version_hash,
        split="moves",
        prompt_hash="p",
        shot_ids=["a0"],
        temperature=0.0,
        votes=1,
        context=5,
    )
    vote = VoteResult({"move": Answer("instruct")}, None, ("{}",), ("h1",), 5, 1, 0.1, False)
    bad = VoteResult(None, "not JSON", ("x", "y"), ("h2", "h3"), 9, 2, 0.2, False)
    results = [
        ItemResult("a1", {"move": Answer("instruct")}, None, 1.0, (vote,)),
        ItemResult("a2", None, "not JSON", None, (bad,)),
        ItemResult("a3", None, "gave up", None, (), failed="gave up"),
    ]
    store.llm.save_llm_items(run, "validate", MOVES, "llm:m", results, provenance={"model": "m"})
    items = {i["action_id"]: i for i in store.llm.llm_items(run)}
    assert set(items) == {"a1", "a2"}  # the failed one is left for the next run
    assert items["a2"]["valid"] == 0 and items["a2"]["raw_replies"] == ["x", "y"]
    labels = store.labels.label_rows("moves", coders=["llm:m"])
    assert [(r["action_id"], r["value"], r["source"]) for r in labels] == [
        ("a1", "instruct", "llm")
    ]
    assert labels[0]["meta"] == {
        "model": "m",
        "run_id": run,
        "request_hash": "h1",
        "confidence": 1.0,
    }
    store.llm.update_llm_run(run, status="done", report={"kappa": 0.7})
    assert store.llm.llm_run(run)["report"] == {"kappa": 0.7}
