"""What each key does for a question: one list for the coding and the adjudication screens."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from annotate.codebook import NO, OTHER, YES, Question


@dataclass(frozen=True)
class Choice:
    """What one key does for a question."""

    key: str
    code: str
    label: str
    role: Literal["value", "toggle"]
    definition: str = ""
    examples: tuple[str, ...] = ()
    counterexamples: tuple[str, ...] = ()


def question_choices(q: Question) -> tuple[Choice, ...]:
    """What each key does for a question, with the codebook's labels and definitions (the
    coding and the adjudication screens show the same)."""
    out: list[Choice] = []
    if q.kind == "yes_no_reasons":
        out += [
            Choice(q.yes_key, YES, "Yes", "value"),
            Choice(q.no_key, NO, "No (then choose the reasons)", "value"),
        ]
    role: Literal["value", "toggle"] = "value" if q.kind == "single" else "toggle"
    for o in q.options:
        out.append(
            Choice(
                o.key,
                o.code,
                o.label,
                role,
                o.definition,
                tuple(o.examples),
                tuple(o.counterexamples),
            )
        )
    if q.allow_other:
        out.append(Choice(q.other_key, OTHER, "Other (describe it)", role))
    return tuple(out)
