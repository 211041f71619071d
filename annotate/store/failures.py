"""SQLite errors turned into their real cause, in one line: disk full, read-only, a file
size limit, another writer. "not an annotate database" is kept for files that are not one.
"""

from __future__ import annotations

import os
import resource
import sqlite3
from pathlib import Path

from annotate.errors import StoreError
from annotate.store.lock import WAIT_ENV, is_busy, lock_holder

LOW_SPACE = 64 * 1024  # less free space than this, and a failed write is a full disk


def _name(exc: sqlite3.Error) -> str:
    return getattr(exc, "sqlite_errorname", "") or ""


def _folder(path: Path) -> Path:
    return path.resolve().parent


def read_only_reason(path: Path) -> str | None:
    """Why ``path`` cannot be written, if it cannot."""
    folder = _folder(path)
    try:
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return f"the file system of {folder} is mounted read-only"
    except OSError:
        return None
    if not os.access(folder, os.W_OK):
        return (
            f"the folder {folder} is not writable (SQLite keeps {path.name}-wal and "
            f"{path.name}-shm beside the file)"
        )
    if path.exists() and not os.access(path, os.W_OK):
        return f"the file is read-only (its permissions: {oct(path.stat().st_mode & 0o777)})"
    return None


def full_reason(path: Path) -> str | None:
    """Why writing ``path`` ran out of room, if it did: a full disk or ``ulimit -f``."""
    try:
        st = os.statvfs(_folder(path))
        free = st.f_bavail * st.f_frsize
        if free < LOW_SPACE:
            return f"the disk is full ({free // 1024} KB free in {_folder(path)})"
    except OSError:
        pass
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft != resource.RLIM_INFINITY:
        return f"a file size limit (ulimit -f) of {soft:,} bytes stops the write"
    return None


def is_storage_failure(exc: sqlite3.Error) -> bool:
    """A failure of the disk or the lock, not of the SQL or the file's contents."""
    name = _name(exc)
    return is_busy(exc) or name.startswith(
        ("SQLITE_FULL", "SQLITE_READONLY", "SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_PERM")
    )


def storage_error(exc: sqlite3.Error, path: Path, doing: str = "write") -> StoreError:
    """The one-line :class:`StoreError` for ``exc`` raised while working on ``path``."""
    name = _name(exc)
    if is_busy(exc):
        who = lock_holder(path) or "which one could not be told"
        return StoreError(
            f"{path}: another annotate process is writing ({who}); try again when it has finished",
            hint=f"{WAIT_ENV}=SECONDS sets how long to wait",
        )
    full = name.startswith("SQLITE_FULL")
    if full or name.startswith(
        ("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_IOERR")
    ):
        read_only = None if full else read_only_reason(path)
        if read_only:
            return StoreError(
                f"{path}: cannot {doing}: {read_only}",
                hint="work where the file can be written (or copy the file there)",
            )
        no_room = full_reason(path) or ("the disk is full" if full else None)
        if no_room:
            return StoreError(
                f"{path}: cannot {doing}: {no_room}",
                hint="free some space, then run the command again (a step that failed was "
                "rolled back: nothing of it is stored)",
            )
    return StoreError(f"{path}: cannot {doing} ({exc})")
