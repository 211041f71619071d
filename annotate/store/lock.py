"""The write-lock policy: how long a command waits for another process that is writing.

SQLite lets one process write at a time. A command that needs to write while another
annotate process is writing (two imports, `agree` or `llm-label` during a long import)
says so at once, on stderr, naming the writer when the system can tell (Linux: the
process holding the WAL write lock in /proc/locks), then waits. After ``ANNOTATE_LOCK_WAIT``
seconds (default :data:`DEFAULT_WAIT_S`) it stops with "try again" and has written nothing.
A *patient* wait (a paid LLM reply that must be stored) has no limit: losing the reply
would cost money, waiting costs time.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from annotate.errors import StoreError

DEFAULT_WAIT_S = 120.0
WAIT_ENV = "ANNOTATE_LOCK_WAIT"
ATTEMPT_MS = 1_000  # SQLite's busy timeout for one attempt; the policy loops over attempts
WAL_WRITE_LOCK = 120  # the byte of the -shm file that SQLite's WAL writer locks

Notify = Callable[[str], None]


def process_running(pid: int) -> bool:
    """Whether process ``pid`` exists (on Windows, where ``os.kill`` would end it, assumed):
    what a killed import or merge left behind is cleaned up only once its process is gone."""
    if pid == os.getpid() or os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


def is_busy(exc: sqlite3.Error) -> bool:
    name = getattr(exc, "sqlite_errorname", "") or ""
    return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "database is locked" in str(exc)


def wait_limit() -> float:
    raw = os.environ.get(WAIT_ENV)
    try:
        return float(raw) if raw else DEFAULT_WAIT_S
    except ValueError:
        raise StoreError(
            f"{WAIT_ENV}={raw!r}: not a number of seconds", hint=f"e.g. {WAIT_ENV}=600"
        ) from None


def lock_holder(path: Path) -> str | None:
    """``PID 123: annotate import logs/`` of the process writing ``path``, if it can be told."""
    try:
        st = os.stat(f"{path}-shm")
        locks = Path("/proc/locks").read_text()
    except OSError:
        return None
    device = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in locks.splitlines():
        fields = line.split()
        if "->" in fields:  # a process blocked on this lock, not its holder
            continue
        # "1: POSIX  ADVISORY  WRITE 26491 fe:00:2163219 120 120"
        if (
            len(fields) >= 8
            and (fields[3], fields[5], fields[6]) == ("WRITE", device, str(WAL_WRITE_LOCK))
            and fields[4] != str(os.getpid())
        ):
            return _describe(fields[4])
    return None


def _describe(pid: str) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return f"PID {pid}"
    words = [a.decode(errors="replace") for a in argv if a]
    if len(words) >= 2 and Path(words[0]).name.startswith("python"):
        words = words[2:] if words[1] == "-m" else [Path(words[1]).name, *words[2:]]
    elif words:
        words[0] = Path(words[0]).name  # the annotate script, or another program
    command = " ".join(words)
    return f"PID {pid}: {command[:120]}" if command else f"PID {pid}"


def begin_write(
    conn: sqlite3.Connection, path: Path, notify: Notify, *, patient: bool = False
) -> None:
    """``BEGIN IMMEDIATE``, waiting for another writer by the policy above."""
    limit = wait_limit()
    started = time.monotonic()
    told = False
    while True:
        try:
            conn.execute("BEGIN IMMEDIATE")
            if told:
                notify(f"{path}: the other process has finished writing; continuing")
            return
        except sqlite3.OperationalError as exc:
            if not is_busy(exc):
                raise
        holder = lock_holder(path)
        who = holder or "which one could not be told"
        waited = time.monotonic() - started
        if not patient and waited >= limit:
            raise StoreError(
                f"{path}: another annotate process is still writing ({who}) after "
                f"{waited:.0f} s; nothing was written. Try again when it has finished",
                hint=f"{WAIT_ENV}=SECONDS waits longer (now {limit:g} s)",
            )
        if not told:
            until = "until it is done" if patient else f"up to {limit:g} s"
            notify(f"{path}: another annotate process is writing ({who}); waiting {until}…")
            told = True
