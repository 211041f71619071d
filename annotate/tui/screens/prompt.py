"""A one-line text prompt: the text of an "other" answer, a note, an item number."""

from __future__ import annotations

from typing import ClassVar

from textual import on
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
