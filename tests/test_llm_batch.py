"""`llm-label --batch`, `--batch-export` and `llm-import`, end to end on the real Map Task data.

The batch API is the test server's (``tests/chat_server.py``: ``/v1/files`` and
``/v1/batches``, states validating -> in_progress -> completed / failed / expired, per-line
errors, a delay); offline results are made by answering each exported line with the same
server logic, as vLLM's ``run_batch`` would write them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from annotate.llm_store import llm_store
from annotate.store import Store
from llm_coder.calls import request_body
from llm_coder.client import LLMConfig
from llm_coder.job import JobOptions, LabelJob
from tests.chat_server import ServerState, chat_reply
from tests.llm_fixtures import running_chat_server
from tests.test_llm_cli import (
    CODER,
    KEY,
    MODEL,
    agreeing,
    db_rows,
    maptask_split,
    one_line,
)

HELDOUT, REST = 72, 140


@pytest.fixture
def server():
    with running_chat_server() as s:
        yield s


@pytest.fixture
def env(monkeypatch, server):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    return server


@pytest.fixture
def gold(cli, shared, db_path):
    return maptask_split(cli, shared, db_path)


def label(cli, *args: str):
    return cli("llm-label", "--codebook", "hcrc_moves", "--model", MODEL, *args)


def lines_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def run_offline(state: ServerState, requests: Path, results: Path, *, error_for=()) -> None:
    """What ``vllm run_batch -i requests -o results`` writes: one line per request."""
    with open(results, "w") as out:
        for n, line in enumerate(lines_of(requests)):
            status, body, _ = chat_reply(state, line["body"], hang=False)
            if line["body"]["messages"][-1]["content"] in error_for:
                status, body = 400, {"object": "error", "message": "prompt too long"}
            out.write(json.dumps({
                "id": f"vllm-{n}", "custom_id": line["custom_id"],
                "response": {"status_code": status, "request_id": f"vllm-batch-{n}",
                             "body": body},
                "error": None,
            }) + "\n")  # fmt: skip


# -- the exported lines -----------------------------------------------------------------


def test_exported_lines_are_the_documented_format_and_the_online_requests(
    cli, gold, env, db_path, tmp_path
):
    # The request line format is documented by OpenAI (Batch API guide and reference:
    # https://platform.openai.com/docs/guides/batch, https://platform.openai.com/docs/
    # api-reference/batch/request-input): one JSON object per line with exactly
    # "custom_id", "method" ("POST"), "url" ("/v1/chat/completions") and "body" (the
    # endpoint's request body), custom_id unique within the file; a file holds at most
    # 50,000 requests and 200 MB (async-openai's copy of the reference,
    # https://github.com/64bit/async-openai/pull/475/files), one model per file. vLLM reads
    # the same lines: vllm.entrypoints.openai.protocol.BatchRequestInput has custom_id,
    # method, url and body (https://docs.vllm.ai/en/v0.10.2/api/vllm/entrypoints/openai/
    # protocol.html), used by `vllm run-batch` / `python -m vllm.entrypoints.openai.run_batch
    # -i requests.jsonl -o results.jsonl --model M`
    # (https://docs.vllm.ai/en/v0.15.0/api/vllm/entrypoints/openai/run_batch/,
    # https://www.mintlify.com/vllm-project/vllm/api/cli/run-batch); its output lines are
    # BatchRequestOutput {id, custom_id, response: {status_code, request_id, body}, error},
    # as OpenAI's output and error files (BatchRequestOutput in OpenAI's OpenAPI spec,
    # https://docs.rs/openai-struct/latest/src/openai_struct/models/batch_request_output.rs.html).
    env.state.label_for = agreeing(gold, 0.9)
    online_db = tmp_path / "online.db"
    with Store(db_path) as s:
        s.db.conn.execute("VACUUM INTO ?", (str(online_db),))
    r = cli("llm-label", "--codebook", "hcrc_moves", "--model", MODEL, "--validate-only",
            db=online_db)  # fmt: skip
    assert r.exit_code == 0, r.output
    online = {b["messages"][-1]["content"]: b for b in env.state.bodies}
    assert len(online) == HELDOUT

    requests = tmp_path / "requests.jsonl"
    r = label(cli, "--batch-export", str(requests))
    assert r.exit_code == 0, r.output
    assert env.state.requests == HELDOUT  # the export sent nothing
    lines = lines_of(requests)
    assert len(lines) == HELDOUT
    with Store(db_path) as s:
        config = LLMConfig(MODEL, env.base_url, "")
        job = LabelJob(llm_store(s), _loaded(), JobOptions(model=MODEL, split="hcrc_moves"), config)
        runner = job._runner(client=None, cache=None)
        expected = {}
        for aid in job.heldout_ids:
            item = job.sessions.item(aid)
            request = runner._request(item, job.builder.messages(item), 0)
            expected[request.hash] = request
    assert {line["custom_id"] for line in lines} == set(expected)
    for line in lines:
        assert list(line) == ["custom_id", "method", "url", "body"]
        assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
        assert len(line["custom_id"]) == 64
        body = line["body"]
        assert body == request_body(expected[line["custom_id"]], "json_schema")
        assert body == online[body["messages"][-1]["content"]]  # byte for byte what online sends
        assert body["model"] == MODEL and body["response_format"]["type"] == "json_schema"
    assert r.stdout.count("python -m vllm.entrypoints.openai.run_batch -i") == 1


def _loaded():
    from annotate.codebook import find_codebook

    return find_codebook("hcrc_moves")


# -- offline round trip -----------------------------------------------------------------


def test_export_import_round_trip_with_gate_and_idempotent_reimport(
    cli, gold, env, db_path, tmp_path
):
    state = ServerState(label_for=agreeing(gold, 0.9))
    requests, results = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    r = label(cli, "--batch-export", str(requests))
    assert r.exit_code == 0, r.output
    assert "validate: the held-out items (validation comes first) handed over" in r.stdout
    validate_lines = lines_of(requests)
    assert len(validate_lines) == HELDOUT
    # one reply outside the codebook, one line the runner refused
    bad = validate_lines[0]["body"]["messages"][-1]["content"]
    refused = validate_lines[1]["body"]["messages"][-1]["content"]
    state.answer_for = lambda text, body: (
        {"move": {"code": "not-a-code", "other_text": None}}
        if body["messages"][-1]["content"] == bad
        else {"move": {"code": state.label_for(text, body), "other_text": None}}
    )
    run_offline(state, requests, results, error_for={refused})

    r = cli("llm-import", str(results))
    assert r.exit_code == 0, r.output
    assert f"{HELDOUT} lines: {HELDOUT - 1} replies stored, 1 errors (items stay open)" in r.stdout
    assert f"{HELDOUT - 1} items coded ({HELDOUT - 2} valid, 1 invalid)" in r.stdout
    assert "Next: annotate llm-label --codebook hcrc_moves --model test-model --batch-export" in (
        r.stdout
    )
    counts = "SELECT (SELECT count(*) FROM llm_requests), (SELECT count(*) FROM llm_items), " \
        "(SELECT count(*) FROM labels WHERE coder = ?)"  # fmt: skip
    before = db_rows(db_path, counts, (CODER,))
    assert before == [(HELDOUT - 1, HELDOUT - 1, HELDOUT - 2)]
    [(_, error, raw)] = db_rows(
        db_path, "SELECT valid, error, raw_replies FROM llm_items WHERE valid = 0"
    )
    assert error.startswith("question move: unknown code") and "not-a-code" in raw
    meta = db_rows(db_path, "SELECT meta FROM labels WHERE coder = ? LIMIT 1", (CODER,))[0][0]
    assert json.loads(meta)["batch"] == str(requests)

    r = cli("llm-import", str(results))  # again: adds nothing
    assert r.exit_code == 0, r.output
    assert f"0 replies stored, {HELDOUT - 1} already stored" in r.stdout
    assert db_rows(db_path, counts, (CODER,)) == before

    # the refused item goes into the next file; the gate waits for it
    r = label(cli, "--batch-export", str(requests))
    assert r.exit_code == 0, r.output
    [line] = lines_of(requests)
    assert line["body"]["messages"][-1]["content"] == refused
    run_offline(state, requests, results)
    assert cli("llm-import", str(results)).exit_code == 0

    r = label(cli, "--batch-export", str(requests))  # validation complete: gate, then the rest
    assert r.exit_code == 0, r.output
    assert "Gate: Fleiss' kappa" in r.stdout and "passes --min-kappa 0.6" in r.stdout
    assert len(lines_of(requests)) == REST
    run_offline(state, requests, results)
    r = cli("llm-import", str(results))
    assert f"{REST} replies stored" in r.stdout
    r = label(cli, "--batch-export", str(requests))
    assert r.exit_code == 0, r.output
    assert "Done: run 1 (done)" in r.stdout
    assert db_rows(db_path, "SELECT count(*) FROM labels WHERE coder = ?", (CODER,)) == [
        (HELDOUT + REST - 1,)
    ]
    assert env.state.requests == 0  # nothing went to the endpoint

    # an online run of the same settings finds every request in the cache
    r = label(cli)
    assert r.exit_code == 0, r.output
    assert env.state.requests == 1  # only the repair of the invalid reply
    assert "Done: run 2 (done)" in r.stdout


# -- the Batch API cycle ----------------------------------------------------------------


def test_batch_submit_poll_collect_gate_then_the_rest(cli, gold, env, db_path):
    env.state.label_for = agreeing(gold, 0.9)
    batches = env.state.batches
    r = label(cli, "--batch", "--price-in", "2", "--price-out", "8")
    assert r.exit_code == 0, r.output
    assert "submitted batch 1 (validate, part 1, batch-" in r.stdout
    assert f"{HELDOUT} requests" in r.stdout
    assert "Next (the provider has up to 24 h): annotate llm-label --codebook hcrc_moves " \
        "--model test-model --batch" in r.stdout  # fmt: skip
    assert len(batches.batches) == 1 and env.state.requests == 0
    [sent] = batches.batches.values()
    assert sent["metadata"]["annotate_batch"] and sent["completion_window"] == "24h"

    status = json.loads(cli("status", "--format", "json").stdout)
    [open_batch] = status["llm_batches"]
    assert open_batch["status"] == "validating" and " --batch --db " in open_batch["command"]
    assert status["next"] == open_batch["command"]
    table = cli("status").stdout
    assert "Open LLM batches (the command collects them)" in table and "validating" in table

    r = label(cli, "--batch")  # validating -> in_progress
    assert r.exit_code == 0, r.output
    assert ": in_progress, 0 of 72 done, 0 failed" in r.stdout
    assert "Run the same command again to collect" in r.stdout
    r = label(cli, "--batch")  # in progress, then completed: collect, gate, submit the rest
    assert r.exit_code == 0, r.output
    assert f"completed, {HELDOUT} requests: {HELDOUT} replies stored" in r.stdout
    assert "at the batch rate" in r.stdout
    assert "Gate: Fleiss' kappa" in r.stdout
    assert "submitted batch 2 (label, part 1" in r.stdout and f"{REST} requests" in r.stdout
    assert len(batches.batches) == 2
    r = label(cli, "--batch")
    r = label(cli, "--batch")
    assert r.exit_code == 0, r.output
    assert f"completed, {REST} requests: {REST} replies stored" in r.stdout
    assert "gate: pass" in r.stdout
    assert "Done: run 1 (done)" in r.stdout
    assert env.state.requests == 0  # nothing was sent online
    with Store(db_path) as s:
        rows = s.labels.label_rows("hcrc_moves", coders=[CODER])
        run = s.llm.llm_run(1)
    assert len(rows) == HELDOUT + REST
    assert {r["meta"]["batch"] for r in rows} == set(batches.batches)
    assert run["status"] == "done" and run["gate"] == "pass" and run["sent"] == HELDOUT + REST
    assert run["cost"] == pytest.approx((run["tokens_in"] * 2 + run["tokens_out"] * 8) / 2e6)
    status = json.loads(cli("status", "--format", "json").stdout)
    assert status["llm_batches"] == []
    r = label(cli, "--batch")  # a new run: everything from the cache, no batch
    assert r.exit_code == 0, r.output
    assert "Done: run 2 (done)" in r.stdout and len(batches.batches) == 2


def test_gate_failure_submits_no_second_batch(cli, gold, env, db_path):
    env.state.label_for = agreeing(gold, 0.3)
    assert label(cli, "--batch").exit_code == 0
    label(cli, "--batch")
    r = label(cli, "--batch")
    assert r.exit_code == 1
    assert "is below --min-kappa 0.6: the rest is not labelled" in r.stderr
    assert len(env.state.batches.batches) == 1
    assert db_rows(db_path, "SELECT status, gate FROM llm_runs") == [("gate_failed", "fail")]


def test_expired_batch_and_line_errors_are_reported_and_resubmitted(cli, gold, env, db_path):
    env.state.label_for = agreeing(gold, 0.9)
    batches = env.state.batches
    batches.outcomes = ["expired"]
    with Store(db_path) as s:
        heldout = s.actions.actions_by_ids(list(s.llm.split_info("hcrc_moves").heldout))
    texts = Counter(one_line(a.content) for a in heldout)
    target = next(a for a in heldout if texts[one_line(a.content)] == 1)
    batches.line_errors = [one_line(target.content)]
    assert label(cli, "--batch").exit_code == 0
    label(cli, "--batch")
    r = label(cli, "--batch")
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "batch 1 (validate, part 1, batch-0002): expired, 72 requests: " in out
    # the first half answered (one line with an HTTP 500), the second half expired
    assert "35 replies stored, 37 errors;" in out
    assert f"  error: {target.id}: HTTP 500: server_error: The server had an error" in out
    assert ": batch_expired: This request could not be executed before the completion" in out
    assert "  37 items stay open: they go into the next batch." in out
    assert "submitted batch 2 (validate" in r.stdout  # the open items, at once
    second = list(batches.batches.values())[-1]
    stored = db_rows(db_path, "SELECT count(*) FROM llm_requests")[0][0]
    assert 0 < stored < HELDOUT and second["request_counts"]["total"] == HELDOUT - stored
    batches.line_errors = []
    label(cli, "--batch")
    r = label(cli, "--batch")
    assert "submitted batch 3 (label" in r.stdout, r.stdout
    assert db_rows(db_path, "SELECT count(*) FROM llm_items WHERE phase = 'validate'") == [
        (HELDOUT,)
    ]


def test_files_above_the_limits_are_split(cli, gold, env, db_path):
    env.state.label_for = agreeing(gold, 0.9)
    r = label(cli, "--batch", "--batch-max-requests", "50")
    assert r.exit_code == 0, r.output
    assert "(part 1 of 2)" in r.stdout and "(part 2 of 2)" in r.stdout
    totals = sorted(b["request_counts"]["total"] for b in env.state.batches.batches.values())
    assert totals == [22, 50]
    r = label(cli, "--batch", "--batch-max-mb", "0.2")  # the same run: waits for both
    assert "in_progress" in r.stdout and len(env.state.batches.batches) == 2


def test_files_above_the_byte_limit_are_split(cli, gold, env, db_path):
    env.state.label_for = agreeing(gold, 0.9)
    r = label(cli, "--batch", "--batch-max-mb", "0.3")
    assert r.exit_code == 0, r.output
    service = env.state.batches
    sizes = [service.files[b["input_file_id"]]["bytes"] for b in service.batches.values()]
    assert len(sizes) >= 3 and max(sizes) <= 0.3 * 1024 * 1024
    assert sum(b["request_counts"]["total"] for b in service.batches.values()) == HELDOUT
    assert f"(part {len(sizes)} of {len(sizes)})" in r.stdout


def test_cancel_then_the_items_go_into_the_next_batch(cli, gold, env, db_path):
    env.state.label_for = agreeing(gold, 0.9)
    assert label(cli, "--batch").exit_code == 0
    r = label(cli, "--batch", "--batch-cancel")
    assert r.exit_code == 0, r.output
    assert ": cancelling" in r.stdout
    r = label(cli, "--batch")
    assert r.exit_code == 0, r.output
    assert ": cancelled, 72 requests: 0 replies stored" in r.stdout
    assert "submitted batch 2 (validate" in r.stdout


def test_kill_9_between_submit_and_collect_loses_nothing_and_submits_once(cli, gold, env, db_path):
    env.state.label_for = agreeing(gold, 0.9)
    batches = env.state.batches
    batches.create_delay = 30  # the batch exists; the answer never reaches the process
    proc = subprocess.Popen(
        [sys.executable, "-m", "annotate", "llm-label", "--codebook", "hcrc_moves",
         "--model", MODEL, "--batch", "--db", str(db_path)],
        env={**os.environ, "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": env.base_url},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not batches.batches and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert len(batches.batches) == 1
    assert db_rows(db_path, "SELECT status, provider_id FROM llm_batches") == [("creating", None)]
    batches.create_delay = 0
    r = label(cli, "--batch")  # finds the batch by its tag instead of creating another
    assert r.exit_code == 0, r.output
    assert len(batches.batches) == 1
    [(status, provider)] = db_rows(db_path, "SELECT status, provider_id FROM llm_batches")
    assert provider == next(iter(batches.batches)) and status == "in_progress"
    label(cli, "--batch")  # completed: collected, the rest submitted
    label(cli, "--batch")
    r = label(cli, "--batch")
    assert "Done: run 1 (done)" in r.stdout, r.stdout
    assert len(batches.batches) == 2
    assert db_rows(db_path, "SELECT count(*) FROM labels WHERE coder = ?", (CODER,)) == [
        (HELDOUT + REST,)
    ]


def test_dry_run_prices_at_the_batch_rate(cli, gold, env):
    online = label(cli, "--dry-run", "--price-in", "2", "--price-out", "8")
    batch = label(cli, "--dry-run", "--batch", "--price-in", "2", "--price-out", "8")
    assert batch.exit_code == 0, batch.output
    assert "at the batch rate (0.5 of --price-in/--price-out)" in batch.stdout

    def cost(out: str) -> float:
        return float(out.split("about $")[1].split()[0].rstrip(",.").replace(",", ""))

    assert cost(batch.stdout) == pytest.approx(cost(online.stdout) / 2, rel=1e-2)
    third = label(cli, "--dry-run", "--batch", "--batch-discount", "0.25", "--price-in", "2")
    assert "(0.25 of --price-in/--price-out)" in third.stdout
    assert env.state.requests == 0 and not env.state.batches.batches


def test_a_server_without_a_batch_api_points_to_batch_export(cli, gold, monkeypatch):
    with running_chat_server() as plain:
        plain.state.batches.post = lambda *a: (404, {"error": {"message": "Not Found"}})
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", plain.base_url)
        r = label(cli, "--batch")
    assert r.exit_code == 1
    assert "error: uploading the batch file failed (HTTP 404" in r.stderr
    assert "--batch-export FILE with vLLM's run_batch" in r.stderr


def test_votes_go_into_one_file_and_the_majority_is_stored(cli, gold, env, db_path, tmp_path):
    right = agreeing(gold, 1.0)
    state = ServerState(label_for=lambda text, body: right(text, body) if body["seed"] != 2
                        else "acknowledge")  # fmt: skip
    requests, results = tmp_path / "requests.jsonl", tmp_path / "results.jsonl"
    args = ("--votes", "3", "--temperature", "0.7", "--batch-export", str(requests))
    assert label(cli, *args).exit_code == 0
    lines = lines_of(requests)
    assert len(lines) == 3 * HELDOUT and {line["body"]["seed"] for line in lines} == {0, 1, 2}
    run_offline(state, requests, results)
    r = cli("llm-import", str(results))
    assert f"{3 * HELDOUT} replies stored" in r.stdout and f"{HELDOUT} items coded" in r.stdout
    with Store(db_path) as s:
        rows = s.labels.label_rows("hcrc_moves", coders=[CODER])
    confidence = {round(r["meta"]["confidence"], 4) for r in rows}
    assert confidence <= {1.0, round(2 / 3, 4)} and round(2 / 3, 4) in confidence


def test_a_failed_batch_is_reported_and_its_items_resubmitted(cli, gold, env, db_path):
    env.state.label_for = agreeing(gold, 0.9)
    env.state.batches.outcomes = ["failed"]
    assert label(cli, "--batch").exit_code == 0
    r = label(cli, "--batch")
    assert r.exit_code == 0, r.output
    assert ": failed, 72 requests: 0 replies stored, 72 without a result;" in r.stdout
    assert "  the provider says: invalid_request: the batch failed" in r.stdout
    assert "  72 items stay open: they go into the next batch." in r.stdout
    assert "submitted batch 2 (validate" in r.stdout
    assert [b["status"] for b in env.state.batches.batches.values()] == ["failed", "validating"]


def test_a_results_file_with_a_bad_byte_still_collects_the_rest(cli, gold, env, db_path):
    """A byte that is not UTF-8 on one line of the provider's output costs that line only."""
    env.state.label_for = agreeing(gold, 0.9)

    def garble(content: bytes) -> bytes:
        first, rest = content.split(b"\n", 1)
        return first.replace(b'"custom_id"', b'"custom\xff_id"', 1) + b"\n" + rest

    env.state.batches.garble = garble
    assert label(cli, "--batch").exit_code == 0
    label(cli, "--batch")
    r = label(cli, "--batch")
    assert r.exit_code in (0, 1), r.output
    assert "Traceback" not in r.stderr
    assert f"completed, {HELDOUT} requests: {HELDOUT - 1} replies stored" in r.stdout
    with Store(db_path) as s:
        assert len(s.labels.label_rows("hcrc_moves", coders=[CODER])) == HELDOUT - 1
