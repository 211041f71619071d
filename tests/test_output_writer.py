"""The one output writer: a failed write is an error (never a silently shorter file), the
content of `export` is written byte for byte to files and pipes, and CSV cells a
spreadsheet would run as formulas are defused unless --no-safe-csv."""

from __future__ import annotations

import io
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ESCAPES = "title\x1b]0;OWNED\x07 clip\x1b]52;c;aGk=\x07 wipe\x1b[2J red\x1b[31mX\x1b[0m"


def annotate(*args: str, limit: int | None = None, stdout=subprocess.PIPE, **kw):
    """`annotate ARGS` in its own process; ``limit``: RLIMIT_FSIZE in bytes (``ulimit -f``)."""

    def bounded() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "annotate", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        preexec_fn=bounded,
        env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        **kw,
    )


def make_project(tmp_path: Path, contents: list[str]) -> Path:
    src = tmp_path / "log.jsonl"
    with src.open("w", encoding="utf-8") as f:
        for k, text in enumerate(contents):
            f.write(json.dumps({"session": f"s{k % 3}", "seq": k, "content": text}) + "\n")
    db = tmp_path / "p.db"
    r = annotate("import", str(src), "--format", "jsonl", "--db", str(db))
    assert r.returncode == 0, r.stderr
    return db


def test_export_to_stdout_under_ulimit_fails_loudly(tmp_path: Path) -> None:
    """`(ulimit -f N; annotate export > out.csv)` used to exit 0 with a truncated file."""
    db = make_project(tmp_path, [f"message {k} " + "x" * 200 for k in range(600)])
    full = annotate("export", "--what", "actions", "--format", "csv", "--db", str(db))
    assert full.returncode == 0 and len(full.stdout) > 100_000
    # the limit covers every file the process writes: the WAL index (32 KB) must fit
    out = tmp_path / "out.csv"
    with out.open("wb") as f:
        r = annotate(
            "export", "--what", "actions", "--format", "csv", "--db", str(db),
            limit=64_000, stdout=f,
        )  # fmt: skip
    assert out.stat().st_size == 64_000  # what fitted
    assert r.returncode == 1
    err = r.stderr.decode()
    assert err.startswith("error: standard output: cannot write (File too large)")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert full.stdout.startswith(out.read_bytes())  # the bytes that were written are right


def test_export_keeps_escape_sequences_in_pipes_and_files(tmp_path: Path) -> None:
    db = make_project(tmp_path, [ESCAPES, "plain", "é ü 中文 \U0001f600"])
    for fmt in ("csv", "jsonl"):
        piped = annotate("export", "--what", "actions", "--format", fmt, "--db", str(db))
        assert piped.returncode == 0
        out = tmp_path / f"out.{fmt}"
        annotate("export", "--what", "actions", "--format", fmt, "--out", str(out), "--db", str(db))
        assert piped.stdout == out.read_bytes()  # stdout and --out give the same bytes
        if fmt == "csv":  # the raw bytes, ESC and BEL included
            assert ESCAPES.encode() in piped.stdout
            content = pd.read_csv(io.BytesIO(piped.stdout))["content"].tolist()
        else:  # JSON writes a control character as \u001b; it reads back the same
            content = [json.loads(line)["content"] for line in piped.stdout.splitlines()]
        assert content[0] == ESCAPES and content[2] == "é ü 中文 \U0001f600"


def test_safe_csv_is_on_by_default_and_can_be_turned_off(tmp_path: Path) -> None:
    cells = ['=HYPERLINK("http://x","y")', "+1+2", "-2+3", "@SUM(A1)", "fine", "a=b"]
    db = make_project(tmp_path, cells)

    def read(data: bytes | Path) -> pd.DataFrame:
        return pd.read_csv(io.BytesIO(data) if isinstance(data, bytes) else data).sort_values("seq")

    r = annotate("export", "--what", "actions", "--format", "csv", "--db", str(db))
    assert read(r.stdout)["content"].tolist() == ["'" + c for c in cells[:4]] + cells[4:]
    assert read(r.stdout)["seq"].tolist() == list(range(6))  # numbers are values: untouched
    r = annotate("export", "--what", "actions", "--format", "csv", "--no-safe-csv", "--db", str(db))
    assert read(r.stdout)["content"].tolist() == cells
    out = tmp_path / "a.csv"
    annotate("export", "--what", "actions", "--out", str(out), "--db", str(db))
    assert read(out)["content"].tolist()[:1] == ["'" + cells[0]]
    jsonl = annotate("export", "--what", "actions", "--format", "jsonl", "--db", str(db))
    rows = sorted((json.loads(line) for line in jsonl.stdout.splitlines()), key=lambda r: r["seq"])
    assert [r["content"] for r in rows] == cells  # CSV only


def test_a_report_to_a_full_disk_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    """Reports go through the same writer (`status` here, to /dev/full: every write ENOSPC)."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this machine")
    db = make_project(tmp_path, ["hello"] * 5)
    with open("/dev/full", "wb") as f:
        r = annotate("status", "--db", str(db), stdout=f)
    assert r.returncode == 1
    assert r.stderr.decode().strip() == (
        "error: standard output: cannot write (No space left on device); the output is incomplete"
    )


def test_export_to_a_terminal_shows_escape_sequences_as_text(tmp_path: Path) -> None:
    """A terminal is a screen, not a file: there the content's control characters are
    shown escaped (a pipe or file gets the bytes, above)."""
    import pty

    db = make_project(tmp_path, [ESCAPES])
    master, slave = pty.openpty()
    try:
        r = annotate("export", "--what", "actions", "--format", "csv", "--db", str(db),
                     stdout=slave)  # fmt: skip
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
    assert r.returncode == 0
    assert b"\x1b" not in out and b"\x07" not in out
    assert b"title\\x1b]0;OWNED\\x07 clip\\x1b]52;c;aGk=\\x07 wipe\\x1b[2J" in out
