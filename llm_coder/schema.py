"""JSON Schema for a codebook's answers, and strict parsing of a model's reply.

The schema constrains every code to an ``enum`` of the codebook's codes (structured output).
Parsing never coerces: a reply that is not JSON, misses a question, or uses a code that is
not in the codebook is *invalid*, with a one-line reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from annotate.codebook import NO, OTHER, YES, Answer, Question
from annotate.errors import CodebookError

FormatMode = Literal["json_schema", "json_object_schema", "json_object", "none"]
FORMAT_MODES: tuple[FormatMode, ...] = ("json_schema", "json_object_schema", "json_object", "none")
"""Tried in this order. ``json_object_schema`` is ``{"type": "json_object", "schema": ...}``,
which llama.cpp's servers (``llama-server``, ``llama-cpp-python``) turn into constrained
decoding; ``none`` sends no ``response_format`` and relies on the prompt, which spells out
every code and the reply format in every mode."""

_NULLABLE_TEXT = {"type": ["string", "null"]}


def question_schema(q: Question) -> dict[str, Any]:
    props: dict[str, Any]
    if q.kind == "text":
        props = {"text": {"type": "string"}}
    elif q.kind == "single":
        props = {"code": {"type": "string", "enum": list(q.codes)}}
    elif q.kind == "multi":
        props = {"codes": {"type": "array", "items": {"type": "string", "enum": list(q.set_codes)}}}
    else:
        props = {
            "answer": {"type": "string", "enum": [YES, NO]},
            "reasons": {"type": "array", "items": {"type": "string", "enum": list(q.set_codes)}},
        }
    if q.allow_other:
        props["other_text"] = _NULLABLE_TEXT
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }


def answer_schema(questions: Sequence[Question]) -> dict[str, Any]:
    """One object with a required property per question (strict-mode compatible)."""
    return {
        "type": "object",
        "properties": {q.id: question_schema(q) for q in questions},
        "required": [q.id for q in questions],
        "additionalProperties": False,
    }


def response_format(mode: FormatMode, schema: dict[str, Any]) -> dict[str, Any] | None:
    if mode == "json_schema":
        return {
            "type": "json_schema",
            "json_schema": {"name": "codebook_answer", "strict": True, "schema": schema},
        }
    if mode == "json_object_schema":
        return {"type": "json_object", "schema": schema}
    if mode == "json_object":
        return {"type": "json_object"}
    return None


def answer_to_json(q: Question, answer: Answer) -> dict[str, Any]:
    """The reply format for one answer (used for the few-shot examples)."""
    if q.kind == "text":
        return {"text": answer.value}
    if q.kind == "single":
        out: dict[str, Any] = {"code": answer.value}
    elif q.kind == "multi":
        out = {"codes": list(answer.codes)}
    else:
        out = {"answer": answer.value, "reasons": list(answer.codes)}
    if q.allow_other:
        out["other_text"] = answer.other_text
    return out


@dataclass(frozen=True)
class Parsed:
    answers: dict[str, Answer] | None
    error: str | None = None

    @property
    def valid(self) -> bool:
        return self.answers is not None


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def _extract_json(text: str) -> Any:
    stripped = text.strip()
    fenced = _FENCE.search(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    elif not stripped.startswith("{") and "{" in stripped:
        stripped = stripped[stripped.index("{") : stripped.rindex("}") + 1]
    return json.loads(stripped)


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CodebookError(f"{where} must be a list of codes")
    return tuple(value)


def _parse_one(q: Question, raw: Any) -> Answer:
    if isinstance(raw, str) and q.kind == "single":
        raw = {"code": raw}
    if not isinstance(raw, dict):
        raise CodebookError(f"question {q.id}: expected an object, got {type(raw).__name__}")
    other = raw.get("other_text")
    if other is not None and not isinstance(other, str):
        raise CodebookError(f"question {q.id}: other_text must be a string or null")
    if q.kind == "text":
        text = raw.get("text")
        if not isinstance(text, str):
            raise CodebookError(f"question {q.id}: the text must be a string")
        answer = Answer(text.strip())
        answer.check(q)
        return answer
    if q.kind == "single":
        value, codes = raw.get("code"), ()
    elif q.kind == "multi":
        value, codes = None, _strings(raw.get("codes"), f"question {q.id}: codes")
    else:
        value = raw.get("answer")
        codes = _strings(raw.get("reasons") or [], f"question {q.id}: reasons")
    if value is not None and not isinstance(value, str):
        raise CodebookError(f"question {q.id}: the code must be a string")
    uses_other = value == OTHER or OTHER in codes
    answer = Answer(value, codes, (other or None) if uses_other else None)
    answer.check(q)
    return answer


def parse_reply(text: str, questions: Sequence[Question]) -> Parsed:
    """Parse and check a reply; never raises, never coerces an unknown code."""
    try:
        data = _extract_json(text)
    except (ValueError, IndexError):
        return Parsed(None, "the reply is not valid JSON")
    if not isinstance(data, dict):
        return Parsed(None, "the reply is not a JSON object")
    answers: dict[str, Answer] = {}
    for q in questions:
        if q.id not in data:
            return Parsed(None, f"question {q.id} is not answered")
        try:
            answers[q.id] = _parse_one(q, data[q.id])
        except CodebookError as exc:
            return Parsed(None, exc.message)
    return Parsed(answers)
