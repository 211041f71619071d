"""Help screens: every key (F1), and the highlighted option's definition with the
codebook's instructions (?)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from annotate.codebook import Codebook, Question
from annotate.coding.choices import Choice
from annotate.coding.keys import COMMANDS
from annotate.coding.session import CodingSession
from annotate.render.prose import reflow
from annotate.tui.widgets.keybar import key_label


def key_table(
    options: Iterable[tuple[str, str]],
    keys: Iterable[tuple[str, str]],
    commands: Iterable[tuple[str, str]],
) -> RenderableType:
    """A screen's keys, as (key, what it does): the question's options, a blank row, the
    screen's own keys (as sentences), its commands, then Ctrl+Q."""
    table = Table(show_header=True, header_style="bold", box=None, padding=(0, 2), expand=True)
    table.add_column("key", no_wrap=True)
    table.add_column("does", ratio=1)
    for key, does in options:
        table.add_row(Text(key, style="bold"), does)
    table.add_row("", "")
    for key, does in keys:
        table.add_row(Text(key, style="bold"), sentence(does))
    for key, does in commands:
        table.add_row(Text(key, style="bold"), does)
    table.add_row(Text("Ctrl+Q", style="bold"), "Quit from anywhere")
    return table


def keys_table(session: CodingSession) -> RenderableType:
    q = session.question
    return key_table(
        ((c.key, f"{q.id}: {c.label}") for c in session.choices()),
        ((k.keys, k.does) for k in session.question_keys),
        ((key_label(session.keys[c.id]), c.description) for c in COMMANDS),
    )


def sentence(text: str) -> str:
    """Every row of the help starts with a capital letter."""
    return text[:1].upper() + text[1:]


def _bullets(lines: tuple[str, ...]) -> Table:
    """A bulleted list whose wrapped lines hang under the text, not under the bullet."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(width=3, justify="right")
    grid.add_column(ratio=1)
    for line in lines:
        grid.add_row("•", line)
    return grid


class HelpScreen(ModalScreen[None]):
    """All keys of a screen (the coding screen's: those of the current question first)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,f1,q", "close", "close"),
    ]

    def __init__(self, keys: RenderableType) -> None:
        super().__init__()
        self.keys = keys

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Static(
                Group(
                    Text("Keys", style="bold underline"),
                    Text(
                        "Every answer is saved the moment it is given; quitting loses nothing.",
                        style="italic",
                    ),
                    Text(""),
                    self.keys,
                    Text(""),
                    Text("Esc: close", style="dim"),
                )
            )

    def action_close(self) -> None:
        self.dismiss(None)


class DefinitionScreen(ModalScreen[None]):
    """The highlighted option's definition and examples, then the codebook's instructions.

    ←/→ or an option's key show another option; Esc or ? closes.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,question_mark,q", "close", "close"),
        Binding("left", "step(-1)", "previous option"),
        Binding("right", "step(1)", "next option"),
    ]

    def __init__(
        self, choices: tuple[Choice, ...], question: Question, codebook: Codebook, index: int = 0
    ) -> None:
        super().__init__()
        self.choices = choices
        self.question = question
        self.codebook = codebook
        self.index = index

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="definition-body"):
            yield Static(self._content(), id="definition")

    def _choice(self) -> Choice:
        return self.choices[self.index % len(self.choices)]

    def _content(self) -> RenderableType:
        c = self._choice()
        same = c.code.casefold() == c.label.casefold()  # "Initiate", not "Initiate (Initiate)"
        parts: list[RenderableType] = [
            Text.assemble(
                (f" {c.key} ", "bold reverse"),
                " ",
                (c.label, "bold"),
                ("" if same else f"  ({c.code})", "dim"),
                ("   ←/→ other options · Esc close", "dim italic"),
            ),
            Text(self.question.prompt, style="italic"),
            Text(""),
            Text(c.definition or "The codebook gives no definition for this choice."),
        ]
        if c.examples:
            parts += [Text(""), Text("Examples", style="bold"), _bullets(c.examples)]
        if c.counterexamples:
            parts += [Text(""), Text("Not this (counterexamples)", style="bold")]
            parts.append(_bullets(c.counterexamples))
        cb = self.codebook
        parts += [
            Text(""),
            Text(f"Instructions: {cb.title} (v{cb.version})", style="bold underline"),
            reflow(cb.instructions or "This codebook has no instructions."),
        ]
        return Group(*parts)

    def _show(self) -> None:
        self.query_one("#definition", Static).update(self._content())
        self.query_one("#definition-body", VerticalScroll).scroll_home(animate=False)

    def action_step(self, delta: int) -> None:
        self.index = (self.index + delta) % len(self.choices)
        self._show()

    def on_key(self, event: events.Key) -> None:
        for i, c in enumerate(self.choices):
            if event.character == c.key:
                event.stop()
                self.index = i
                self._show()
                return

    def action_close(self) -> None:
        self.dismiss(None)
