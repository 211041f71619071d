"""A one-line text prompt: the text of an "other" answer, a note, an item number."""

from __future__ import annotations

from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class TextPrompt(ModalScreen[str | None]):
    """Enter returns the text; Escape returns None (nothing is stored)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "cancel")]

    def __init__(
        self,
        title: str,
        *,
        value: str = "",
        placeholder: str = "",
        hint: str = "Enter: save · Esc: cancel",
        required: bool = False,
        integer: bool = False,
    ) -> None:
        super().__init__()
        self.title_text = title
        self.value = value
        self.placeholder = placeholder
        self.hint = hint
        self.required = required
        self.integer = integer

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.title_text, id="prompt-title")
            yield Input(
                self.value,
                placeholder=self.placeholder,
                type="integer" if self.integer else "text",
                id="prompt-input",
            )
            yield Label(self.hint, id="prompt-hint")

    def on_key(self, event: events.Key) -> None:
        """Text typed before the field has the focus (right after the key that opened the
        prompt) still goes into the field, never to the screen below."""
        field = self.query_one("#prompt-input", Input)
        if not field.has_focus and event.is_printable and event.character:
            event.stop()
            field.focus()
            field.insert_text_at_cursor(event.character)

    @on(Input.Submitted)
    def submit(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value
        if self.required and not text.strip():
            self.query_one("#prompt-hint", Label).update(
                "A short description is required (Esc: cancel)."
            )
            return
        self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)
