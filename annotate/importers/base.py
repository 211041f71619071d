"""What every importer returns, and the options they share."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from annotate.errors import UsageError
from annotate.models import Action, ImportedLabel

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


@dataclass
class ParsedFile:
    """A source file parsed into actions; ``problems`` are the lines that could not be."""

    path: Path
    format: str
    actions: list[Action] = field(default_factory=list)
    labels: list[ImportedLabel] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    order_by_timestamp: bool = False
    _seen: dict[str, int] = field(default_factory=dict, repr=False)

    def add(self, action: Action, line: int) -> bool:
        """Keep ``action`` unless its id was already used on an earlier line."""
        if action.id in self._seen:
            self.problems.append(
                Problem(
                    line,
                    f"duplicate action id '{action.id}' (first on line {self._seen[action.id]})",
                )
            )
            return False
        self._seen[action.id] = line
        self.actions.append(action)
        return True


@dataclass(frozen=True)
class ImportOptions:
    mapping: dict[str, str] = field(default_factory=dict)
    condition: str | None = None
    roles: dict[str, str] = field(default_factory=dict)


def parse_pairs(
    pairs: list[str], option: str, allowed: tuple[str, ...] | None = None
) -> dict[str, str]:
    """``["a=b", "c=d"]`` or ``["a=b,c=d"]`` -> ``{"a": "b", "c": "d"}``."""
    out: dict[str, str] = {}
    for item in pairs:
        for part in item.split(","):
            if not part.strip():
                continue
            key, sep, value = part.partition("=")
            if not sep or not key.strip() or not value.strip():
                raise UsageError(f"{option}: '{part}' is not of the form NAME=VALUE")
            key = key.strip()
            if allowed is not None and key not in allowed:
                raise UsageError(
                    f"{option}: unknown field '{key}'", hint="fields: " + ", ".join(allowed)
                )
            out[key] = value.strip()
    return out
