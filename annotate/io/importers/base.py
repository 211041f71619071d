"""What importers yield, and the options they share.

A parser is a generator over one file: it yields ``(line, item)`` where the item is an
:class:`~annotate.models.Action` (or, where building one would only cost time, its
:data:`~annotate.store.actions.ActionRow`), an :class:`~annotate.models.ImportedLabel` for
the action just yielded, or a :class:`Problem`. Streaming keeps memory flat on million-line files;
:mod:`annotate.io.importing` decides what a problem means (stop, or skip).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from annotate.errors import UsageError
from annotate.models import Action, ImportedLabel
from annotate.store.actions import ActionRow

FIELDS = (
    "id",
    "session",
    "participant",
    "role",
    "seq",
    "timestamp",
    "elapsed_s",
    "action_type",
    "content",
    "condition",
    "label",
)


@dataclass(frozen=True)
class Problem:
    line: int
    message: str

    def where(self, path: Path) -> str:
        return f"{path}:{self.line}: {self.message}"


Item = Action | ActionRow | ImportedLabel | Problem


@dataclass(frozen=True)
class ImportOptions:
    mapping: dict[str, str] = field(default_factory=dict)
    condition: str | None = None
    roles: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SourceFormat:
    """A registered format: its parser and what the store does after the file is in."""

    parse: Callable[[Path, ImportOptions], Iterator[tuple[int, Item]]]
    order_by_timestamp: bool = False
    infer_roles: bool = False


def parse_pairs(
    pairs: list[str],
    option: str,
    allowed: tuple[str, ...] | None = None,
    prefixes: tuple[str, ...] = (),
) -> dict[str, str]:
    """``["a=b", "c=d"]`` or ``["a=b,c=d"]`` -> ``{"a": "b", "c": "d"}`` (a name must be
    one of ``allowed``, or start with one of ``prefixes`` and go on)."""
    out: dict[str, str] = {}
    for item in pairs:
        for part in item.split(","):
            if not part.strip():
                continue
            key, sep, value = part.partition("=")
            if not sep or not key.strip() or not value.strip():
                raise UsageError(f"{option}: '{part}' is not of the form NAME=VALUE")
            key = key.strip()
            prefixed = any(key.startswith(p) and len(key) > len(p) for p in prefixes)
            if allowed is not None and key not in allowed and not prefixed:
                raise UsageError(
                    f"{option}: unknown field '{key}'",
                    hint="fields: " + ", ".join([*allowed, *(p + "NAME" for p in prefixes)]),
                )
            out[key] = value.strip()
    return out
