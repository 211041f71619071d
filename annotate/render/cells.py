"""The one formula guard for every CSV this tool writes (export, agree, stats, report)."""

from __future__ import annotations

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: object) -> object:
    """A text cell a spreadsheet would run as a formula (``=``, ``+``, ``-``, ``@``, tab,
    carriage return first), prefixed with ``'`` so that it is shown as text (OWASP)."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value
