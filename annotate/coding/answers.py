"""Answers as a coder reads them: the codebook's labels, not its codes.

The coding screen (the item's questions above the options) and the adjudication screen
(every coder's answer) both show an answer as ``Working toward a shared understanding``,
``No: Different understanding of the task goal + Other (map glitch)``, never as ``t2`` or
``no: n1+other``. Reports, logs and errors write an answer by its codes, one way
(:func:`codes_text`).
"""

from __future__ import annotations

from collections.abc import Iterable

from annotate.codebook import NO, OTHER, YES, Answer, Question


def code_label(question: Question, code: str, other_text: str | None = None) -> str:
    """One code of ``question`` by its label; "Other" with its text."""
    if code == OTHER:
        return f"Other ({other_text})" if other_text else "Other"
    if question.kind == "yes_no_reasons" and code in (YES, NO):
        return "Yes" if code == YES else "No"
    option = question.option(code)
    return option.label if option is not None else code


def answer_label(question: Question, answer: Answer) -> str:
    """The whole answer: its value, then its reasons (or options), by their labels."""
    parts: list[str] = []
    if answer.value is not None:
        parts.append(code_label(question, answer.value, answer.other_text))
    codes = [code_label(question, c, answer.other_text) for c in answer.codes]
    if codes:
        joined = " + ".join(codes)
        parts = [f"{parts[0]}: {joined}"] if parts else [joined]
    return parts[0] if parts else "-"


def codes_text(value: str | None, codes: Iterable[str] = (), other_text: str | None = None) -> str:
    """An answer by its codes, as every report writes it: ``Initiate``, ``other (greeting)``,
    ``no: n1+n3`` ("" when there is no answer)."""
    text = value or ""
    joined = "+".join(codes)
    if joined:
        text = (text + ": " if text else "") + joined
    if other_text:
        text += f" ({other_text})"
    return text


def answer_text(answer: Answer) -> str:
    """:func:`codes_text` of an :class:`Answer`."""
    return codes_text(answer.value, answer.codes, answer.other_text)
