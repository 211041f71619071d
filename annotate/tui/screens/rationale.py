"""The answer to a free-text question (a rationale: "what was I trying to do").

Enter stores the text once it has the question's ``min_chars`` characters (a counter says
how many so far); Escape leaves the question unanswered. The field sits at the top, under
the status bar and over the earliest turns, so that the item, the anchor line and the
question stay in view.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from annotate.codebook import Answer, Question
from annotate.coding.choices import Choice
from annotate.errors import CodebookError


def text_choice(question: Question) -> Choice:
    """What the definition screen (``?``) shows for a free-text question."""
    least = f" (at least {question.min_chars} characters)" if question.min_chars else ""
    return Choice(
        "⏎",
        question.id,
        "Free text",
        "value",
        f"Press Enter and write the answer in your own words{least}, then Enter to save it.",
    )


class TextAnswerPrompt(ModalScreen[str | None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "cancel")]
    DEFAULT_CSS = """
    TextAnswerPrompt { align: center top; }
    TextAnswerPrompt > #dialog {
        width: 100%; height: auto; border: round $accent; padding: 0 1; background: $surface;
    }
    TextAnswerPrompt #text-title { text-style: bold; width: 1fr; }
    TextAnswerPrompt #text-hint { color: $text-muted; }
    """

    def __init__(self, question: Question, title: str, *, value: str = "") -> None:
        super().__init__()
        self.question = question
        self.title_text = title
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.title_text, id="text-title")
            number = self.question.kind == "number"
            yield Input(
                self.value, placeholder=_range(self.question) if number else "in your own words",
                id="text-input", type="number" if number else "text",
            )  # fmt: skip
            yield Label(self._hint(self.value), id="text-hint")

    def on_mount(self) -> None:
        self.query_one("#dialog").styles.margin = (self._below_status(), 0, 0, 0)
        self.query_one("#text-input", Input).focus()

    def _below_status(self) -> int:
        """The rows the screen beneath gives its status bar (the coder, the progress): the
        field opens under it."""
        stack = self.app.screen_stack
        beneath = stack[-2] if len(stack) > 1 and stack[-1] is self else None
        if beneath is None:
            return 0
        found = beneath.query("#status")
        return found.first().region.bottom if found else 0

    def _hint(self, text: str, *, short: bool = False) -> str:
        if self.question.kind == "number":
            return f"a number, {_range(self.question)} · Enter: save · Esc: cancel"
        least = self.question.min_chars or 1
        n = len(text.strip())
        count = f"{n} characters" + (f" (at least {least})" if least > 1 else "")
        if short:
            return f"Write at least {least} characters first ({n} so far) · Esc: cancel"
        return f"{count} · Enter: save · Esc: cancel"

    @on(Input.Changed)
    def _count(self, event: Input.Changed) -> None:
        self.query_one("#text-hint", Label).update(self._hint(event.value))

    @on(Input.Submitted)
    def submit(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if self.question.kind == "number":
            try:
                Answer.number(text, self.question)
            except CodebookError as exc:  # said in the field; the prompt stays open
                self.query_one("#text-hint", Label).update(f"{exc.message} · Esc: cancel")
                return
            self.dismiss(text)
            return
        if len(text) < (self.question.min_chars or 1):
            self.query_one("#text-hint", Label).update(self._hint(text, short=True))
            return
        self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)


def _range(question: Question) -> str:
    """``0 to 1, step 0.05`` (what a number question takes)."""
    low = "" if question.min is None else f"{question.min:g}"
    high = "" if question.max is None else f"{question.max:g}"
    span = f"{low} to {high}".strip() if low or high else "any number"
    return span + (f", step {question.step:g}" if question.step else "")
