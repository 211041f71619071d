"""The connection, transactions and schema upgrades that every part of the store shares."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotate import DEFAULT_DB
from annotate.errors import StoreError
from annotate.store.failures import (
    full_reason,
    is_storage_failure,
    read_only_reason,
    storage_error,
)
from annotate.store.lock import ATTEMPT_MS, Notify, begin_write
from annotate.store.migrations import MIGRATIONS

if TYPE_CHECKING:
    from annotate.codebook import Answer


def silent(message: str) -> None:
    """The default :data:`Notify`: a library caller that passes none is told nothing."""


def default_db_path() -> Path:
    return Path(os.environ.get("ANNOTATE_DB") or DEFAULT_DB)


def codes_json(answer: Answer) -> str | None:
    """An answer's codes as the store keeps them: a sorted JSON list, None for none."""
    return json.dumps(sorted(answer.codes)) if answer.codes else None


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False)
_ENCODE = _ENCODER.encode
# JSONEncoder.encode builds its C encoder anew on every call, half the time of encoding a
# small object (an action's meta, a million times in an import): built once here
_C_ENCODE = (
    json.encoder.c_make_encoder(
        None,
        _ENCODER.default,
        json.encoder.encode_basestring,
        None,
        _ENCODER.key_separator,
        _ENCODER.item_separator,
        True,
        False,
        True,
    )
    if json.encoder.c_make_encoder is not None
    else None
)


encode_text = json.encoder.encode_basestring
"""One text as :func:`dumps` writes it (quoted, escaped, non-ASCII as it is)."""


def dumps(value: Any) -> str:
    """JSON as the store keeps it: keys sorted, text as it is."""
    if _C_ENCODE is not None and type(value) is dict:
        return "".join(_C_ENCODE(value, 0))
    return _ENCODE(value)


def applied_migrations(conn: sqlite3.Connection, path: Path, *, empty_ok: bool) -> set[int]:
    """The migrations applied to an annotate file, read without writing to it.

    Refuses, before anything is written, a file that is not SQLite, a SQLite file of some
    other program (tables but no ``_migrations``), an empty file unless ``empty_ok``, and a
    file made by a newer version.
    """
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "_migrations" not in tables:
            if tables:
                shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
                raise StoreError(
                    f"{path}: not an annotate database (it holds other tables: {shown})"
                )
            if not empty_ok:
                raise StoreError(
                    f"{path}: not an annotate database (it is empty)",
                    hint="run `annotate import PATH` first, or pass --db",
                )
            return set()
        applied = {r[0] for r in conn.execute("SELECT id FROM _migrations")}
    except sqlite3.DatabaseError as exc:
        if is_storage_failure(exc):  # a full disk or a read-only folder, not the file
            raise storage_error(exc, path, "open") from exc
        raise StoreError(f"{path}: not an annotate database ({exc})") from exc
    known = {number for number, _ in MIGRATIONS}
    newer = sorted(applied - known)
    if newer:
        raise StoreError(
            f"{path}: made by a newer version of annotate (schema {max(newer)}, "
            f"this version knows up to {max(known)})",
            hint="update annotate to the version that made this file: in your checkout, "
            "`git pull` then `pip install -e .`",
        )
    return applied


def snapshot_project(path: Path, dest: Path, *, on_wait: Notify = silent) -> None:
    """Copy a project file to ``dest`` without writing to it, then upgrade the copy.

    ``annotate merge`` reads other coders' files this way: an older file is never upgraded
    in place, and a refused one is left exactly as it was.
    """
    try:
        source = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: cannot be read ({exc})") from exc
    try:
        applied_migrations(source, path, empty_ok=False)
        copy = sqlite3.connect(dest)
        try:
            source.backup(copy)
        finally:
            copy.close()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: not an annotate database ({exc})") from exc
    finally:
        source.close()
    Database(dest, on_wait=on_wait).close()


LARGE_FILE_BYTES = 256 * 1024 * 1024
"""A project file this large is told that it is being upgraded (it can take a while)."""


class Database:
    """Owns the sqlite3 connection, shared by every repository of the store. Autocommit
    mode: writes go through :meth:`transaction`.

    Waiting for another writer follows :mod:`annotate.store.lock` (``on_wait`` is told
    what is happening: the CLI passes one that prints); a failure of the disk becomes a
    one-line :class:`StoreError` with its real cause (:mod:`annotate.store.failures`)."""

    def __init__(self, path: str | Path, *, create: bool = True, on_wait: Notify = silent):
        self.path = Path(path)
        self.on_wait = on_wait
        if not create and not self.path.exists():
            raise StoreError(
                f"{self.path}: no such database",
                hint="run `annotate import PATH` first, or pass --db",
            )
        self.read_only = False
        try:
            conn, applied = self._open(create=create)
        except StoreError:
            if create or not self._readable_in_place():
                raise
            conn, applied = self._open(create=False, immutable=True)
            self.read_only = True
        self.conn = conn
        self.in_write = False
        """Whether a write transaction (:meth:`transaction`) is open."""
        self._migrate(applied)

    def _open(
        self, *, create: bool, immutable: bool = False
    ) -> tuple[sqlite3.Connection, set[int]]:
        target = (
            f"{self.path.resolve().as_uri()}?mode=ro&immutable=1" if immutable else str(self.path)
        )
        try:
            conn = sqlite3.connect(
                target, isolation_level=None, timeout=ATTEMPT_MS / 1000, uri=immutable
            )
        except sqlite3.Error as exc:
            raise storage_error(exc, self.path, "open") from exc
        try:
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {ATTEMPT_MS}")
            # checked before the first write, so a file we refuse is left as it was
            applied = applied_migrations(conn, self.path, empty_ok=create)
            if not immutable:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as exc:
            conn.close()
            raise storage_error(exc, self.path, "open") from exc
        except BaseException:
            conn.close()
            raise
        return conn, applied

    def _readable_in_place(self) -> bool:
        """A file in a read-only folder or on a full disk can still be read as it is, when
        no write-ahead log beside it holds changes (nobody can be writing it: they could not
        have created the log either). Every write then fails with the cause."""
        log = Path(f"{self.path}-wal")
        if log.exists() and log.stat().st_size > 0:  # a failed open leaves an empty one
            return False
        return read_only_reason(self.path) is not None or full_reason(self.path) is not None

    def why_unwritable(self) -> str | None:
        """Why nothing can be written here (a read-only file, folder or file system, or a
        file opened to be read only), if so: a command that can do without storing then
        reports without it, where a write would fail."""
        reason = read_only_reason(self.path)
        if reason:
            return f"{self.path.name}: {reason}"
        return f"{self.path.name} can only be read here" if self.read_only else None

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def transaction(self, *, patient: bool = False) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE); nested calls join the outer one.

        Another process writing is waited for (``patient``: without a time limit). A
        failure of the disk (full, read-only) rolls back and raises a :class:`StoreError`
        that names it."""
        if self.in_write:
            yield self.conn
            return
        try:
            begin_write(self.conn, self.path, self.on_wait, patient=patient)
        except sqlite3.Error as exc:
            raise storage_error(exc, self.path) from exc
        self.in_write = True
        try:
            yield self.conn
            self.conn.execute("COMMIT")
        except BaseException as exc:
            self._rollback()
            if isinstance(exc, sqlite3.Error) and is_storage_failure(exc):
                raise storage_error(exc, self.path) from exc
            raise
        finally:
            self.in_write = False

    @contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """Reads that see one state of the file (another process may write in between
        otherwise); inside a write transaction, that transaction's."""
        if self.in_write or self.conn.in_transaction:
            yield
            return
        self.conn.execute("BEGIN")
        try:
            yield
        finally:
            with suppress(sqlite3.Error):
                self.conn.execute("COMMIT")

    def has_table(self, name: str, schema: str = "main") -> bool:
        return (
            self.conn.execute(
                f"SELECT 1 FROM {schema}.sqlite_master WHERE type = 'table' AND name = ?", (name,)
            ).fetchone()
            is not None
        )

    def _rollback(self) -> None:
        """Roll back what is left: SQLite may have rolled back already (a full disk does),
        and a second error must not hide the first."""
        if self.conn.in_transaction:
            with suppress(sqlite3.Error):
                self.conn.execute("ROLLBACK")

    @contextmanager
    def snapshot_readers(self, n: int, attempts: int = 3) -> Iterator[list[sqlite3.Connection]]:
        """``n`` more connections to the file, each in a read transaction of one and the
        same snapshot, for reading side by side in threads (one connection a thread).

        No commit may come between the starts of their transactions: this connection's
        ``PRAGMA data_version`` (it changes with every commit of another connection) is
        read before and after, and they start again if it moved. A file written to all the
        while gives no readers ([]) after ``attempts``: read it on this connection."""
        target = self.path.resolve().as_uri() + "?mode=ro&immutable=1"
        for _ in range(attempts):
            readers: list[sqlite3.Connection] = []
            try:
                before = self.conn.execute("PRAGMA data_version").fetchone()[0]
                for _ in range(n):
                    conn = sqlite3.connect(
                        target if self.read_only else str(self.path),
                        uri=self.read_only,
                        isolation_level=None,
                        check_same_thread=False,
                        timeout=ATTEMPT_MS / 1000,
                    )
                    readers.append(conn)
                    conn.execute("PRAGMA query_only = ON")
                    conn.execute("BEGIN")
                    conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()
                if self.conn.execute("PRAGMA data_version").fetchone()[0] == before:
                    break
            except sqlite3.Error as exc:
                for conn in readers:
                    conn.close()
                raise storage_error(exc, self.path, "read") from exc
            for conn in readers:
                conn.close()
        else:
            readers = []
        try:
            yield readers
        finally:
            for conn in readers:
                conn.close()

    @contextmanager
    def larger_cache(self, kib: int = 64 * 1024) -> Iterator[None]:
        """SQLite's page cache at ``kib`` KiB (the default is 2 MB) while many rows go into
        indexes with random keys (a sample of 100,000 ids, a file of actions)."""
        before = self.conn.execute("PRAGMA cache_size").fetchone()[0]
        self.conn.execute(f"PRAGMA cache_size = {-kib}")
        try:
            yield
        finally:
            with suppress(sqlite3.Error):
                self.conn.execute(f"PRAGMA cache_size = {before}")

    def query(self, sql: str, params: Any = ()) -> list[sqlite3.Row]:
        return self.conn.execute(sql, params).fetchall()

    # -- schema -------------------------------------------------------------------------

    def _large(self) -> bool:
        """Whether the file is large enough for an upgrade to take seconds (some upgrades
        rewrite every label: about a minute for 3M labels)."""
        try:
            return self.path.stat().st_size >= LARGE_FILE_BYTES
        except OSError:
            return False

    def schema_version(self) -> int:
        row = self.conn.execute("SELECT max(id) FROM _migrations").fetchone()
        return row[0] or 0

    def _migrate(self, applied: set[int]) -> None:
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS _migrations "
            "(id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        pending = [number for number, _ in MIGRATIONS if number not in applied]
        if applied and pending and self._large():
            self.on_wait(
                f"{self.path}: upgrading this project file from schema {max(applied)} to "
                f"{pending[-1]}, once (a large file: this can take a minute)"
            )
        for number, migration in MIGRATIONS:
            if number in applied:
                continue
            with self.transaction() as conn:
                if conn.execute("SELECT 1 FROM _migrations WHERE id = ?", (number,)).fetchone():
                    continue  # another process applied it while we waited for the lock
                migration(conn)
                conn.execute(
                    "INSERT INTO _migrations (id, name, applied_at) VALUES (?, ?, ?)",
                    (number, migration.__name__, now()),
                )
