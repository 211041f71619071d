"""Chat messages for one item: codebook and worked examples first, the target last.

The system message (codebook instructions, every option's code, label, definition and
examples, the answer format) and the few-shot pairs (user: an item with its context,
assistant: the gold answer as JSON) form a *stable prefix* that is byte-identical for every
request of a run, so providers' prompt caching applies. The target item comes last, shown
with the same preceding context as the shots and as the human coders saw it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from annotate.codebook import Answer, Codebook, Question
from annotate.models import Action, describe_with
from llm_coder.records import Message, canonical_json, sha256_json
from llm_coder.schema import answer_to_json

DEFAULT_CONTEXT = 8  # what `annotate code` shows before the item by default (--context 8)
TARGET_MARKER = "Action to code:"


@dataclass(frozen=True)
class Item:
    """An action to code, the actions before it in its session (oldest first), the ones
    after it (``--lookahead``), and the ``meta`` fields shown beside each (``--show``, else
    the codebook's ``context_fields``): what the coding screen shows."""

    action: Action
    context: tuple[Action, ...] = ()
    after: tuple[Action, ...] = ()
    show: tuple[str, ...] = ()


@dataclass(frozen=True)
class Shot:
    """A worked example: an item with its gold answers."""

    item: Item
    answers: Mapping[str, Answer]


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split()) or "(no content)"


def render_action(action: Action, show: Sequence[str] = ()) -> str:
    """``[#12 +3.0s] guide, message: go left`` — one line per action (role, else participant),
    with the fields of ``show`` it has: ``... pickup(onion_1)  [verifier: not reachable]``."""
    when = ""
    if action.elapsed_s is not None:
        when = f" +{action.elapsed_s:.1f}s"
    who = action.role or action.participant or "?"
    # the coding screen's wording: a message's text, "[draws a stroke]" for a drawing...
    text = _one_line(describe_with(action, show))
    return f"[#{action.seq}{when}] {who}, {action.action_type}: {text}"


def render_item(item: Item) -> str:
    """The user message for an item: session, context, then the target action."""
    a = item.action
    head = f"Session {a.session}" + (f" (condition: {a.condition})" if a.condition else "")
    lines = [head]
    show = item.show
    if item.context:
        lines.append(f"Context (the {len(item.context)} actions before it, oldest first):")
        lines.extend(render_action(c, show) for c in item.context)
    else:
        lines.append("Context: none (first action of the session).")
    lines.append(TARGET_MARKER)
    lines.append(render_action(a, show))
    if item.after:
        lines.append(f"What followed (the {len(item.after)} actions after it):")
        lines.extend(render_action(c, show) for c in item.after)
    return "\n".join(lines)


def _answer_format(q: Question) -> str:
    other = (
        ', "other_text": null}  (other_text: a short description, only when you choose "other")'
        if q.allow_other
        else "}"
    )
    if q.kind == "text":
        return f'"{q.id}": {{"text": "<free text>"}}'
    if q.kind == "single":
        return f'"{q.id}": {{"code": "<one code>"{other}'
    if q.kind == "multi":
        return f'"{q.id}": {{"codes": ["<code>", ...]{other}'
    return (
        f'"{q.id}": {{"answer": "yes" or "no", "reasons": ["<code>", ...]{other} '
        "(one or more reasons after no, none after yes)"
    )


def render_codebook(codebook: Codebook) -> str:
    """The system message: what to code, every option, and the exact answer format."""
    parts = [
        f'You code actions from a collaboration log with the codebook "{codebook.title}" '
        f"(version {codebook.version}). Each item shows the session, the actions before the "
        "target as context, and the one action to code.",
    ]
    if codebook.instructions.strip():
        parts.append("Instructions:\n" + codebook.instructions.strip())
    for q in codebook.questions:
        kind = {
            "single": "choose exactly one code",
            "multi": "choose one or more codes",
            "yes_no_reasons": "answer yes or no; after no, choose one or more reasons",
            "text": "answer in your own words"
            + (f", at least {q.min_chars} characters" if q.min_chars else ""),
        }[q.kind]
        scope = f" (only for {', '.join(q.applies_to)} actions)" if q.applies_to else ""
        lines = [f"Question {q.id}{scope}: {q.prompt.strip()} ({kind})"]
        for opt in q.options:
            line = f"- {opt.code}: {opt.label}"
            if opt.definition.strip():
                line += f". {' '.join(opt.definition.split())}"
            # examples quote their utterances themselves ("Guide: \"go left\"")
            if opt.examples:
                line += " Examples: " + "; ".join(opt.examples) + "."
            if opt.counterexamples:
                line += " Not this code: " + "; ".join(opt.counterexamples) + "."
            lines.append(line)
        if q.allow_other:
            lines.append("- other: none of the above; describe it briefly in other_text.")
        parts.append("\n".join(lines))
    fmt = ",\n  ".join(_answer_format(q) for q in codebook.questions)
    codes_only = "using only the codes listed above"
    if any(q.kind == "text" for q in codebook.questions):
        codes_only += " (free text where a question asks for it)"
    parts.append(
        "Reply with one JSON object and nothing else, with a key for every question that "
        f"applies to the action, {codes_only}:\n{{\n  " + fmt + "\n}"
    )
    return "\n\n".join(parts)


def shot_reply(shot: Shot, questions: Sequence[Question]) -> str:
    answers = {
        q.id: answer_to_json(q, shot.answers[q.id]) for q in questions if q.id in shot.answers
    }
    return canonical_json(answers)


def prefix_messages(codebook: Codebook, shots: Sequence[Shot]) -> list[Message]:
    """System message plus one user/assistant pair per shot: identical for every request."""
    messages: list[Message] = [{"role": "system", "content": render_codebook(codebook)}]
    for shot in shots:
        questions = codebook.questions_for(shot.item.action.action_type)
        messages.append({"role": "user", "content": render_item(shot.item)})
        messages.append({"role": "assistant", "content": shot_reply(shot, questions)})
    return messages


def prompt_hash(prefix: Sequence[Message]) -> str:
    return sha256_json(list(prefix))


def target_message(item: Item) -> Message:
    return {"role": "user", "content": render_item(item)}


def repair_messages(raw_reply: str, problem: str) -> list[Message]:
    """Appended after an unusable reply for the one retry it gets."""
    return [
        {"role": "assistant", "content": raw_reply},
        {
            "role": "user",
            "content": (
                f"That reply cannot be used: {problem}. Reply again with only the JSON object, "
                "using only the codes listed in the codebook."
            ),
        },
    ]
