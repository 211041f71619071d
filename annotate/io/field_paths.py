"""Dotted paths into nested records: ``action.type`` is ``record["action"]["type"]``.

A mapping file names a source field by its path, so nested logs (a probe log's
``probes.task_state``, an action's ``action.content``) import as they come, unflattened.
A key that itself holds a dot is reached whole first (``{"a.b": 1}`` at ``a.b``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def lookup(record: Mapping[str, Any], path: str) -> Any:
    """The value at ``path`` in ``record``; KeyError naming the path (and the part that is
    missing) when there is none."""
    if path in record:
        return record[path]
    node: Any = record
    parts = path.split(".")
    for i, part in enumerate(parts):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
            continue
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
            continue
        where = ".".join(parts[: i + 1])
        detail = "" if where == path else f" (no '{where}')"
        raise KeyError(f"no field '{path}'{detail}")
    return node


def has(record: Mapping[str, Any], path: str) -> bool:
    try:
        lookup(record, path)
    except KeyError:
        return False
    return True
