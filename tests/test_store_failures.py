"""Storage failures name their real cause in one line: a full disk (a small tmpfs), a
read-only file system (the tmpfs remounted read-only), a read-only file (the file as seen
by an unprivileged user). Reading still works where nothing needs writing.

The disks are mounted in a private mount namespace (``unshare -rm``), so nothing is left
mounted; where the machine does not allow that the tests are skipped with the reason."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from annotate.codebook import find_codebook
from annotate.io.importing import import_files
from annotate.io.label_import import import_labels
from annotate.store import Store
from annotate.store.migrations import MIGRATIONS
from tests.conftest import DEMO, REPO

SCHEMA = max(n for n, _ in MIGRATIONS)

UNSHARE = shutil.which("unshare")


def run_sh(script: str, *, flags: str, tmp: Path) -> subprocess.CompletedProcess:
    """``script`` under ``unshare FLAGS`` with $PY (this Python) and $MNT (a folder)."""
    if UNSHARE is None:
        pytest.skip("unshare(1) is not installed: cannot make a small disk")
    mnt = tmp / "mnt"
    mnt.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "PY": sys.executable,
        "MNT": str(mnt),
        "PYTHONPATH": os.environ.get("PYTHONPATH", str(REPO)),
    }
    env.pop("ANNOTATE_DB", None)
    probe = subprocess.run(
        [UNSHARE, *flags.split(), "sh", "-c", "true"], capture_output=True, text=True
    )
    if probe.returncode:
        pytest.skip(f"unshare {flags} is not allowed here: {probe.stderr.strip()}")
    return subprocess.run(
        [UNSHARE, *flags.split(), "sh", "-c", "set -u\n" + script],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp,
    )


def mount_tmpfs(size: str) -> str:
    return f'mount -t tmpfs -o size={size} tmpfs "$MNT" || {{ echo "no tmpfs" >&2; exit 99; }}\n'


def outputs(r: subprocess.CompletedProcess) -> list[str]:
    if r.returncode == 99 and "no tmpfs" in r.stderr:
        pytest.skip(f"cannot mount a tmpfs in a user namespace here: {r.stderr.strip()}")
    return r.stdout.split("=====\n")


def big_log(tmp: Path, n: int = 20_000) -> Path:
    src = tmp / "big.jsonl"
    with src.open("w") as f:
        for k in range(n):
            f.write(json.dumps({"session": f"s{k % 5}", "seq": k, "content": "word " * 40}) + "\n")
    return src


def test_disk_full_during_import_says_so_and_keeps_what_was_stored(tmp_path: Path) -> None:
    src = big_log(tmp_path)
    r = run_sh(
        mount_tmpfs("2m")
        + f"""cd "$MNT"
$PY -m annotate import {DEMO} --db p.db >/dev/null || exit 1
$PY -m annotate import {src} --format jsonl --db p.db 2>&1; echo "rc=$?"
echo =====
$PY -m annotate status --db p.db 2>&1 | head -1; echo "rc=$?"
echo =====
dd if=/dev/zero of=fill bs=4k 2>/dev/null; $PY -m annotate status --db p.db 2>&1 | head -1
""",
        flags="-rm",
        tmp=tmp_path,
    )
    imported, status, full_status = outputs(r)
    assert "rc=1" in imported, r.stderr
    assert "cannot rollback" not in imported and "Traceback" not in imported
    first = imported.splitlines()[0]
    assert first.startswith("error: p.db: cannot write: the disk is full (")
    assert "hint: free some space, then run the command again" in imported
    whole = f"p.db: 343 actions (schema {SCHEMA})"
    assert status.splitlines()[0] == whole  # the demo, whole
    assert full_status.splitlines()[0] == whole  # reading works


def test_read_only_file_system_reads_and_refuses_writes_in_one_line(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    with Store(db) as store:
        import_files(store, sorted(DEMO.glob("*.jsonl")))
        import_labels(store, REPO / "data" / "demo_labels.csv", find_codebook("traum"))
        store.samples.create_sample("s", [], seed=1)
    r = run_sh(
        mount_tmpfs("2m")
        + f"""cp {db} "$MNT"/ && mount -o remount,ro "$MNT" && cd "$MNT" || exit 1
$PY -m annotate samples --db p.db 2>&1; echo "rc=$?"
echo =====
$PY -m annotate import {DEMO} --db p.db 2>&1; echo "rc=$?"
echo =====
$PY -m annotate sample --n 1 --seed 1 --name t --db p.db 2>&1; echo "rc=$?"
echo =====
$PY -m annotate agree --codebook traum --db p.db 2>&1; echo "rc=$?"
echo =====
$PY -m annotate export --what labels --format jsonl --db p.db 2>&1 | wc -l
""",
        flags="-rm",
        tmp=tmp_path,
    )
    listed, refused, sampled, agreed, exported = outputs(r)
    assert exported.strip() == "1029"  # readers of a file that cannot be written open it as it is
    assert "rc=0" in agreed and "Fleiss" in agreed, agreed
    said = " ".join(agreed.split())
    mounted = f"the file system of {tmp_path / 'mnt'} is mounted read-only"
    assert f"run not stored (p.db: {mounted})" in said
    assert "1029 labels" in said
    assert sampled.splitlines()[0] == (
        f"error: p.db: cannot write: the file system of {tmp_path / 'mnt'} is mounted read-only"
    )
    assert "rc=0" in listed and "not an annotate database" not in listed, listed
    first = refused.splitlines()[0]  # import opens to write: "cannot open"
    assert first.startswith("error: p.db: cannot open: ")
    assert first.endswith(f"the file system of {tmp_path / 'mnt'} is mounted read-only")
    assert "rc=1" in refused and "Traceback" not in refused


def test_read_only_file_refuses_writes_in_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)
    db = folder / "p.db"
    Store(db).close()
    db.chmod(0o444)
    # as root the permission bits do not bind: the unprivileged user of a new namespace
    r = run_sh(
        f"""cd {folder}
id -u
$PY -m annotate import {DEMO} --db p.db 2>&1; echo "rc=$?"
""",
        flags="-U",
        tmp=tmp_path,
    )
    lines = r.stdout.splitlines()
    if lines and lines[0] == "0":
        pytest.skip("still root inside the namespace: a read-only file cannot be made")
    assert lines[1] == "error: p.db: cannot write: the file is read-only (its permissions: 0o444)"
    assert "rc=1" in r.stdout and "Traceback" not in r.stdout


@pytest.mark.parametrize("read_only", ["file", "folder"])
def test_agree_on_a_read_only_file_prints_and_stores_nothing(tmp_path: Path, read_only) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    db = folder / "p.db"
    with Store(db) as store:
        import_files(store, sorted(DEMO.glob("*.jsonl")))
        import_labels(store, REPO / "data" / "demo_labels.csv", find_codebook("traum"))
    folder.chmod(0o555 if read_only == "folder" else 0o777)
    db.chmod(0o444 if read_only == "file" else 0o644)
    try:
        r = run_sh(  # as an unprivileged user, for whom the permission bits bind
            f"""cd {folder}
id -u
$PY -m annotate agree --codebook traum --db p.db 2>&1; echo "rc=$?"
""",
            flags="-U",
            tmp=tmp_path,
        )
    finally:
        folder.chmod(0o755)
        db.chmod(0o644)
    lines = r.stdout.splitlines()
    if lines and lines[0] == "0":
        pytest.skip("still root inside the namespace: a read-only file cannot be made")
    assert "rc=0" in r.stdout and "Fleiss" in r.stdout and "Traceback" not in r.stdout, r.stdout
    why = (
        "the file is read-only (its permissions: 0o444)"
        if read_only == "file"
        else f"the folder {folder} is not writable"
    )
    said = " ".join(r.stdout.split())  # the line is wrapped at the terminal's width
    assert f"run not stored (p.db: {why}" in said and "1029 labels, sha256" in said, r.stdout
    assert "error" not in r.stdout
    with Store(db) as store:
        assert store.agreement.agreement_runs() == []


TEXT_BOOK = """
name: probe
title: Probe
version: "1"
questions:
  - id: state
    prompt: What is the task state?
    kind: text
"""


def test_agree_on_a_read_only_file_gives_text_similarity_and_stores_no_vectors(
    tmp_path: Path,
) -> None:
    """The vectors of a text question are a cache: on a file that cannot be written they are
    computed and used, not stored (a write would stop `agree` before it printed)."""
    from annotate.codebook import Answer, LoadedCodebook, parse_codebook

    folder = tmp_path / "shared"
    folder.mkdir()
    db = folder / "p.db"
    book = parse_codebook(TEXT_BOOK, "probe.yaml")
    with Store(db) as store:
        import_files(store, sorted(DEMO.glob("*.jsonl")))
        store.codebooks.register_codebook(LoadedCodebook(book, TEXT_BOOK, "probe.yaml"))
        ids = [r[0] for r in store.db.query("SELECT id FROM actions ORDER BY session, seq")]
        texts = [("We are at the mill.", "We're by the mill."), ("Go left.", "Turn left.")]
        for action_id, (a, b) in zip(ids, texts, strict=False):
            store.labels.save_answer(action_id, book, "state", "ana", Answer(a))
            store.labels.save_answer(action_id, book, "state", "ben", Answer(b))
    db.chmod(0o444)
    try:
        r = run_sh(
            f"""cd {folder}
id -u
$PY -m annotate agree --codebook probe --db p.db 2>&1; echo "rc=$?"
""",
            flags="-U",
            tmp=tmp_path,
        )
    finally:
        db.chmod(0o644)
    lines = r.stdout.splitlines()
    if lines and lines[0] == "0":
        pytest.skip("still root inside the namespace: a read-only file cannot be made")
    assert "rc=0" in r.stdout and "Traceback" not in r.stdout, r.stdout
    assert "SBERT cosine" in r.stdout and "ROUGE-L F1" in r.stdout, r.stdout
    assert "error" not in r.stdout
    with Store(db) as store:
        assert store.db.query("SELECT count(*) FROM embeddings")[0][0] == 0


PAID_REPLY_ON_A_FULL_DISK = """
import os, sys
from annotate.errors import StoreError
from annotate.store import Store
from llm_coder.calls import CallRecord, Reply, request_for

request = request_for(
    model="m", endpoint_host="h:1", prefix_len=1, temperature=0.0, schema={"type": "object"},
    messages=[{"role": "system", "content": "c"}, {"role": "user", "content": "x" * 20000}],
)
store = Store("p.db")
with open("fill", "wb", buffering=0) as f:  # the disk fills up
    try:
        while True:
            f.write(b"0" * 4096)
            f.flush()
    except OSError:
        pass
try:
    store.llm.llm_cache(None).put(CallRecord(request, Reply("paid", 10, 2, 0.1, "none")))
    print("stored?!")
except StoreError as exc:
    print("error:", exc.message)
    print("hint:", exc.hint)
store.close()
os.remove("fill")
print("=====")
with Store("p.db") as store:
    store.llm.llm_cache(None)  # the next run
    print("restored:", store.llm.llm_request(request.hash)["reply"])
print("left:", sorted(os.listdir(os.environ["TMPDIR"])))
"""


def test_a_paid_reply_the_full_disk_refuses_is_kept_and_stored_next_time(tmp_path: Path) -> None:
    spare = tmp_path / "tmp"
    spare.mkdir()
    (tmp_path / "paid.py").write_text(PAID_REPLY_ON_A_FULL_DISK)
    r = run_sh(
        mount_tmpfs("1m") + f"""cd "$MNT" && TMPDIR={spare} $PY {tmp_path / "paid.py"} 2>&1""",
        flags="-rm",
        tmp=tmp_path,
    )
    failed, restored = outputs(r)
    lines = failed.splitlines()
    assert lines[0].startswith("error: p.db: cannot write: the disk is full (")
    # the project's folder is full too: the reply went to the temporary folder
    assert f"; the reply just paid for is kept in {spare}/annotate-" in lines[0]
    assert lines[0].endswith(".unsaved-replies.jsonl")
    assert lines[1].startswith("hint: the next llm-label stores it (nothing is requested again)")
    assert restored.splitlines() == ["restored: paid", "left: []"]
