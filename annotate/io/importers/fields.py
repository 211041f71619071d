"""Reading one field of a source row: every odd value becomes ``field 'NAME': problem``.

Log files are untrusted input. A JSON object where a name belongs, a sequence number that
SQLite cannot hold, a time before year 1 once its offset is applied, or JSON nested
thousands deep must cost that line (``file:line: field 'x': ...``, skipped with
``--skip-invalid``), never the whole import with a traceback. Importers raise
:class:`FieldError` (a ``ValueError``) and report it as a problem of the line.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from typing import Any

MAX_INT = 2**63 - 1
"""SQLite's largest integer."""
MAX_JSON_DEPTH = 100
"""Deeper nesting is not a log row (and deep enough crashes the JSON decoder)."""


class FieldError(ValueError):
    """One field of one row is unusable; the message names the field."""

    def __init__(self, name: str, problem: str):
        super().__init__(f"field '{name}': {problem}")


def _kind(value: Any) -> str:
    return {dict: "a JSON object", list: "a JSON list", bool: "true/false"}.get(
        type(value), type(value).__name__
    )


def text(value: Any, name: str) -> str | None:
    """A name, role, session or content: text, or a number written as text (None stays
    None, "" stays "")."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):  # bool too: stored as before, True -> "True"
        if isinstance(value, float) and not math.isfinite(value):
            raise FieldError(name, f"expected text, not {value}")
        return str(value)
    raise FieldError(name, f"expected text, not {_kind(value)}")


def content(value: Any) -> str | None:
    """What was said or done: any value, as text (an object or list as it always was: a
    drawing's structured content is data, not a mistake)."""
    return None if value is None else str(value)


def whole_number(value: Any, name: str) -> int:
    """A sequence number: a whole number SQLite can store."""
    if isinstance(value, bool | dict | list):
        raise FieldError(name, f"must be a whole number, not {_kind(value)}")
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        raise FieldError(name, f"must be a whole number, not {str(value)[:40]!r}") from None
    if isinstance(value, float) and number != value:
        raise FieldError(name, f"must be a whole number, not {value}")
    if not -MAX_INT <= number <= MAX_INT:
        raise FieldError(name, f"{str(number)[:30]}… is out of range (at most {MAX_INT})")
    return number


def number(value: Any, name: str) -> float | None:
    """A finite number (seconds); empty -> None."""
    if value is None or value == "":
        return None
    if isinstance(value, bool | dict | list):
        raise FieldError(name, f"must be a number, not {_kind(value)}")
    try:
        result = float(value)
    except (TypeError, ValueError, OverflowError):
        raise FieldError(name, f"must be a number, not {str(value)[:40]!r}") from None
    if not math.isfinite(result):
        raise FieldError(name, f"must be a finite number, not {value}")
    return result


_UTC_TEXT = re.compile(
    r"[1-9][0-9]{3}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.([0-9]{1,6}))?(?:Z|\+00:00)?"
)
"""A time already in UTC (or naive, which is taken as UTC) written the usual way: year 1000
or later, ``T``, ASCII digits, up to six decimals, ``Z``, ``+00:00`` or nothing."""
_parse_iso = datetime.fromisoformat


def utc_timestamp(value: Any, name: str = "timestamp") -> str:
    """ISO 8601 text in one fixed UTC form (``2026-04-10T21:44:11.831000Z``), so that
    text order is time order. A time without an offset is taken as UTC.

    A time of the usual UTC shape (:data:`_UTC_TEXT`, a million times in an import) is
    written out from its own digits once ``datetime`` has accepted it (a real date and
    time): the same text as the long way, in a third of the time."""
    if type(value) is str:
        usual = _UTC_TEXT.fullmatch(value)
        if usual is not None:
            try:
                _parse_iso(value)
            except ValueError:
                pass  # not a real date or time: the long way words the error
            else:
                decimals = usual[1]
                return f"{value[:19]}.{decimals.ljust(6, '0') if decimals else '000000'}Z"
    return utc_timestamp_parsed(value, name)


def utc_timestamp_parsed(value: Any, name: str = "timestamp") -> str:
    """:func:`utc_timestamp` the long way, for any input: parsed, shifted to UTC, written."""
    if not isinstance(value, str):
        raise FieldError(name, f"must be ISO 8601 text, not {_kind(value)}")
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise FieldError(name, f"{value[:60]!r} is not an ISO 8601 time") from None
    offset = moment.utcoffset()
    if not offset and moment.year >= 1000:  # already UTC: isoformat is the same text, faster
        return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    except (OverflowError, ValueError):
        raise FieldError(name, f"{value!r} is out of range once its offset is applied") from None


def json_line(line: str) -> Any:
    """One JSON value; too deep nesting is a ``ValueError`` like any bad JSON."""
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    # nesting needs an opening bracket per level: most lines cannot be too deep
    if line.count("{") + line.count("[") > MAX_JSON_DEPTH and _depth_over(value, MAX_JSON_DEPTH):
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    if SURROGATE_ESCAPE.search(line) and _has_lone_surrogate(value):
        raise ValueError("not valid Unicode: a lone surrogate (\\ud800 to \\udfff) is not text")
    return value


SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""How a surrogate is written in JSON; a valid pair decodes to one character."""


def _has_lone_surrogate(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _depth_over(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            stack.extend(
                (v, depth + 1) for v in (item.values() if isinstance(item, dict) else item)
            )
    return False
