"""`annotate split` and `annotate llm-label` end to end, against a real chat server.

The data is the real HCRC Map Task corpus (../shared/maptask) with its expert move labels
imported as coder `hcrc`. The test server answers each request with the gold move of the
target message a chosen share of the time, so the validation gate passes or fails on cue.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zlib
from collections import Counter
from pathlib import Path

import pytest

from annotate.codebook import Answer, find_codebook
from annotate.store import LabelWrite, Store
from llm_coder.phases import FLUSH_EVERY
from tests.chat_server import Fault
from tests.llm_fixtures import running_chat_server

KEY = "sk-annotate-test-KEY-never-stored-7f3a91"
MODEL = "test-model"
CODER = f"llm:{MODEL}"
DIALOGUES = ("q1ec1.txt", "q1ec2.txt")  # 220 moves
CODES = [o.code for o in find_codebook("hcrc_moves").codebook.questions[0].options]


@pytest.fixture
def chat_server():
    with running_chat_server() as server:
        yield server


@pytest.fixture
def llm_env(monkeypatch, chat_server):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.base_url)
    return chat_server


def one_line(text: str | None) -> str:
    return " ".join((text or "").split()) or "(no content)"


def gold_by_text(db_path: Path) -> dict[str, str]:
    """The most frequent expert move of each message text."""
    with Store(db_path) as s:
        rows = s.db.query(
            "SELECT a.content, l.value FROM labels l JOIN actions a ON a.id = l.action_id "
            "WHERE l.coder = 'hcrc'"
        )
    counts: dict[str, Counter] = {}
    for content, value in rows:
        counts.setdefault(one_line(content), Counter())[value] += 1
    return {text: c.most_common(1)[0][0] for text, c in counts.items()}


def agreeing(gold: dict[str, str], share: float):
    """A label function that gives the gold move for about ``share`` of the texts."""

    def label_for(text: str, body: dict) -> str:
        right = gold.get(text, "acknowledge")
        if zlib.crc32(text.encode()) % 100 < share * 100:
            return right
        return CODES[(CODES.index(right) + 1) % len(CODES)]

    return label_for


@pytest.fixture
def maptask(cli, shared, db_path):
    return maptask_split(cli, shared, db_path)


def maptask_split(cli, shared: Path, db_path: Path) -> dict[str, str]:
    """Two Map Task dialogues, their expert moves as coder `hcrc`, a split of 8 shots
    covering 8 moves; the gold move of each text."""
    folder = shared / "maptask" / "dialogues"
    files = [str(folder / f) for f in DIALOGUES]
    r = cli("import", *files, "--labels-as", "hcrc", "--codebook", "hcrc_moves")
    assert r.exit_code == 0, r.output
    assert cli("sample", "--n", "80", "--seed", "7", "--name", "main").exit_code == 0
    r = cli("split", "--codebook", "hcrc_moves", "--gold", "hcrc", "--sample", "main",
            "--strategy", "cover")  # fmt: skip
    assert r.exit_code == 0, r.output
    return gold_by_text(db_path)


def llm_label(cli, *args: str):
    return cli("llm-label", "--codebook", "hcrc_moves", "--model", MODEL, *args)


def db_rows(db_path: Path, sql: str, params=()) -> list:
    with Store(db_path) as s:
        return [tuple(r) for r in s.db.query(sql, params)]


# -- split ------------------------------------------------------------------------------


def test_split_is_stratified_reproducible_and_stored(cli, maptask, db_path):
    with Store(db_path) as s:
        first = s.llm.split_info("hcrc_moves")
        assert len(first.shots) == 8 and len(first.heldout) == 72
        assert first.gold_coder == "hcrc" and first.sample == "main"
        labels = [r["label"] for r in s.llm.split_items("hcrc_moves") if r["role"] == "shot"]
    assert len(set(labels)) == 8  # 8 shots, 8 different moves
    r = cli("split", "--codebook", "hcrc_moves", "--gold", "hcrc", "--sample", "main",
            "--strategy", "cover")  # fmt: skip
    assert r.exit_code == 1
    assert r.stderr.startswith("error: a split named 'hcrc_moves' already exists")
    r = cli("split", "--codebook", "hcrc_moves", "--gold", "hcrc", "--sample", "main", "--replace",
            "--strategy", "cover")  # fmt: skip
    assert r.exit_code == 0 and r.stdout.startswith("split 'hcrc_moves': 8 shots covering 8 of")
    with Store(db_path) as s:
        assert s.llm.split_info("hcrc_moves").shots == first.shots


def test_split_without_gold_says_what_to_run_first(cli, maptask):
    r = cli("split", "--codebook", "hcrc_moves", "--name", "x")
    assert r.exit_code == 1
    assert r.stderr.splitlines()[0] == (
        "error: no gold labels for codebook 'hcrc_moves' (coder 'gold')"
    )
    assert "annotate adjudicate" in r.stderr and "coders with labels: hcrc" in r.stderr
    r = cli("split", "--codebook", "hcrc_moves", "--gold", "hcrc", "--sample", "main",
            "--shots", "80", "--name", "x")  # fmt: skip
    assert r.exit_code == 1
    assert "only 80 gold items for codebook 'hcrc_moves' in sample 'main'" in r.stderr


@pytest.mark.parametrize("seed", ["-1", str(2**63)])
def test_split_refuses_a_seed_sqlite_cannot_store_in_one_line(cli, maptask, seed):
    r = cli("split", "--codebook", "hcrc_moves", "--gold", "hcrc", "--sample", "main",
            "--name", "x", "--seed", seed)  # fmt: skip
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert r.stderr.splitlines() == [
        f"error: --seed must be a whole number from 0 to {2**63 - 1}, not {seed}"
    ]


# -- configuration and dry run ----------------------------------------------------------


def test_missing_key_fails_before_any_work(cli, maptask, db_path, chat_server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.base_url)
    r = llm_label(cli)
    assert r.exit_code == 1
    assert r.stderr.splitlines()[0] == "error: the LLM coder needs an API key (OPENAI_API_KEY)"
    assert "export OPENAI_API_KEY=" in r.stderr
    assert chat_server.state.requests == 0
    assert db_rows(db_path, "SELECT count(*) FROM llm_runs") == [(0,)]


def test_dry_run_prints_messages_and_estimate_without_network(
    cli, maptask, chat_server, monkeypatch
):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    r = llm_label(cli, "--dry-run", "--price-in", "0.15", "--price-out", "0.6")
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "Messages for item" in out and "Action to code:" in out
    assert '"enum": ["instruct", "explain"' in out
    assert "Estimate: 72 held-out + 140 to label = 212 requests" in out
    assert "Nothing was sent." in out and "$" in out
    assert "Context (the 8 actions before it, oldest first):" in out
    r = llm_label(cli, "--dry-run", "--context", "2")
    assert "Context (the 2 actions before it, oldest first):" in r.stdout
    assert "Context (the 8 actions" not in r.stdout
    assert chat_server.state.requests == 0


def test_dry_run_counts_cached_requests_at_the_endpoint_of_the_environment(cli, maptask, llm_env):
    assert llm_label(cli, "--validate-only").exit_code == 0
    r = llm_label(cli, "--dry-run")  # the endpoint only in OPENAI_BASE_URL, as usually set
    assert r.exit_code == 0, r.output
    assert "72 already cached" in r.stdout and llm_env.state.requests == 72


# -- validate, gate, label the rest -----------------------------------------------------


def test_validate_only_reports_like_agree_and_stores_labels(cli, maptask, llm_env, db_path):
    llm_env.state.label_for = agreeing(maptask, 0.9)
    r = llm_label(cli, "--validate-only")
    assert r.exit_code == 0, r.output
    out = r.stdout
    for text in (
        "Validation on 72 held-out items: LLM 'llm:test-model' vs gold 'hcrc'",
        "Fleiss' kappa, LLM + gold",
        "Cohen's kappa, LLM vs gold",
        "accuracy",
        "Fleiss' kappa, humans (hcrc)",
        "Fleiss' kappa, humans + LLM",
        "Per label (move)",
        "Confusion (move)",
        "--validate-only: the rest is not labelled.",
    ):
        assert text in out
    assert llm_env.state.requests == 72
    run = db_rows(db_path, "SELECT status, gate, kappa, forced, coder FROM llm_runs")
    assert run[0][:2] == ("validated", "pass") and run[0][2] > 0.6 and run[0][4] == CODER
    labels = db_rows(
        db_path, "SELECT count(*), min(source), max(source) FROM labels WHERE coder = ?", (CODER,)
    )
    assert labels == [(72, "llm", "llm")]
    with Store(db_path) as s:
        row = s.labels.label_rows("hcrc_moves", coders=[CODER])[0]
        item = s.llm.llm_items(1)[0]
        request = s.llm.llm_request(item["request_hashes"][0])
    for key in ("run_id", "request_hash", "confidence", "prompt_hash", "codebook_hash", "model"):
        assert key in row["meta"]
    assert row["meta"]["endpoint"] == llm_env.base_url.split("/")[2]
    assert item["raw_replies"] and item["tokens_in"] > 0 and item["valid"] == 1
    assert request["temperature"] == 0 and request["messages"][-1]["role"] == "user"
    report = json.loads(db_rows(db_path, "SELECT report FROM llm_runs")[0][0])
    move = report["questions"][0]
    assert move["n_items"] == 72 and move["fleiss_ci"][0] < move["fleiss"] < move["fleiss_ci"][1]
    assert 0.8 < move["accuracy"] < 1.0


def test_a_later_run_with_the_same_answers_leaves_its_provenance(cli, maptask, llm_env, db_path):
    llm_env.state.label_for = agreeing(maptask, 0.9)
    assert llm_label(cli, "--validate-only").exit_code == 0
    r = llm_label(cli, "--validate-only", "--context", "2")  # another prompt, same answers
    assert r.exit_code == 0, r.output
    assert llm_env.state.requests == 2 * 72
    with Store(db_path) as s:
        second = s.llm.llm_run(2)
        metas = [row["meta"] for row in s.labels.label_rows("hcrc_moves", coders=[CODER])]
    assert len(metas) == 72
    assert {(m["run_id"], m["prompt_hash"]) for m in metas} == {(2, second["prompt_hash"])}


def test_gate_fails_below_min_kappa_then_force_is_recorded(cli, maptask, llm_env, db_path):
    llm_env.state.label_for = agreeing(maptask, 0.3)
    r = llm_label(cli)
    assert r.exit_code == 1
    assert "is below --min-kappa 0.6: the rest is not labelled" in r.stderr
    assert "pass --force" in r.stderr
    assert db_rows(db_path, "SELECT status, gate FROM llm_runs") == [("gate_failed", "fail")]
    assert db_rows(db_path, "SELECT count(*) FROM llm_items WHERE phase = 'label'") == [(0,)]

    r = llm_label(cli, "--force")
    assert r.exit_code == 0, r.output
    assert "--force: labelling the rest although kappa" in r.stdout
    assert llm_env.state.requests == 72 + 140  # validation answers came from the cache
    assert db_rows(db_path, "SELECT status, gate, forced FROM llm_runs WHERE id = 2") == [
        ("done", "forced", 1)
    ]
    assert db_rows(db_path, "SELECT count(*) FROM labels WHERE coder = ?", (CODER,)) == [(212,)]


def test_full_flow_then_a_rerun_sends_nothing(cli, maptask, llm_env, db_path):
    llm_env.state.label_for = agreeing(maptask, 0.9)
    r = llm_label(cli, "--price-in", "0.15", "--price-out", "0.6")
    assert r.exit_code == 0, r.output
    assert "label: 140 items (140 valid, 0 invalid, 0 failed); 140 requests sent" in r.stdout
    assert "Done: run 1 (done), llm:test-model labelled 212 items" in r.stdout
    assert "cost $" in r.stdout
    assert llm_env.state.requests == 212
    with Store(db_path) as s:
        split_ids = set(s.llm.split_info("hcrc_moves").shots) | set(
            s.llm.split_info("hcrc_moves").heldout
        )
        labelled = {r["action_id"] for r in s.labels.label_rows("hcrc_moves", coders=[CODER])}
        assert len(labelled) == 212 and not labelled & set(s.llm.split_info("hcrc_moves").shots)
        assert len(labelled - split_ids) == 140
        run = s.llm.llm_run(1)
        assert run["shot_ids"] == list(s.llm.split_info("hcrc_moves").shots)
        assert run["cost"] > 0 and run["tokens_in"] > run["tokens_out"] > 0

    r = llm_label(cli)
    assert r.exit_code == 0, r.output
    assert llm_env.state.requests == 212  # zero new requests
    assert "same as run 1 (done, gate pass): the same command" in r.stdout
    assert "nothing sent, nothing new stored" in r.stdout
    assert "Fleiss' kappa, LLM + gold" in r.stdout  # its validation, shown again

    status = json.loads(cli("status", "--format", "json").stdout)
    assert [run["id"] for run in status["llm_runs"]] == [1]  # an identical re-run adds none
    assert status["llm_coders"]["hcrc_moves"] == [CODER]
    assert status["next"] == f"annotate report --codebook hcrc_moves --db {db_path}"


def test_target_sample_labels_only_that_sample(cli, maptask, llm_env, db_path):
    llm_env.state.label_for = agreeing(maptask, 0.9)
    assert cli("sample", "--n", "30", "--seed", "1", "--name", "batch").exit_code == 0
    with Store(db_path) as s:
        batch = set(s.samples.sample_ids("batch"))
        info = s.llm.split_info("hcrc_moves")
    expected = batch - set(info.shots) - set(info.heldout)
    r = llm_label(cli, "--target", "batch")
    assert r.exit_code == 0, r.output
    rows = db_rows(db_path, "SELECT action_id FROM llm_items WHERE phase = 'label'")
    assert {a for (a,) in rows} == expected
    sent = llm_env.state.requests
    r = llm_label(cli, "--target", "nosuch", "--context", "3")  # a new prompt: nothing cached
    assert r.exit_code == 1 and "no sample named 'nosuch'" in r.stderr
    assert llm_env.state.requests == sent  # refused before any request


def test_kill_and_resume_never_pays_twice(cli, maptask, llm_env, db_path):
    llm_env.state.label_for = agreeing(maptask, 0.9)
    llm_env.state.latency = 0.03
    env = {**os.environ, "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": llm_env.base_url}
    argv = [sys.executable, "-m", "annotate", "llm-label", "--codebook", "hcrc_moves",
            "--model", MODEL, "--concurrency", "2", "--db", str(db_path)]  # fmt: skip
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while llm_env.state.requests < 150 and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 150 <= llm_env.state.requests < 212, "the run was not killed mid-way"
    paid = {
        json.loads(tail)[-1]["content"]
        for (tail,) in db_rows(db_path, "SELECT tail FROM llm_requests")
    }
    assert len(paid) >= llm_env.state.requests - 2  # at most the 2 in flight were lost
    [(status, sent, tokens_in)] = db_rows(db_path, "SELECT status, sent, tokens_in FROM llm_runs")
    assert status == "running"  # it had no chance to say otherwise, but it recorded its spend:
    assert len(paid) - FLUSH_EVERY - 2 <= sent <= len(paid) and tokens_in > 0
    llm_env.state.reset_counts()
    stored = db_rows(db_path, "SELECT action_id, created_at FROM llm_items ORDER BY action_id")

    r = llm_label(cli)  # the same command: the same run goes on
    assert r.exit_code == 0, r.output
    assert f"resuming run 1: {212 - len(stored)} of 212 items left" in r.output
    assert [s for (s,) in db_rows(db_path, "SELECT status FROM llm_runs ORDER BY id")] == ["done"]
    resent = [b["messages"][-1]["content"] for b in llm_env.state.bodies]
    assert not set(resent) & paid
    assert len(paid) + len(resent) == 212
    assert db_rows(db_path, "SELECT count(*) FROM labels WHERE coder = ?", (CODER,)) == [(212,)]
    items = "SELECT action_id, created_at FROM llm_items WHERE action_id IN ({})"
    kept = db_rows(db_path, items.format(",".join("?" * len(stored))), [a for a, _ in stored])
    assert sorted(kept) == stored  # what the killed run stored was not stored again
    assert db_rows(db_path, "SELECT count(*) FROM llm_items WHERE run_id = 1") == [(212,)]

    # the same command again adds nothing: it is the same as the finished run
    llm_env.state.reset_counts()
    same = llm_label(cli)
    assert "same as run 1 (done, gate pass)" in same.stdout and llm_env.state.requests == 0
    # run with another gate, it is a new run answered from the cache: its report is the
    # report of a run never interrupted, and it equals the resumed run's
    llm_env.state.reset_counts()
    again = llm_label(cli, "--min-kappa", "0.5")
    assert again.exit_code == 0, again.output
    assert "resuming" not in again.output and llm_env.state.requests == 0
    report = "SELECT status, gate, kappa, report FROM llm_runs WHERE id = ?"
    assert db_rows(db_path, report, (2,)) == db_rows(db_path, report, (1,))
    assert db_rows(db_path, "SELECT min_kappa FROM llm_runs ORDER BY id") == [(0.6,), (0.5,)]
    counts = "SELECT phase, count(*), sum(valid) FROM llm_items WHERE run_id = ? GROUP BY phase"
    assert db_rows(db_path, counts, (2,)) == db_rows(db_path, counts, (1,))
    phase_lines = [
        x.split(";")[0] for x in r.output.splitlines() if x.startswith(("validate:", "label:"))
    ]
    assert phase_lines == [
        x.split(";")[0] for x in again.output.splitlines() if x.startswith(("validate:", "label:"))
    ]
    assert len(phase_lines) == 2


def test_a_different_command_never_resumes_an_unfinished_run(cli, maptask, llm_env, db_path):
    llm_env.state.label_for = agreeing(maptask, 0.9)
    with Store(db_path) as s:  # a run of this coder killed mid-way (its row still 'running')
        s.db.conn.execute(
            "INSERT INTO llm_runs (started_at, coder, model, endpoint_host, codebook, "
            "codebook_hash, split, prompt_hash, shot_ids, temperature, votes, context, target) "
            "VALUES ('2026-01-01', ?, ?, 'x', 'hcrc_moves', 'h', 'hcrc_moves', 'p', '[]', 0, "
            "1, 3, 'all')",
            (CODER, MODEL),
        )
        s.db.conn.commit()
    r = llm_label(cli)
    assert r.exit_code == 0, r.output
    assert "resuming" not in r.output
    assert db_rows(db_path, "SELECT id, status FROM llm_runs ORDER BY id") == [
        (1, "interrupted"),
        (2, "done"),
    ]


# -- faults -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("setup", "args", "expect"),
    [
        (lambda s: s.faults.append(Fault("429", times=3, retry_after="0.2")), [], "3 retries"),
        (lambda s: s.faults.append(Fault("500", times=2)), [], "2 retries"),
        (
            lambda s: (s.faults.append(Fault("hang", times=1)), setattr(s, "hang_s", 3)),
            ["--timeout", "0.5"],
            "1 retries (1 requests timed out after --timeout 0.5 s: the server answered more "
            "slowly than that; see --concurrency)",
        ),
    ],
    ids=["429-retry-after", "500", "timeout"],
)
def test_transient_faults_are_retried(cli, maptask, llm_env, db_path, setup, args, expect):
    llm_env.state.label_for = agreeing(maptask, 0.9)
    setup(llm_env.state)
    r = llm_label(cli, "--validate-only", *args)
    assert r.exit_code == 0, r.output
    line = "validate: 72 items (72 valid, 0 invalid, 0 failed); 72 requests sent, 0 from cache"
    assert f"{line}, {expect}" in r.stdout
    assert db_rows(db_path, "SELECT count(*) FROM llm_items WHERE valid = 1") == [(72,)]


@pytest.mark.parametrize(
    ("accept", "mode", "refused"),
    [
        ("json_object", "json_object", {400: 2}),
        ("none", "none", {400: 3}),
        ("llama_cpp_python", "json_object_schema", {500: 1}),
    ],
)
def test_response_format_fallback_is_detected_and_remembered(
    cli, maptask, llm_env, db_path, accept, mode, refused
):
    llm_env.state.label_for = agreeing(maptask, 0.9)
    llm_env.state.accept = accept
    r = llm_label(cli, "--validate-only")
    assert r.exit_code == 0, r.output
    # 404: the concurrency probe's GET /props and /slots (the test server has neither)
    assert {k: v for k, v in llm_env.state.statuses.items() if k not in (200, 404)} == refused
    assert "72 requests sent, 0 from cache, 0 retries;" in r.stdout
    assert f"; response_format {mode}\n  response_format json_schema -> " in r.stdout
    assert db_rows(db_path, "SELECT response_format FROM llm_runs") == [(mode,)]
    formats = db_rows(db_path, "SELECT DISTINCT response_format FROM llm_requests")
    assert formats == [(mode,)]
    host = llm_env.base_url.split("/")[2]
    stored = db_rows(
        db_path, "SELECT endpoint_host, model, response_format FROM llm_endpoint_formats"
    )
    assert stored == [(host, MODEL, mode)]
    # the next run (new requests: another context) starts in the mode that worked
    llm_env.state.reset_counts()
    r = llm_label(cli, "--validate-only", "--context", "3")
    assert r.exit_code == 0, r.output
    assert f"response_format {mode}\n" in r.stdout and " -> " not in r.stdout
    assert llm_env.state.statuses == {200: 72, 404: 2}  # 404: the concurrency probe
    status = cli("status", "--format", "csv")
    assert f",{mode}," in status.stdout


def test_a_forced_response_format_is_used_or_refused_in_one_line(cli, maptask, llm_env, db_path):
    llm_env.state.label_for = agreeing(maptask, 0.9)
    llm_env.state.accept = "llama_cpp_python"
    r = llm_label(cli, "--validate-only", "--response-format", "json_schema", "--concurrency", "1")
    assert r.exit_code == 1 and llm_env.state.requests == 1
    assert (
        "\nerror: the endpoint refused --response-format json_schema (HTTP 500: 1 validation "
        "error: {'type': 'literal_error', 'loc': ('body', 'response_format', 'type')"
    ) in r.stderr
    assert db_rows(db_path, "SELECT count(*) FROM llm_endpoint_formats") == [(0,)]
    assert db_rows(db_path, "SELECT count(*) FROM llm_items") == [(0,)]
    llm_env.state.reset_counts()
    r = llm_label(cli, "--validate-only", "--response-format", "none")
    assert r.exit_code == 0, r.output
    assert "response_format none (forced)" in r.stdout
    assert all("response_format" not in b for b in llm_env.state.bodies)
    r = llm_label(cli, "--validate-only", "--response-format", "xml")
    assert r.exit_code == 1
    assert r.stderr.startswith("error: --response-format xml: not a mode\nhint: choose one of")


@pytest.mark.parametrize(
    ("fault", "error"),
    [("malformed", "the reply is not valid JSON"), ("bad_label", "question move: unknown code")],
)
def test_unusable_reply_is_retried_once_then_stored_invalid(
    cli, maptask, llm_env, db_path, fault, error
):
    llm_env.state.label_for = agreeing(maptask, 0.9)
    with Store(db_path) as s:
        heldout = s.actions.actions_by_ids(list(s.llm.split_info("hcrc_moves").heldout))
    texts = Counter(one_line(a.content) for a in heldout)
    target = next(a for a in heldout if texts[one_line(a.content)] == 1)
    llm_env.state.faults.append(Fault(fault, times=2, match=one_line(target.content)))
    r = llm_label(cli, "--validate-only", "--min-kappa", "0", "--concurrency", "1")
    assert r.exit_code == 0, r.output
    assert "validate: 72 items (71 valid, 1 invalid, 0 failed); 73 requests sent" in r.stdout
    assert "replies stayed invalid after a retry; counted as '(invalid)'" in r.stdout
    rows = db_rows(
        db_path,
        "SELECT action_id, valid, error, raw_replies FROM llm_items WHERE valid = 0",
    )
    assert [(a, v) for a, v, _, _ in rows] == [(target.id, 0)]
    err, raw = rows[0][2], json.loads(rows[0][3])
    assert err.startswith(error) and len(raw) == 2
    # the export of LLM replies keeps the invalid one, with its raw text and the provenance
    out = cli("export", "--what", "llm", "--format", "jsonl")
    assert out.exit_code == 0, out.output
    exported = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(exported) == 72 and {e["coder"] for e in exported} == {CODER}
    [bad] = [e for e in exported if not e["valid"]]
    assert bad["action_id"] == target.id and bad["raw_replies"] == raw  # JSON, not a string
    assert bad["error"] == err and bad["content"] == target.content
    with Store(db_path) as s:
        info = s.llm.split_info("hcrc_moves")
    assert bad["shot_ids"] == list(info.shots) and bad["temperature"] == 0
    assert all(e["prompt_hash"] and e["codebook_hash"] and e["model"] == MODEL for e in exported)
    assert not db_rows(
        db_path, "SELECT 1 FROM labels WHERE coder = ? AND action_id = ?", (CODER, target.id)
    )


def test_bad_key_stops_the_run_with_a_hint(cli, maptask, llm_env, db_path):
    llm_env.state.faults.append(Fault("401", times=1))
    r = llm_label(cli, "--concurrency", "1")
    assert r.exit_code == 1
    assert "error: the endpoint refused the request (HTTP 401" in r.stderr
    assert "hint: check OPENAI_API_KEY for this endpoint" in r.stderr
    assert db_rows(db_path, "SELECT status FROM llm_runs") == [("failed",)]


def test_the_key_is_never_stored_or_printed(cli, maptask, llm_env, db_path):
    llm_env.state.label_for = agreeing(maptask, 0.9)
    llm_env.state.faults += [Fault("401", times=1), Fault("malformed", times=2)]
    outputs = [llm_label(cli, "--concurrency", "1"), llm_label(cli), llm_label(cli, "--dry-run")]
    assert outputs[0].exit_code == 1 and outputs[1].exit_code == 0
    assert all(h == f"Bearer {KEY}" for h in llm_env.state.auth_headers)
    for r in outputs:
        assert KEY not in r.stdout and KEY not in r.stderr
    for path in db_path.parent.glob(db_path.name + "*"):
        assert KEY.encode() not in path.read_bytes(), path.name


# -- votes and multi-question codebooks -------------------------------------------------


def test_votes_give_confidence_and_an_uncertain_sample(cli, maptask, llm_env, db_path):
    right = agreeing(maptask, 1.0)

    def label_for(text: str, body: dict) -> str:
        # vote 2 disagrees on a third of the texts
        if body.get("seed") == 2 and zlib.crc32(text.encode()) % 3 == 0:
            return CODES[(CODES.index(right(text, body)) + 1) % len(CODES)]
        return right(text, body)

    llm_env.state.label_for = label_for
    r = llm_label(
        cli,
        "--votes",
        "3",
        "--temperature",
        "0.7",
        "--uncertain-sample",
        "unsure",
        "--below",
        "0.8",
    )
    assert r.exit_code == 0, r.output
    assert llm_env.state.requests == 3 * 212
    with Store(db_path) as s:
        rows = s.labels.label_rows("hcrc_moves", coders=[CODER])
        unsure = set(s.samples.sample_ids("unsure"))
        samples = {x["name"]: x for x in s.samples.samples()}
    confidence = {r["action_id"]: r["meta"]["confidence"] for r in rows}
    assert {round(c, 4) for c in confidence.values()} == {1.0, round(2 / 3, 4)}
    low = {a for a, c in confidence.items() if c < 0.8}
    labelled_rest = {
        a for (a,) in db_rows(db_path, "SELECT action_id FROM llm_items WHERE phase = 'label'")
    }
    assert unsure == low & labelled_rest and unsure
    assert samples["unsure"]["origin"].startswith("llm-uncertain")
    assert f"sample 'unsure': {len(unsure)} items with confidence below 0.8" in r.stdout
    again = llm_label(cli, "--votes", "3", "--temperature", "0.7",
                      "--uncertain-sample", "unsure", "--below", "0.8")  # fmt: skip
    assert again.exit_code == 0, again.output
    assert llm_env.state.requests == 3 * 212  # the same command again: all from the cache
    with Store(db_path) as s:
        assert set(s.samples.sample_ids("unsure")) == unsure
    r = llm_label(cli, "--votes", "3", "--temperature", "0.7",
                  "--uncertain-sample", "main", "--below", "0.8")  # fmt: skip
    assert r.exit_code == 1 and "not by an LLM run" in r.stderr  # a human sample is kept


def test_mental_model_is_answered_in_one_json_object(
    cli, shared, db_path, chat_server, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.base_url)
    path = shared / "maptask" / "dialogues" / "q1ec1.txt"
    assert cli("import", str(path)).exit_code == 0
    loaded = find_codebook("mental_model")
    cb = loaded.codebook
    with Store(db_path) as s:
        ids = [r["id"] for r in s.actions.action_rows()][:30]
        writes = []
        for k, aid in enumerate(ids):
            same = k % 3 != 0
            answers = {
                "Q1": Answer(["t1", "t2", "t3"][k % 3]),
                "Q2": Answer("p1" if same else "p4"),
                "Q3": Answer("r1"),
                "Q4": Answer("yes") if same else Answer("no", ("n2",)),
            }
            writes += [LabelWrite(aid, q, "gold", a, "test") for q, a in answers.items()]
        s.codebooks.register_codebook(loaded)
        s.labels.save_answers(cb, writes)
    r = cli("split", "--codebook", "mental_model", "--shots", "4", "--strategy", "cover")
    assert r.exit_code == 0

    def answer_for(text: str, body: dict) -> dict:
        return {
            "Q1": {"code": "t3", "other_text": None},
            "Q2": {"code": "other", "other_text": "hard to tell"},
            "Q3": {"code": "r1", "other_text": None},
            "Q4": {"answer": "no", "reasons": ["n2", "n4"], "other_text": None},
        }

    chat_server.state.answer_for = answer_for
    r = cli("llm-label", "--codebook", "mental_model", "--model", MODEL, "--validate-only",
            "--min-kappa", "-1")  # fmt: skip
    assert r.exit_code == 0, r.output
    assert chat_server.state.requests == 26  # one request per item, every question in it
    schema = chat_server.state.bodies[0]["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["Q1", "Q2", "Q3", "Q4"]
    for q in ("Question Q1", "Question Q2", "Question Q3", "Question Q4"):
        assert q in r.stdout
    with Store(db_path) as s:
        got = s.llm.coder_answers(cb, CODER)
    assert len(got) == 26
    first = next(iter(got.values()))
    assert first == {
        "Q1": Answer("t3"),
        "Q2": Answer("other", (), "hard to tell"),
        "Q3": Answer("r1"),
        "Q4": Answer("no", ("n2", "n4")),
    }


def test_export_has_each_item_once_per_run_that_labelled_it(cli, maptask, llm_env, db_path):
    llm_env.state.label_for = agreeing(maptask, 0.9)
    # the 2nd is the same as run 1 (nothing stored); the 3rd takes the held-out from cache
    for args in (["--validate-only"], ["--validate-only"], []):
        r = llm_label(cli, *args)
        assert r.exit_code == 0, r.output
    stored = db_rows(
        db_path, "SELECT run_id, phase, cached, count(*) FROM llm_items GROUP BY 1, 2, 3"
    )
    assert stored == [(1, "validate", 0, 72), (2, "label", 0, 140),
                      (2, "validate", 1, 72)]  # fmt: skip
    out = cli("export", "--what", "llm", "--format", "jsonl")
    assert out.exit_code == 0, out.output
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(rows) == 212 == len({r["action_id"] for r in rows})
    assert Counter((r["run_id"], r["phase"], r["cached"]) for r in rows) == {
        (1, "validate", 0): 72, (2, "label", 0): 140}  # fmt: skip
    assert db_rows(db_path, "SELECT id FROM llm_runs ORDER BY id") == [(1,), (2,)]


def test_validate_only_by_role_and_condition(cli, maptask, llm_env, db_path):
    """Table 3's cells: accuracy and kappa per role x condition, with n, recomputed here."""
    import agreement

    llm_env.state.label_for = agreeing(maptask, 0.7)
    r = llm_label(cli, "--validate-only", "--by", "role,condition")
    assert r.exit_code == 0, r.output
    assert "Question move by role x condition (LLM vs gold; no figure below 10 items)" in r.stdout
    report = json.loads(db_rows(db_path, "SELECT report FROM llm_runs")[0][0])
    assert report["by"] == ["role", "condition"]
    with Store(db_path) as s:
        heldout = {
            r["action_id"] for r in s.llm.split_items("hcrc_moves") if r["role"] == "heldout"
        }
        llm = {
            r["action_id"]: r["value"] for r in s.labels.label_rows("hcrc_moves", coders=[CODER])
        }
        gold = {
            r["action_id"]: r["value"] for r in s.labels.label_rows("hcrc_moves", coders=["hcrc"])
        }
        facts = {r[0]: (r[3], r[2]) for r in s.analysis.action_facts(heldout)}
    assert len(report["cells"]) >= 2
    assert sum(c["n_items"] for c in report["cells"]) == len(heldout) == 72
    for c in report["cells"]:
        ids = [i for i in heldout if facts[i] == tuple(c["group"])]
        assert c["n_items"] == len(ids)
        if len(ids) < 10:
            assert c["accuracy"] is None and c["fleiss"] is None and c["note"].startswith("n < 10")
            continue
        assert c["accuracy"] == pytest.approx(sum(llm[i] == gold[i] for i in ids) / len(ids))
        pair = {"gold": [gold[i] for i in ids], "llm": [llm[i] for i in ids]}
        import pandas as pd

        kappa = agreement.fleiss_kappa(pd.DataFrame(pair, index=ids)).kappa
        assert c["fleiss"] == pytest.approx(kappa)
    r = llm_label(cli, "--validate-only", "--by", "role,mood")
    assert r.exit_code == 1 and "--by: unknown column 'mood'" in r.stderr


# -- concurrency: what the server says, else step down while it answers one at a time -----------


def test_concurrency_steps_down_on_a_server_that_answers_one_at_a_time(cli, maptask, llm_env):
    llm_env.state.label_for = agreeing(maptask, 0.9)
    llm_env.state.serial, llm_env.state.latency = True, 0.15  # no /props: llama-cpp-python
    r = llm_label(cli, "--validate-only")
    assert r.exit_code == 0, r.output
    assert "\n  concurrency 8 -> 4 (the server answered one request at a time: median " in (
        r.stdout
    )
    assert "; concurrency 1; " in r.stdout  # 8 -> 4 -> 2 -> 1


def test_concurrency_is_the_servers_slots_where_it_says(cli, maptask, llm_env):
    llm_env.state.label_for = agreeing(maptask, 0.9)
    llm_env.state.slots = 3  # llama.cpp's llama-server: GET /props -> total_slots
    r = llm_label(cli, "--validate-only")
    assert r.exit_code == 0, r.output
    assert "; concurrency 3; " in r.stdout and "concurrency 3 ->" not in r.stdout


def test_concurrency_given_is_kept(cli, maptask, llm_env):
    llm_env.state.label_for = agreeing(maptask, 0.9)
    llm_env.state.serial, llm_env.state.latency = True, 0.05
    r = llm_label(cli, "--validate-only", "--concurrency", "4")
    assert r.exit_code == 0, r.output
    assert "; concurrency 4; " in r.stdout and "concurrency 4 ->" not in r.stdout
