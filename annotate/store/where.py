"""``--where``: a user's SQL condition on actions, checked to be one expression that reads
and draws the same rows every time, and run so that Ctrl-C stops it.

The condition is pasted into ``SELECT ... FROM actions WHERE (<condition>\\n) ORDER BY
session, seq``. It is checked by SQLite itself, on a read-only connection of its own to the
same file, before the tool's query runs (:func:`check_where`):

- the condition is compiled (never run) inside one pair of parentheses and inside two: a
  text that compiles in both cannot close the tool's parenthesis and add an ``ORDER BY``,
  ``LIMIT``, ``UNION`` or a second statement after it (``;`` is refused: one statement);
  one that does not compile is SQLite's one-line syntax error;
- an authorizer sees every step of the compiled query: only reading (tables, columns) and
  functions are allowed, so no recursive common table expression (an endless one), no
  pragma, no attached file, and none of the functions that depend on chance or on the
  connection (``random()``, ``randomblob()``, ``changes()`` …) or on the clock
  (``CURRENT_TIMESTAMP``, ``CURRENT_DATE``, ``CURRENT_TIME``): the same seed would draw
  other items;
- a date and time function reads the clock when its time value is ``'now'`` or when it has
  none (``date()``): the compiled program says which constant each call is given.

A comment, a subquery's own ``ORDER BY``/``LIMIT``/``GROUP BY`` and a common table
expression that does not recurse stay inside the parentheses and change nothing around
them: they are allowed.
"""

from __future__ import annotations

import re
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from typing import TYPE_CHECKING, Any

from annotate.errors import AnnotateError, UsageError

if TYPE_CHECKING:
    from annotate.store.base import Database

RULES = (
    "one SQL condition on the actions' columns that only reads: no ';', no ORDER BY, LIMIT "
    "or UNION around it, no recursive WITH, no random() and no clock ('now', "
    "CURRENT_TIMESTAMP)"
)
WHY = {
    **dict.fromkeys(("ORDER", "LIMIT", "OFFSET"), "the sample draws and orders the items itself"),
    **dict.fromkeys(
        ("UNION", "INTERSECT", "EXCEPT", "GROUP", "HAVING", "WINDOW", "SELECT", "WITH"),
        "one condition, not a query",
    ),
}
"""Why a word SQLite finds where the condition should have ended is refused."""
NOT_REPRODUCIBLE = frozenset({
    "random", "randomblob", "current_timestamp", "current_date", "current_time",
    "changes", "total_changes", "last_insert_rowid",
})  # fmt: skip
CLOCK_FUNCTIONS = frozenset({"date", "time", "datetime", "julianday", "unixepoch", "timediff"})
"""Read the clock when their time value is 'now', or when they have none."""
TIME_VALUES_AFTER_FORMAT = frozenset({"strftime"})
"""Read the clock when the time value after the format is 'now'."""
SAME_SEED = "the same seed must draw the same items"
NOT_READING = {
    sqlite3.SQLITE_PRAGMA: "a pragma",
    sqlite3.SQLITE_ATTACH: "ATTACH",
    sqlite3.SQLITE_DETACH: "DETACH",
    sqlite3.SQLITE_TRANSACTION: "a transaction",
    sqlite3.SQLITE_INSERT: "INSERT",
    sqlite3.SQLITE_UPDATE: "UPDATE",
    sqlite3.SQLITE_DELETE: "DELETE",
}
PROGRESS_STEPS = 10_000
"""SQLite virtual-machine instructions between two looks at Ctrl-C."""
NEAR = re.compile(r'near "(.*)": syntax error')


class WhereInterrupted(AnnotateError):
    """Ctrl-C while a ``--where`` query ran."""


def _refuse(where: str, problem: str) -> UsageError:
    return UsageError(f"--where {where!r}: {problem}", hint=RULES)


def condition_sql(where: str, depth: int = 1) -> str:
    """``where`` as the tool pastes it after ``WHERE``: inside ``depth`` pairs of
    parentheses, the closing ones on a line of their own (a ``--`` comment ends before)."""
    return "(" * depth + where + "\n" + ")" * depth


@contextmanager
def _checking_connection(db: Database) -> Iterator[sqlite3.Connection]:
    """A read-only connection to ``db``'s file (nothing compiled on it can write)."""
    mode = "ro&immutable=1" if db.read_only else "ro"
    conn = sqlite3.connect(f"{db.path.resolve().as_uri()}?mode={mode}", uri=True)
    with closing(conn):
        conn.execute("PRAGMA query_only = ON")
        yield conn


def check_where(db: Database, where: str) -> str:
    """``where`` if it is one condition that only reads and reads the same rows every time
    (see the module docstring); else a one-line :class:`UsageError` naming the option."""
    refused: list[str] = []

    def authorize(action: int, arg1: str | None, arg2: str | None, *_: object) -> int:
        if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ):
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION:
            name = (arg2 or "").lower()
            if name not in NOT_REPRODUCIBLE:
                return sqlite3.SQLITE_OK
            shown = name.upper() if name.startswith("current_") else f"{name}()"
            refused.append(f"{shown} is not allowed: {SAME_SEED}")
        elif action == sqlite3.SQLITE_RECURSIVE:
            refused.append("WITH RECURSIVE is not allowed (it can run without end)")
        else:
            what = NOT_READING.get(action, f"step {action} of SQLite's authorizer")
            refused.append(f"{what} is not allowed (a condition only reads)")
        return sqlite3.SQLITE_DENY

    with _checking_connection(db) as conn:
        conn.set_authorizer(authorize)
        program: list[tuple[Any, ...]] = []
        # two pairs first, so that what closes one is refused by its word (UNION ...);
        # then one pair and the tool's ORDER BY, the query that runs
        for depth, order in ((2, ""), (1, " ORDER BY session, seq")):
            sql = f"EXPLAIN SELECT rowid FROM actions WHERE {condition_sql(where, depth)}"
            try:
                program = conn.execute(sql + order).fetchall()
            except (sqlite3.Error, sqlite3.Warning) as exc:
                if refused:
                    raise _refuse(where, refused[0]) from None
                if str(exc).startswith("no such column"):
                    conn.set_authorizer(None)
                    names = conn.execute("SELECT name FROM pragma_table_info('actions')")
                    hint = "the columns of actions: " + ", ".join(n for (n,) in names)
                    raise UsageError(f"--where {where!r}: {exc}", hint=hint) from None
                raise _refuse(where, _syntax(str(exc))) from None
    clock = _reads_the_clock(program)
    if clock:
        raise _refuse(where, f"{clock} reads the clock: {SAME_SEED}")
    return where


def _syntax(sqlite_says: str) -> str:
    """SQLite's error for a condition it cannot compile, with why when it stopped at a word
    that would have ended the condition."""
    near = NEAR.fullmatch(sqlite_says)
    if near is None:
        if sqlite_says == "incomplete input":
            return "incomplete: a '(' or a quote is not closed"
        if "one statement at a time" in sqlite_says:
            return "';' is not allowed (one condition, not statements)"
        if sqlite_says.startswith("unrecognized token") and "\n)" in sqlite_says:
            return "a quote is not closed"  # the token ran on into the tool's parentheses
        return sqlite_says.replace("\n", "\\n")
    word = near.group(1)
    if word == ";":
        return "';' is not allowed (one condition, not statements)"
    if word == ")":
        return "a ')' closes more than was opened"
    if word.upper() in WHY:
        return f"{word.upper()} is not allowed ({WHY[word.upper()]})"
    return sqlite_says


def _reads_the_clock(program: list[tuple[Any, ...]]) -> str | None:
    """The call (``date()``, ``'now'``) by which the compiled ``program`` (EXPLAIN's rows:
    addr, opcode, p1, p2, p3, p4, ...) reads the clock, if it does. A function's arguments
    are in the registers from its ``p2`` on (0: it has none); a text constant is loaded
    into its register ``p2`` by ``String8``."""
    now = _holding_now(program)
    for _, opcode, _, first, _, called, *_ in program:
        if opcode not in ("Function", "PureFunc") or not isinstance(called, str):
            continue
        name = called.partition("(")[0].lower()
        if name in CLOCK_FUNCTIONS:
            if first == 0:
                return f"{name}()"
            if first in now or (name == "timediff" and first + 1 in now):
                return "'now'"
        elif name in TIME_VALUES_AFTER_FORMAT and first and first + 1 in now:
            return "'now'"
    return None


def _holding_now(program: list[tuple[Any, ...]]) -> set[int]:
    """The registers that hold ``'now'`` or what was made of it: passed on through a function
    (``lower('now')``), a copy (``(SELECT 'now')``) or a table of the query (a CTE's column)."""
    registers = {row[3] for row in program if row[1] == "String8" and _is_now(row[5])}
    cursors: set[int] = set()
    for _ in range(2):  # twice: a loop of the program may read what a later address wrote
        for _, opcode, p1, p2, p3, *_ in program:
            if opcode in ("Function", "PureFunc") and p2 in registers:
                registers.add(p3)
            elif opcode in ("Copy", "SCopy", "Move") and p1 in registers:
                registers.add(p2)
            elif opcode == "MakeRecord" and registers & set(range(p1, p1 + p2)):
                registers.add(p3)
            elif opcode in ("Insert", "IdxInsert") and p2 in registers:
                cursors.add(p1)
            elif opcode == "Column" and p1 in cursors:
                registers.add(p3)
    return registers


def _is_now(text: object) -> bool:
    return isinstance(text, str) and text.strip().lower() == "now"


@contextmanager
def interruptible(conn: sqlite3.Connection, what: str) -> Iterator[None]:
    """Run queries that Ctrl-C stops: a progress handler aborts the query once SIGINT came,
    and the interruption becomes one :class:`WhereInterrupted` line."""
    stopped = threading.Event()
    started = time.monotonic()
    previous: Any = None
    in_main = threading.current_thread() is threading.main_thread()
    if in_main:
        previous = signal.signal(signal.SIGINT, lambda *_: stopped.set())
    conn.set_progress_handler(lambda: 1 if stopped.is_set() else 0, PROGRESS_STEPS)
    try:
        yield
    except sqlite3.OperationalError:
        if stopped.is_set():
            raise WhereInterrupted(
                f"{what}: stopped by Ctrl-C after {time.monotonic() - started:.1f} s; "
                "nothing was stored"
            ) from None
        raise
    except KeyboardInterrupt:
        raise WhereInterrupted(f"{what}: stopped by Ctrl-C; nothing was stored") from None
    finally:
        conn.set_progress_handler(None, 0)
        if in_main:
            signal.signal(signal.SIGINT, previous)
