"""The LLM workflow against a real llama.cpp server (``../shared/llm/serve.sh``).

llama-cpp-python's server refuses ``json_schema`` with HTTP 500 and honours
``{"type": "json_object", "schema": ...}``; these tests run `annotate` as a user does (a new
process per command) and count the requests in the server's own access log.
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import SHARED

SERVE = SHARED / "llm" / "serve.sh"
MODEL = "smollm2"
GOLD_DIALOGUE = "q8nc2.txt"  # the shortest Map Task dialogue (42 moves)
REST_DIALOGUE = "q4ec1.txt"
CHAT_LINE = '"POST /v1/chat/completions HTTP/1.1"'

pytestmark = pytest.mark.real_llm


@dataclass(frozen=True)
class RealServer:
    base_url: str
    log: Path

    def requests(self) -> int:
        """Chat requests the server has answered so far (its access log)."""
        with self.log.open(errors="replace") as f:
            return sum(CHAT_LINE in line for line in f)

    def prefix_hits(self) -> int:
        with self.log.open(errors="replace") as f:
            return sum("prefix-match hit" in line for line in f)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def real_server(tmp_path_factory) -> Iterator[RealServer]:
    """The server `.ci/run` started (ANNOTATE_LLM_URL, ANNOTATE_LLM_LOG), or one of this
    module's own on a free port: the tests count requests in the server's log, so no other
    test run may share it."""
    if not SERVE.is_file():
        pytest.skip(
            "../shared/llm/serve.sh (the real llama.cpp server) is not beside this checkout"
        )
    if os.environ.get("ANNOTATE_LLM_URL") and os.environ.get("ANNOTATE_LLM_LOG"):
        yield RealServer(os.environ["ANNOTATE_LLM_URL"], Path(os.environ["ANNOTATE_LLM_LOG"]))
        return
    own = tmp_path_factory.mktemp("llm_server")
    model = Path(os.environ.get("LLM_DIR", "/tmp/llm-server")) / "model.gguf"
    if model.is_file():  # serve.sh downloads the model only where there is none
        (own / "model.gguf").symlink_to(model)
    env = {**os.environ, "PORT": str(free_port()), "LLM_DIR": str(own)}
    started = subprocess.run(
        ["bash", str(SERVE)], capture_output=True, text=True, timeout=600, env=env, check=False
    )
    assert started.returncode == 0, f"serve.sh failed: {started.stderr[-2000:]}"
    try:
        yield RealServer(started.stdout.strip().splitlines()[-1], own / "server.log")
    finally:
        subprocess.run(["bash", str(SERVE), "stop"], env=env, timeout=60, check=False)


@pytest.fixture(scope="module")
def project(tmp_path_factory, real_server) -> Path:
    """Gold from one dialogue (a 20-item sample of its expert moves), 12 items of another to
    label, and a second 12 for the kill -9 test."""
    db = tmp_path_factory.mktemp("real_llm") / "project.db"
    dialogues = SHARED / "maptask" / "dialogues"
    steps = [
        ["import", str(dialogues / GOLD_DIALOGUE), "--labels-as", "hcrc",
         "--codebook", "hcrc_moves"],
        ["import", str(dialogues / REST_DIALOGUE)],
        ["sample", "--n", "20", "--seed", "1", "--name", "goldset",
         "--where", "session = 'q8nc2'"],
        ["sample", "--n", "24", "--seed", "2", "--name", "others", "--where", "session = 'q4ec1'"],
        ["split", "--codebook", "hcrc_moves", "--shots", "4", "--seed", "3", "--gold", "hcrc",
         "--sample", "goldset", "--strategy", "cover"],
    ]  # fmt: skip
    for args in steps:
        annotate(db, real_server, *args)
    ids = [r[0] for r in query(db, "SELECT action_id FROM sample_items WHERE sample = 'others'")]
    for name, part in (("rest", ids[:12]), ("later", ids[12:])):
        where = "id IN (" + ",".join(f"'{i}'" for i in part) + ")"
        annotate(db, real_server, "sample", "--n", "12", "--seed", "0", "--name", name,
                 "--where", where)  # fmt: skip
    return db


def annotate(
    db: Path, server: RealServer, *args: str, check: bool = True
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANNOTATE_DB": str(db), "OPENAI_API_KEY": "sk-local", "COLUMNS": "120"}
    out = subprocess.run(
        [sys.executable, "-m", "annotate", *args],
        capture_output=True, text=True, env=env, timeout=900, check=False,
    )  # fmt: skip
    if check:
        assert out.returncode == 0, f"annotate {' '.join(args)}:\n{out.stdout}\n{out.stderr}"
    return out


def query(db: Path, sql: str, params: tuple = ()) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, params).fetchall()


def label(*extra: str) -> list[str]:
    return ["llm-label", "--codebook", "hcrc_moves", "--shots", "4", "--model", MODEL,
            "--context", "2", *extra]  # fmt: skip


def test_validate_gate_force_and_a_rerun_that_sends_nothing(project, real_server):
    url = ["--base-url", real_server.base_url]
    before = real_server.requests()
    gated = annotate(project, real_server, *label(*url, "--target", "rest"), check=False)
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert "is below --min-kappa 0.6: the rest is not labelled" in gated.stderr
    # llama-cpp-python answers json_schema with HTTP 500: one refusal, then json_object + schema
    assert "response_format json_object_schema" in gated.stdout
    assert "json_schema -> json_object_schema: HTTP 500:" in gated.stdout
    validated = real_server.requests() - before
    heldout = query(project, "SELECT count(*) FROM llm_split_items WHERE role = 'heldout'")[0][0]
    assert heldout == 16
    stored = query(project, "SELECT count(*) FROM llm_requests")[0][0]
    assert validated == stored + 1  # every reply stored, plus the one refused request
    assert query(project, "SELECT response_format, gate FROM llm_runs") == [
        ("json_object_schema", "fail")
    ]
    assert query(project, "SELECT model, response_format FROM llm_endpoint_formats") == [
        (MODEL, "json_object_schema")
    ]
    kappa = query(project, "SELECT kappa FROM llm_runs")[0][0]
    assert kappa is not None and kappa < 0.6  # a 135M model does not pass the gate

    before = real_server.requests()
    forced = annotate(project, real_server, *label(*url, "--target", "rest", "--force"))
    assert "validate: 16 items" in forced.stdout and "0 requests sent, 16 from cache" in (
        forced.stdout
    )
    assert "label: 12 items" in forced.stdout
    assert "json_schema ->" not in forced.stdout  # the stored mode: no request bound to fail
    sent = real_server.requests() - before
    coded = query(
        project,
        "SELECT count(*), sum(valid) FROM llm_items WHERE run_id = 2 AND phase = 'label' "
        "AND action_id IN (SELECT action_id FROM sample_items WHERE sample = 'rest')",
    )
    assert coded[0][0] == 12
    labels = query(
        project, "SELECT count(DISTINCT action_id) FROM labels WHERE coder = 'llm:smollm2'"
    )
    assert labels[0][0] == coded[0][1] + 16 - invalid_heldout(project)
    assert sent == query(project, "SELECT count(*) FROM llm_requests WHERE run_id = 2")[0][0]

    before = real_server.requests()
    again = annotate(project, real_server, *label(*url, "--target", "rest", "--force"))
    assert real_server.requests() == before  # the server's own log: zero requests
    assert "same as run 2 (done, gate forced)" in again.stdout  # and no run 3
    assert query(project, "SELECT max(id) FROM llm_runs")[0][0] == 2


def test_kill_9_mid_run_then_resume_requests_nothing_already_answered(project, real_server):
    url = ["--base-url", real_server.base_url]
    args = label(*url, "--target", "later", "--force", "--concurrency", "1")
    env = {**os.environ, "ANNOTATE_DB": str(project), "OPENAI_API_KEY": "sk-local"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "annotate", *args],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    later_requests = (
        "SELECT count(*) FROM llm_requests q JOIN llm_runs r ON r.id = q.run_id "
        "WHERE r.target = 'later'"
    )
    deadline = time.monotonic() + 300
    while query(project, later_requests)[0][0] < 3:
        assert proc.poll() is None, "llm-label ended before it could be killed"
        assert time.monotonic() < deadline, "no reply stored in 300 s"
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    time.sleep(3)  # let the server finish the request in flight, if any
    answered = query(project, later_requests)[0][0]
    assert answered < 12, "the run finished before the kill"
    [(killed, status)] = query(
        project, "SELECT id, status FROM llm_runs WHERE target = 'later' ORDER BY id"
    )
    assert status == "running"
    items = "SELECT count(*) FROM llm_items WHERE run_id = ? AND phase = ?"
    heldout = query(project, items, (killed, "validate"))[0][0]
    stored = query(project, items, (killed, "label"))[0][0]
    before = real_server.requests()
    resumed = annotate(project, real_server, *args)  # the same command: the same run goes on
    sent = real_server.requests() - before
    total = query(project, later_requests)[0][0]
    assert sent == total - answered  # nothing stored before the kill was asked again
    assert f"resuming run {killed}: {12 - stored} of {heldout + 12} items left" in resumed.stdout
    label_line = next(x for x in resumed.stdout.splitlines() if x.startswith("label: 12 items"))
    # only the items without a stored result were coded: the replies the killed run got
    # but had not stored yet come from the cache, the rest is sent
    assert f"; {sent} requests sent, {answered - stored} from cache, " in label_line
    runs = "SELECT id, status, gate, kappa FROM llm_runs WHERE target = 'later' ORDER BY id"
    [(run_id, status, gate, kappa)] = query(project, runs)
    assert (run_id, status) == (killed, "done")
    assert query(project, items, (killed, "label"))[0][0] == 12

    # finished, the same command is the same run: nothing sent, nothing stored
    before = real_server.requests()
    again = annotate(project, real_server, *args)
    assert real_server.requests() == before and "resuming" not in again.stdout
    assert f"same as run {killed} (done, gate {gate})" in again.stdout
    assert query(project, runs) == [(killed, "done", gate, kappa)]


def invalid_heldout(db: Path) -> int:
    sql = "SELECT count(*) FROM llm_items WHERE run_id = 1 AND phase = 'validate' AND valid = 0"
    return query(db, sql)[0][0]


def test_prefix_is_served_from_the_servers_cache(project, real_server):
    """llama.cpp reuses the shared prefix (instructions + shots): the log says so."""
    assert real_server.prefix_hits() > 0
