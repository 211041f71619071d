"""Dotted paths into nested records: ``action.content`` is ``record["action"]["content"]``.

An importer's ``--map content=message.text`` and a rule set's field paths
(``request.object``, ``meta.verifier``) read values through :func:`lookup`. A key that itself
holds a dot (``{"a.b": 1}``) is found before the path is split, so flat files whose column
names have dots keep working.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def lookup(record: Mapping[str, Any], path: str) -> Any:
    """The value at ``path``; ``KeyError`` naming the whole path when any step is missing
    (or is not an object)."""
    if path in record:
        return record[path]
    value: Any = record
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            raise KeyError(path)
        value = value[part]
    return value


def get(record: Mapping[str, Any], path: str, default: Any = None) -> Any:
    """:func:`lookup`, with ``default`` where the path is missing."""
    try:
        return lookup(record, path)
    except KeyError:
        return default


def without(record: Mapping[str, Any], path: str) -> dict[str, Any]:
    """A copy of ``record`` without the value at ``path``, and without the objects that
    held only it (the record itself is not changed; only the objects on the path are
    copied)."""
    out = dict(record)
    if path in out:
        del out[path]
        return out
    head, sep, rest = path.partition(".")
    if not sep or not isinstance(out.get(head), Mapping):
        out.pop(head, None)
        return out
    inner = without(out[head], rest)
    if inner:
        out[head] = inner
    else:
        del out[head]
    return out
