"""``--where``: a user's SQL condition on actions, checked to be one expression and run so
that Ctrl-C stops it.

The condition is pasted into ``SELECT ... FROM actions WHERE <condition> ORDER BY session,
seq``. SQLite already refuses a second statement and extension loading; this module also
refuses what would change the query around the condition or make the rows depend on chance:

- a comment (``--`` or ``/* */``), which could cut off the tool's own ``ORDER BY``;
- ``;``, ``ORDER BY``, ``LIMIT``, ``OFFSET``, ``WITH`` / ``RECURSIVE`` (an endless recursive
  CTE), and ``UNION``, ``INTERSECT``, ``EXCEPT``, ``GROUP BY``, ``HAVING``, ``WINDOW`` outside
  parentheses (a subquery may group);
- ``random()`` and ``randomblob()``, and the clock (``'now'`` or no argument in a date and
  time function, ``CURRENT_TIMESTAMP``, ``CURRENT_DATE``, ``CURRENT_TIME``) and the
  connection's state (``changes()`` …): the same seed would draw other items;
- unbalanced parentheses.
"""

from __future__ import annotations

import re
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from annotate.errors import AnnotateError, UsageError

RULES = (
    "one SQL condition on the actions' columns: no comments, no ';', no ORDER BY, LIMIT, "
    "OFFSET or WITH, no random() and no clock ('now', CURRENT_TIMESTAMP)"
)
ANYWHERE = {"ORDER", "LIMIT", "OFFSET", "WITH", "RECURSIVE"}
TOP_LEVEL = {"UNION", "INTERSECT", "EXCEPT", "GROUP", "HAVING", "WINDOW"}
WHY = {
    **dict.fromkeys(("ORDER", "LIMIT", "OFFSET"), "the sample draws and orders the items itself"),
    **dict.fromkeys(("WITH", "RECURSIVE"), "no common table expressions"),
    **dict.fromkeys(TOP_LEVEL, "one condition, not a query"),
}
NOT_REPRODUCIBLE = {
    "RANDOM", "RANDOMBLOB", "CURRENT_TIMESTAMP", "CURRENT_DATE", "CURRENT_TIME",
    "CHANGES", "TOTAL_CHANGES", "LAST_INSERT_ROWID",
}  # fmt: skip
CLOCK_FUNCTIONS = {"DATE", "TIME", "DATETIME", "JULIANDAY", "UNIXEPOCH", "STRFTIME", "TIMEDIFF"}
"""Read the clock when given 'now', or (but strftime) no time value at all."""
SAME_SEED = "the same seed must draw the same items"
PROGRESS_STEPS = 10_000
"""SQLite virtual-machine instructions between two looks at Ctrl-C."""

_TOKEN = re.compile(
    r"""
    (?P<string>'(?:[^']|'')*'?)                  # 'text', '' inside; unterminated too
  | (?P<quoted>"(?:[^"]|"")*"?|`[^`]*`?|\[[^\]]*\]?)  # quoted identifiers
  | (?P<comment>--|/\*)
  | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
  | (?P<open>\()
  | (?P<close>\))
  | (?P<semicolon>;)
  | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)


class WhereInterrupted(AnnotateError):
    """Ctrl-C while a ``--where`` query ran."""


def _refuse(where: str, problem: str) -> UsageError:
    return UsageError(f"--where {where!r}: {problem}", hint=RULES)


def check_where(where: str) -> str:
    """``where`` if it is a single condition (see the module docstring); else UsageError."""
    depth = 0
    calls: list[str] = []  # the function each open parenthesis belongs to ("" for none)
    previous = ""  # the token before this one, blanks aside: a word, or its kind
    for match in _TOKEN.finditer(where):
        kind, text = match.lastgroup, match.group()
        if kind == "other" and text.isspace():
            continue
        if kind == "comment":
            raise _refuse(where, f"a comment ({text}) is not allowed")
        if kind == "semicolon":
            raise _refuse(where, "';' is not allowed (one condition, not statements)")
        if kind == "open":
            depth += 1
            calls.append(previous.upper())
        elif kind == "close":
            depth -= 1
            if depth < 0:
                raise _refuse(where, "a ')' closes more than was opened")
            called = calls.pop()
            if previous == "open" and called in CLOCK_FUNCTIONS - {"STRFTIME"}:
                raise _refuse(where, f"{called.lower()}() reads the clock: {SAME_SEED}")
        elif kind == "string" and text.strip("'").strip().lower() == "now":
            if any(call in CLOCK_FUNCTIONS for call in calls):
                raise _refuse(where, f"'now' reads the clock: {SAME_SEED}")
        elif kind == "word":
            word = text.upper()
            if word in ANYWHERE or (depth == 0 and word in TOP_LEVEL):
                raise _refuse(where, f"{word} is not allowed ({WHY[word]})")
            if word in NOT_REPRODUCIBLE:
                name = text if word.startswith("CURRENT_") else f"{text}()"
                raise _refuse(where, f"{name} is not allowed: {SAME_SEED}")
        previous = text if kind == "word" else str(kind)
    if depth > 0:
        raise _refuse(where, "a '(' is not closed")
    return where


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
