"""The coding screen's keys: the session commands and their keys (moved aside when a codebook
uses their letter), and the rows of the help and the key bar for a codebook's questions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from annotate.codebook import Codebook


@dataclass(frozen=True)
class Command:
    """A session command and its key (a Textual key name); ``char`` is its printable form."""

    id: str
    key: str
    label: str
    description: str
    char: str | None = None
    fallback: str | None = None


COMMANDS: tuple[Command, ...] = (
    Command("prev", "left", "back", "Previous item"),
    Command("next", "right", "next", "Next item"),
    Command("undo", "backspace", "undo", "Undo the last answer or skip"),
    Command("skip", "s", "skip", "Skip this item (come back to it later)", "s", "ctrl+s"),
    Command("flag", "f", "flag", "Flag this item for discussion (again: unflag)", "f", "ctrl+f"),
    Command("note", "m", "note", "Write a note on this item", "m", "f2"),
    Command("goto", "g", "go to", "Go to item number ...", "g", "ctrl+g"),
    Command(
        "uncoded",
        "j",
        "next uncoded",
        "Jump to the next item neither coded nor skipped (then to the skipped ones)",
        "j",
        "f3",
    ),
    Command("define", "question_mark", "define", "Definition, examples, instructions", "?", "f4"),
    Command("help", "f1", "keys", "All keys"),
    Command("quit", "q", "quit", "Quit (everything answered is already saved)", "q", "ctrl+q"),
)


@dataclass(frozen=True)
class QuestionKey:
    """Keys of the coding screen besides the commands: a row of the help (F1) and, unless
    ``bar_keys`` is None, an entry of the key bar (a click on it runs ``action``).

    ``when``: the codebooks the row is for ("toggles": a question takes several choices,
    see :func:`has_toggles`; "questions": more than one question). ``gates``: a screen
    action bound only where the row is for.
    """

    keys: str
    does: str
    bar_keys: str | None = None  # None: in the help only
    bar_label: str = ""
    action: str = ""  # run by a click in the key bar
    when: Literal["always", "toggles", "no toggles", "questions"] = "always"
    gates: str | None = None


# help: keys, what they do / key bar: keys, label, action on a click
QUESTION_KEYS: tuple[QuestionKey, ...] = (
    QuestionKey("↑ ↓", "highlight an option"),
    QuestionKey("Enter", "choose the highlighted option; confirm the reasons",
                "↑↓ Enter", "choose", "enter", when="toggles"),
    QuestionKey("Space", "toggle the highlighted reason (or choose the highlighted option)",
                "Space", "toggle", "space", when="toggles"),
    QuestionKey("Esc", "leave the reasons of a 'no' unanswered",
                "Esc", "cancel", "cancel", when="toggles", gates="cancel"),
    QuestionKey("Enter Space", "choose the highlighted option",
                "↑↓ Enter/Space", "choose", "enter", when="no toggles"),
    QuestionKey("Tab ⇧Tab", "next / previous question of this item",
                "Tab/⇧Tab", "question", "question(1)", when="questions", gates="question"),
    QuestionKey("PgUp PgDn", "scroll the context (PgUp at the top shows earlier turns)",
                "PgUp/PgDn", "scroll", "context_up"),
)  # fmt: skip


def question_keys(codebook: Codebook) -> tuple[list[QuestionKey], set[str]]:
    """The rows of :data:`QUESTION_KEYS` for this codebook, and the screen actions that
    stay unbound (gated by a row not for it)."""
    toggles = has_toggles(codebook)
    applies = {
        "always": True,
        "toggles": toggles,
        "no toggles": not toggles,
        "questions": len(codebook.questions) > 1,
    }
    rows = [k for k in QUESTION_KEYS if applies[k.when]]
    unbound = {k.gates for k in QUESTION_KEYS if k.gates and not applies[k.when]}
    return rows, unbound


def has_toggles(codebook: Codebook) -> bool:
    """Whether a question takes several choices (reasons of a 'no', multi-select)."""
    return any(q.kind in ("yes_no_reasons", "multi") for q in codebook.questions)


def codebook_keys(codebook: Codebook) -> set[str]:
    """Every character a question of this codebook uses as a shortcut."""
    keys: set[str] = set()
    for q in codebook.questions:
        keys.update(o.key for o in q.options)
        if q.allow_other:
            keys.add(q.other_key)
        if q.kind == "yes_no_reasons":
            keys.update((q.yes_key, q.no_key))
    return keys


def command_keys(codebook: Codebook) -> dict[str, str]:
    """Command id -> key; a command whose letter the codebook uses moves to its fallback."""
    taken = codebook_keys(codebook)
    return {c.id: (c.fallback if c.char in taken and c.fallback else c.key) for c in COMMANDS}
