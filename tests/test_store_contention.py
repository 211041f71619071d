"""Waiting for the write lock: a real second process holds it (BEGIN IMMEDIATE, sleeping).
A command says who is writing and waits; past ANNOTATE_LOCK_WAIT it stops with one line
("try again"), never a traceback; a paid LLM reply waits as long as it takes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from annotate.errors import StoreError
from annotate.store import Store
from llm_coder.calls import CallRecord, Reply, request_for
from tests.conftest import DEMO, REPO


@contextmanager
def write_lock_held(db: Path, seconds: float) -> Iterator[subprocess.Popen]:
    holder = subprocess.Popen(
        [sys.executable, "-m", "tests.lock_holder", str(db), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        holder.kill()
        holder.wait()


def annotate_env(wait: str | None = None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", str(REPO))}
    env.pop("ANNOTATE_LOCK_WAIT", None)
    if wait is not None:
        env["ANNOTATE_LOCK_WAIT"] = wait
    return env


def annotate(*args: str, wait: str | None = None) -> subprocess.CompletedProcess:
    env = annotate_env(wait)
    return subprocess.run(
        [sys.executable, "-m", "annotate", *args], capture_output=True, text=True, env=env
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    db = tmp_path / "p.db"
    Store(db).close()
    return db


def test_a_writer_waits_for_another_and_says_who_it_is(project: Path) -> None:
    with write_lock_held(project, 3) as holder:
        started = time.monotonic()
        r = annotate("import", str(DEMO), "--db", str(project))
        waited = time.monotonic() - started
    assert r.returncode == 0, r.stderr
    assert "343 new actions" in r.stdout
    assert waited >= 2
    first = r.stderr.splitlines()[0]
    assert first == (
        f"{project}: another annotate process is writing (PID {holder.pid}: "
        f"tests.lock_holder {project} 3); waiting up to 120 s…"
    )
    assert "continuing" in r.stderr and "Traceback" not in r.stderr


def test_agree_during_a_long_import_waits_to_store_its_run(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    assert annotate("import", str(DEMO), "--db", str(db)).returncode == 0
    labels = str(REPO / "data" / "demo_labels.csv")
    assert annotate("import-labels", labels, "--codebook", "traum", "--db", str(db)).returncode == 0
    # The lock is held until agree says it waits (however slow its start-up under load),
    # then released: agree must go on and store its run.
    with write_lock_held(db, 120) as holder:
        agree = subprocess.Popen(
            [sys.executable, "-m", "annotate", "agree", "--codebook", "traum", "--db", str(db)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=annotate_env(),
        )
        assert agree.stderr is not None
        lines = iter(agree.stderr.readline, "")
        waiting = next((line for line in lines if "is writing" in line), "")
    out, err = agree.communicate(timeout=300)
    assert f"another annotate process is writing (PID {holder.pid}:" in waiting, err
    assert agree.returncode == 0, err
    assert "run 1 stored" in out


def test_past_the_wait_limit_it_stops_in_one_line_with_nothing_written(project: Path) -> None:
    with write_lock_held(project, 60) as holder:
        started = time.monotonic()
        r = annotate("import", str(DEMO), "--db", str(project), wait="2")
        assert time.monotonic() - started < 30
        status = annotate("status", "--db", str(project), wait="2")  # reading never waits
    assert r.returncode == 1
    assert "Traceback" not in r.stderr and "database is locked" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines[0].endswith("waiting up to 2 s…")
    assert lines[1].startswith(
        f"error: {project}: another annotate process is still writing (PID {holder.pid}:"
    )
    assert "nothing was written. Try again when it has finished" in lines[1]
    assert lines[2].startswith("hint: ANNOTATE_LOCK_WAIT=SECONDS waits longer (now 2 s)")
    assert status.returncode == 0, status.stderr
    with Store(project) as store:
        assert store.actions.count_actions() == 0


def test_a_paid_llm_reply_waits_for_the_lock_however_long(project: Path, monkeypatch) -> None:
    monkeypatch.setenv("ANNOTATE_LOCK_WAIT", "1")
    request = request_for(
        model="m",
        endpoint_host="h:1",
        messages=[{"role": "system", "content": "c"}, {"role": "user", "content": "item"}],
        prefix_len=1,
        temperature=0.0,
        schema={"type": "object"},
    )
    told: list[str] = []
    with Store(project) as store:
        store.db.on_wait = told.append
        with write_lock_held(project, 3):
            with pytest.raises(StoreError, match="still writing"):  # an ordinary write gives up
                store.samples.create_sample("s", [], seed=1)
            store.llm.llm_cache(None).put(CallRecord(request, Reply("paid", 10, 2, 0.1, "none")))
        assert store.llm.llm_request(request.hash)["reply"] == "paid"
    assert told[-2].endswith("waiting until it is done…")
    assert told[-1].endswith("the other process has finished writing; continuing")
