"""Codebooks: YAML files validated by pydantic, identified by name and content hash.

A codebook has one or more questions. Each question is one of four kinds:

- ``single``: exactly one option (or "Other" with free text, when declared);
- ``multi``: one or more options (a set);
- ``yes_no_reasons``: ``yes`` or ``no``; a ``no`` takes one or more reasons, which are
  the question's options (Q4 of the mental-model survey);
- ``text``: free text (a rationale), no options; ``min_chars`` asks for at least that many
  characters. Stored as the label's ``value``; agreement gives the texts' similarity.
- ``number``: a number (a confidence, a rating), no options; ``min``, ``max`` and ``step``
  bound it. Stored as the label's ``value`` in canonical form (``0.8``, ``3``); agreement is
  Krippendorff's alpha at the interval (or, with ``level: ratio``, ratio) level and the ICC.

Answers are stored as :class:`Answer`: ``value`` holds the single code (or ``yes``/``no``),
``codes`` the selected set for ``multi`` and the reasons for ``yes_no_reasons``.

"Other" is opt-in: a question offers it only with ``allow_other: true``, and an "Other"
answer always carries free text. (Before schema 7 an omitted ``allow_other`` meant true;
codebook versions stored then are read with ``other_by_default=True``, see
:func:`parse_codebook`.)
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from annotate.codebook_yaml import check_size, load_yaml
from annotate.errors import CodebookError

OTHER = "other"
YES = "yes"
NO = "no"
TYPED_KINDS = ("text", "number")
"""Question kinds answered by typing (a text, a number), not by choosing an option."""


def _builtin_dir() -> Path:
    """The shipped codebooks: ``annotate.builtin_codebooks`` in an installed wheel (see
    pyproject.toml), the top-level ``codebooks/`` folder in a source checkout."""
    spec = importlib.util.find_spec("annotate.builtin_codebooks")
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(__file__).resolve().parent.parent / "codebooks"


BUILTIN_DIR = _builtin_dir()


def _shortcut_key(key: str) -> str:
    """A one-key shortcut must be a character the coding screen does not bind itself."""
    if not key.isprintable() or key.isspace():
        raise ValueError(
            f"{key!r} cannot be a shortcut: space, Tab, Enter, Esc, Backspace and other "
            "control keys are the coding screen's own (use a letter, digit or sign)"
        )
    return key


ShortcutKey = Annotated[str, Field(min_length=1, max_length=1), AfterValidator(_shortcut_key)]


class _Strict(BaseModel):
    # coerce_numbers_to_str: `key: 1` and `version: 1.0` in YAML mean the strings
    model_config = ConfigDict(extra="forbid", frozen=True, coerce_numbers_to_str=True)


class Option(_Strict):
    code: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_\-]+$")
    label: str = Field(min_length=1)
    key: ShortcutKey
    definition: str = ""
    examples: list[str] = []
    counterexamples: list[str] = []


class Question(_Strict):
    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_\-]+$")
    prompt: str = Field(min_length=1)
    kind: Literal["single", "multi", "yes_no_reasons", "text", "number"] = "single"
    options: list[Option] = Field(default=None, validate_default=True)  # type: ignore[assignment]
    min_chars: int | None = Field(default=None, ge=1)
    """A ``text`` question: the fewest characters an answer may have (spaces round it aside)."""
    min: float | None = None
    """A ``number`` question: the smallest answer allowed."""
    max: float | None = None
    """A ``number`` question: the largest answer allowed."""
    step: float | None = Field(default=None, gt=0)
    """A ``number`` question: answers are ``min`` (else 0) plus a whole number of steps."""
    allow_other: bool = False
    """Offer "Other" (with free text). Opt-in: the codes are the options unless declared."""
    other_key: ShortcutKey = "o"
    yes_key: ShortcutKey = "y"
    no_key: ShortcutKey = "n"
    applies_to: list[str] | None = None
    level: Literal["nominal", "ordinal", "interval", "ratio"] = "nominal"
    """Level of measurement of a single-choice question: the options' order gives the
    ordinal ranks; interval and ratio read the codes as numbers. Krippendorff's alpha uses
    it, and pairwise weighted kappas are added when it is not nominal."""
    grounded: list[str] | None = None
    """The codes of this question that `annotate report` counts as *grounded* (aligned
    with the partner): e.g. ``[t3]`` for the team goal, ``[yes]`` for a yes/no question."""

    @field_validator("options", mode="before")
    @classmethod
    def _options_for_kind(cls, value: object, info: ValidationInfo) -> object:
        """Options are required except by a free-text question, which has none."""
        kind = info.data.get("kind")
        if kind in TYPED_KINDS:
            if value:
                raise ValueError(f"a {kind} question has no options (remove them or change kind)")
            return []
        if value is None:
            raise PydanticCustomError("missing", "Field required")
        if isinstance(value, list) and not value:
            raise ValueError(f"a {kind or 'choice'} question needs at least one option")
        return value

    @model_validator(mode="after")
    def _text_fits(self) -> Question:
        if self.kind == "text" and self.allow_other:
            raise ValueError("a text question has no 'other' (remove allow_other)")
        if self.kind != "text" and self.min_chars is not None:
            raise ValueError("min_chars is for text questions (kind: text)")
        return self

    @model_validator(mode="after")
    def _number_fits(self) -> Question:
        bounds = {"min": self.min, "max": self.max, "step": self.step}
        if self.kind != "number":
            given = [k for k, v in bounds.items() if v is not None]
            if given:
                raise ValueError(f"{', '.join(given)}: for number questions (kind: number)")
            return self
        if self.allow_other:
            raise ValueError("a number question has no 'other' (remove allow_other)")
        for k, v in bounds.items():
            if v is not None and not math.isfinite(v):
                raise ValueError(f"{k} must be a finite number")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min:g} is above max {self.max:g}")
        if self.level in {"nominal", "ordinal"}:
            return self  # the default: read as interval (see numeric_level)
        if self.level == "ratio" and self.min is not None and self.min < 0:
            raise ValueError("level ratio needs non-negative numbers (min >= 0)")
        return self

    @property
    def numeric_level(self) -> str:
        """A number question's level for Krippendorff's alpha: ratio if declared, else
        interval."""
        return "ratio" if self.level == "ratio" else "interval"

    @model_validator(mode="after")
    def _grounded_fits(self) -> Question:
        if self.grounded is None:
            return self
        if self.kind not in ("single", "yes_no_reasons"):
            raise ValueError("grounded: only a single-choice or yes/no question has codes to count")
        unknown = [c for c in self.grounded if c not in self.codes]
        if unknown or not self.grounded:
            raise ValueError(
                f"grounded: '{unknown[0] if unknown else ''}' is not a code of this question "
                f"(codes: {', '.join(self.codes)})"
            )
        return self

    @model_validator(mode="after")
    def _level_fits(self) -> Question:
        if self.level == "nominal" or self.kind == "number":
            return self
        if self.kind != "single":
            raise ValueError(f"level {self.level} needs kind single (got {self.kind})")
        if self.allow_other:
            raise ValueError(f"level {self.level}: 'other' has no rank; remove allow_other")
        if self.level in {"interval", "ratio"}:
            for o in self.options:
                try:
                    number = float(o.code)
                except ValueError:
                    number = None
                if number is None or (self.level == "ratio" and number < 0):
                    what = "a non-negative number" if self.level == "ratio" else "a number"
                    raise ValueError(
                        f"level {self.level}: option code '{o.code}' is not {what} "
                        "(use level ordinal for ranked codes)"
                    )
        return self

    @property
    def codes(self) -> list[str]:
        """Every code an answer's ``value`` may hold, "Other" if declared (none for multi)."""
        if self.kind == "yes_no_reasons":
            return [YES, NO]
        if self.kind in ("multi", "text", "number"):
            return []
        return [o.code for o in self.options] + ([OTHER] if self.allow_other else [])

    @property
    def set_codes(self) -> list[str]:
        """Every code an answer's ``codes`` set may hold (multi and reasons)."""
        if self.kind in ("single", "text", "number"):
            return []
        return [o.code for o in self.options] + ([OTHER] if self.allow_other else [])

    def option(self, code: str) -> Option | None:
        return next((o for o in self.options if o.code == code), None)

    def applies(self, action_type: str) -> bool:
        return self.applies_to is None or action_type in self.applies_to


class Codebook(_Strict):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_\-]+$")
    title: str = Field(min_length=1)
    version: str = Field(min_length=1)
    instructions: str = ""
    applies_to: list[str] | None = None
    context_fields: list[str] = []
    """``meta`` paths shown beside each action on the coding screen and in the LLM prompt
    (``verifier``, ``request.target``): what a code depends on besides the words."""
    questions: list[Question] = Field(min_length=1)

    @cached_property  # the model is frozen; save_answers asks once per label
    def version_hash(self) -> str:
        data = self.model_dump(mode="json")
        if not data["context_fields"]:  # the default: older hashes stay the same
            del data["context_fields"]
        for q in data["questions"]:  # the defaults: older hashes stay the same
            if q.get("level") == "nominal":
                del q["level"]
            for key in ("min_chars", "min", "max", "step", "grounded"):
                if q.get(key) is None:
                    q.pop(key, None)
        canonical = json.dumps(data, sort_keys=True)
        return hashlib.sha256(canonical.encode()).hexdigest()[:12]

    def question(self, question_id: str) -> Question:
        for q in self.questions:
            if q.id == question_id:
                return q
        raise CodebookError(
            f"codebook '{self.name}' has no question '{question_id}'",
            hint="questions: " + ", ".join(q.id for q in self.questions),
        )

    def applies(self, action_type: str) -> bool:
        return self.applies_to is None or action_type in self.applies_to

    def questions_for(self, action_type: str) -> list[Question]:
        return [q for q in self.questions if q.applies(action_type)]


def _allowed_hint(allowed: list[str], unknown: list[str]) -> str:
    hint = "allowed: " + ", ".join(allowed)
    if OTHER in unknown:
        hint += "; the question does not declare Other (add `allow_other: true` to offer it)"
    return hint


@dataclass(frozen=True)
class Answer:
    """One coder's answer to one question about one action."""

    value: str | None
    codes: tuple[str, ...] = ()
    other_text: str | None = None

    def check(self, question: Question) -> None:
        """Raise :class:`CodebookError` if this answer is not allowed by ``question``."""
        if question.kind == "text":
            self._check_text(question)
            return
        if question.kind == "number":
            self._check_number(question)
            return
        if question.kind == "multi":
            if self.value is not None:
                raise CodebookError(f"question {question.id}: a multi-select answer has no value")
        elif self.value is None:
            raise CodebookError(f"question {question.id}: no value given")
        elif self.value not in question.codes:
            raise CodebookError(
                f"question {question.id}: unknown code '{self.value}'",
                hint=_allowed_hint(question.codes, [self.value]),
            )
        unknown = [c for c in self.codes if c not in question.set_codes]
        if unknown:
            raise CodebookError(
                f"question {question.id}: unknown code(s) {', '.join(map(repr, unknown))}",
                hint=_allowed_hint(question.set_codes, unknown),
            )
        if question.kind == "multi" and not self.codes:
            raise CodebookError(f"question {question.id}: choose at least one option")
        if question.kind == "yes_no_reasons" and self.value == YES and self.codes:
            raise CodebookError(f"question {question.id}: reasons are only given with 'no'")
        if question.kind == "yes_no_reasons" and self.value == NO and not self.codes:
            raise CodebookError(f"question {question.id}: 'no' needs at least one reason")
        if question.kind == "single" and self.codes:
            raise CodebookError(f"question {question.id}: a single-choice answer has no set")
        uses_other = self.value == OTHER or OTHER in self.codes
        if uses_other and not (self.other_text or "").strip():
            raise CodebookError(f"question {question.id}: 'other' needs a free-text description")

    def _check_number(self, question: Question) -> None:
        if self.codes or self.other_text is not None:
            raise CodebookError(f"question {question.id}: a number answer is the number alone")
        number = parse_number(self.value, question)
        if canonical_number(number) != self.value:
            raise CodebookError(
                f"question {question.id}: store the number as {canonical_number(number)!r} "
                f"(got {self.value!r}; see Answer.number)"
            )

    @classmethod
    def number(cls, text: str | float, question: Question) -> Answer:
        """The answer to a number question from what was typed or imported (``"0.80"``,
        ``0.8``, ``"8e-1"``): checked against min, max and step, stored canonically."""
        return cls(canonical_number(parse_number(text, question)))

    def _check_text(self, question: Question) -> None:
        text = (self.value or "").strip()
        if self.codes or self.other_text is not None:
            raise CodebookError(f"question {question.id}: a text answer is the text alone")
        if not text:
            raise CodebookError(f"question {question.id}: no text given")
        if question.min_chars is not None and len(text) < question.min_chars:
            raise CodebookError(
                f"question {question.id}: write at least {question.min_chars} characters "
                f"({len(text)} so far)"
            )


def canonical_number(number: float) -> str:
    """``3`` for 3.0, else the shortest text that reads back as the same float."""
    return str(int(number)) if number.is_integer() and abs(number) < 1e15 else repr(number)


def parse_number(text: str | float | None, question: Question) -> float:
    """A number question's answer as a float, or CodebookError saying what is wrong."""
    q = question.id
    if text is None or (isinstance(text, str) and not text.strip()):
        raise CodebookError(f"question {q}: no number given")
    if isinstance(text, bool):
        raise CodebookError(f"question {q}: {text!r} is not a number")
    try:
        number = float(text.strip() if isinstance(text, str) else text)
    except (TypeError, ValueError):
        raise CodebookError(f"question {q}: {str(text)!r} is not a number") from None
    if not math.isfinite(number):
        raise CodebookError(f"question {q}: {str(text)!r} is not a finite number")
    low, high = question.min, question.max
    if (low is not None and number < low) or (high is not None and number > high):
        bounds = f"{'' if low is None else f'{low:g}'} to {'' if high is None else f'{high:g}'}"
        raise CodebookError(f"question {q}: {number:g} is outside {bounds.strip()}")
    if question.step is not None:
        steps = (number - (low or 0.0)) / question.step
        if abs(steps - round(steps)) > 1e-9 * max(1.0, abs(steps)):
            raise CodebookError(
                f"question {q}: {number:g} is not a multiple of step {question.step:g}"
                + (f" from {low:g}" if low else "")
            )
    return number


@dataclass
class LoadedCodebook:
    codebook: Codebook
    text: str
    source: str = field(default="")


def _loc_to_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _other_key_problems(q: Question, qi: int) -> list[str]:
    """An ``other_key`` on a question that does not declare Other: Other is opt-in, so the
    file most likely counts on the old default (an omitted ``allow_other`` meant true)."""
    if "other_key" in q.model_fields_set and "allow_other" not in q.model_fields_set:
        return [
            f"questions[{qi}].other_key: set, but the question does not declare Other "
            "(Other is opt-in): add `allow_other: true`, or remove other_key"
        ]
    return []


def _semantic_problems(cb: Codebook) -> list[str]:
    problems: list[str] = []
    seen_q: dict[str, int] = {}
    for qi, q in enumerate(cb.questions):
        if q.id in seen_q:
            problems.append(f"questions[{qi}].id: duplicate question id '{q.id}'")
        seen_q[q.id] = qi
        problems += _other_key_problems(q, qi)
        specials = [("other_key", q.other_key)] if q.allow_other else []
        if q.kind == "yes_no_reasons":
            specials += [("yes_key", q.yes_key), ("no_key", q.no_key)]
        reserved: dict[str, str] = {}
        for name, key in specials:
            if key in reserved:
                problems.append(f"questions[{qi}].{name}: duplicate key '{key}'")
            reserved[key] = name
        seen_keys: dict[str, str] = {}
        seen_codes: set[str] = set()
        for oi, opt in enumerate(q.options):
            where = f"questions[{qi}].options[{oi}]"
            if opt.code in seen_codes:
                problems.append(f"{where}.code: duplicate code '{opt.code}'")
            if opt.code in {OTHER, YES, NO}:
                problems.append(f"{where}.code: '{opt.code}' is reserved")
            seen_codes.add(opt.code)
            if opt.key in seen_keys or opt.key in reserved:
                problems.append(f"{where}.key: duplicate key '{opt.key}'")
            seen_keys[opt.key] = opt.code
        for t in q.applies_to or []:
            if not t.strip():
                problems.append(f"questions[{qi}].applies_to: an action type cannot be empty")
    for t in cb.applies_to or []:
        if not t.strip():
            problems.append("applies_to: an action type cannot be empty")
    return problems


def _declare_other_by_default(data: dict) -> None:
    """The old default: a question that does not say ``allow_other`` offers Other."""
    questions = data.get("questions")
    for q in questions if isinstance(questions, list) else []:
        if isinstance(q, dict):
            q.setdefault("allow_other", True)


def parse_codebook(text: str, source: str, *, other_by_default: bool = False) -> Codebook:
    """Validate YAML text; every mistake becomes ``source: path: problem``.

    ``other_by_default`` reads the text as annotate did before schema 7, when a question
    without ``allow_other`` offered Other: the codebook versions stored then keep their
    meaning, their codes and their version hash.
    """
    label = Path(source).name
    data = load_yaml(text, label)
    if not isinstance(data, dict):
        raise CodebookError(f"{label}: a codebook must be a mapping with name, title, questions")
    if other_by_default:
        _declare_other_by_default(data)
    try:
        cb = Codebook.model_validate(data)
    except ValidationError as exc:
        lines = [f"{label}: {_loc_to_path(e['loc'])}: {e['msg']}" for e in exc.errors()]
        raise CodebookError(lines[0], details=lines) from exc
    problems = [f"{label}: {p}" for p in _semantic_problems(cb)]
    if problems:
        raise CodebookError(problems[0], details=problems)
    return cb


def load_codebook_file(path: Path) -> LoadedCodebook:
    try:
        check_size(path.stat().st_size, path.name)  # before reading a huge file whole
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CodebookError(f"{path}: cannot read ({exc.strerror})") from exc
    codebook = parse_codebook(text, str(path))
    if codebook.name != path.stem:
        # Labels are stored under the codebook's name: a copy that kept its original's
        # name would mix its labels with the original's.
        raise CodebookError(
            f"{path.name}: name: '{codebook.name}' differs from the file name",
            hint=f"set `name: {path.stem}` or rename the file to {codebook.name}{path.suffix}",
        )
    return LoadedCodebook(codebook, text, str(path))


def codebook_dirs() -> list[Path]:
    """Where codebooks are looked up by name: ./codebooks first, then the shipped ones."""
    dirs = [Path.cwd() / "codebooks", BUILTIN_DIR]
    unique: list[Path] = []
    for d in dirs:
        if d.is_dir() and d.resolve() not in [u.resolve() for u in unique]:
            unique.append(d)
    return unique


def available_codebooks() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for d in codebook_dirs():
        for p in sorted(d.glob("*.yaml")):
            found.setdefault(p.stem, p)
    return found


def find_codebook(name_or_path: str) -> LoadedCodebook:
    """Resolve a codebook by file path or by name (``traum`` -> ``codebooks/traum.yaml``)."""
    path = Path(name_or_path)
    if path.suffix in {".yaml", ".yml"} or path.exists():
        return load_codebook_file(path)
    found = available_codebooks()
    if name_or_path not in found:
        raise CodebookError(
            f"unknown codebook '{name_or_path}'",
            hint="choices: " + (", ".join(sorted(found)) or "none found in ./codebooks"),
        )
    return load_codebook_file(found[name_or_path])
