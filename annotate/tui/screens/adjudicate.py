"""The adjudication screen (`annotate adjudicate`): one case at a time, one key per decision.

A thin layer over :class:`annotate.reliability.adjudication.AdjudicationSession`, which holds every
decision and writes gold through the store; this module only draws the case (the item in
its conversation, every coder's answer and note, the codebook's keys) and forwards keys.
The conversation is the coding screen's context box (:class:`ContextView`, the same rows,
times and session title): the item on its last row, the turns before it above, whatever
height the answers and options leave it; PgUp brings earlier turns, PgDn the turns after.
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.events import Key
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Static

from annotate.codebook import OTHER
from annotate.coding.answers import answer_label
from annotate.coding.choices import question_choices
from annotate.coding.context import item_context_rows, time_in_session
from annotate.coding.keys import COMMANDS, command_keys
from annotate.reliability.adjudication import AdjudicationSession, Feedback, GoldPlan
from annotate.render.terminal import for_display, shown_line
from annotate.store import Store
from annotate.store.coding import CodingQueries
from annotate.tui.screen_keys import (
    CONTEXT_BINDINGS,
    OPTION_BINDINGS,
    closing_entries,
    command_bindings,
    moved_keymap,
    moving_entry,
)
from annotate.tui.screens.coding import _clock
from annotate.tui.screens.help import DefinitionScreen, HelpScreen, key_table
from annotate.tui.screens.prompt import TextPrompt
from annotate.tui.screens.rationale import TextAnswerPrompt
from annotate.tui.widgets.context import ContextView
from annotate.tui.widgets.keybar import KeyBar, key_label

CONTEXT_BEFORE = 8
CONTEXT_AFTER = 2
"""Turns after the item that PgDn brings (the box shows the item and the turns before it)."""


class OtherPrompt(TextPrompt):
    """The text of an "Other" answer: Enter stores it (never empty), Esc cancels."""

    def __init__(self, title: str) -> None:
        super().__init__(
            title,
            placeholder="a short description",
            hint="Enter: store · Esc: cancel",
            required=True,
        )


BINDING_PREFIX = "adjudicate."
SCREEN_COMMANDS = ("prev", "next", "define", "help", "quit")  # of code's commands, those here


class AdjudicationScreen(Screen[None]):
    """The keys of `annotate code` where they mean the same: option keys, ↑↓ Enter/Space,
    Esc, ←/→, PgUp/PgDn, ? (definitions), F1 (all keys), q (quit)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *command_bindings(BINDING_PREFIX, SCREEN_COMMANDS),
        *OPTION_BINDINGS,
        *CONTEXT_BINDINGS,
    ]

    def __init__(self, session: AdjudicationSession) -> None:
        super().__init__()
        self.session = session
        self.keys = command_keys(session.plan.codebook)
        self.highlight = 0
        self.message: Text | None = None
        self._timer: Timer | None = None
        self.queries = CodingQueries(session.store.db)
        self._more = 0
        """Earlier turns asked for with PgUp on this case."""
        self._after = False
        """Whether PgDn brought the turns after the item on this case."""
        self._shown: tuple[int, int, bool] | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        yield ContextView(id="context")
        yield Static(id="answers")
        yield Static(id="question")
        yield KeyBar(self._key_entries(), id="keys")

    def _key_entries(self) -> list[tuple[str, str, str]]:
        return [
            moving_entry(self.keys),
            ("↑↓ Enter", "choose", "screen.enter"),
            ("Space", "toggle", "screen.space"),
            ("Esc", "cancel", "screen.cancel"),
            ("PgUp/PgDn", "scroll", "screen.context_up"),
            *closing_entries(self.keys),
        ]

    def on_mount(self) -> None:
        self.show_case()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Escape only means something while a set is being put together."""
        if action == "cancel":
            return self.session.toggles is not None
        return True

    # -- drawing --------------------------------------------------------------------------

    def show_case(self) -> None:
        s = self.session
        case = s.case
        self.query_one("#status", Static).update(self._status())
        self._show_context()
        self.query_one("#answers", Static).update(self._answers())
        question = self.query_one("#question", Static)
        question.border_title = shown_line(f"{case.question.id}: {case.question.prompt}")
        self.highlight = min(self.highlight, len(s.choices()) - 1)
        question.update(self._choices())
        self.refresh_bindings()

    def _show_context(self) -> None:
        """The item among the turns before it (and after it, once PgDn asked), drawn again
        only when the case or the turns asked for change. The box keeps its bottom in view
        through every relayout (the answers and options change height from case to case)."""
        s = self.session
        if self._shown is not None and self._shown[0] != s.index:
            self._more, self._after = 0, False
        where = (s.index, self._more, self._after)
        context = self.query_one(ContextView)
        if where != self._shown:
            self._shown = where
            before = CONTEXT_BEFORE + self._more
            after = CONTEXT_AFTER if self._after else 0
            show = s.plan.codebook.context_fields  # the meta fields `code` shows by default
            rows = item_context_rows(s.store, self.queries, s.case.action, before, after, show=show)
            context.show(rows, wanted_before=before)
        context.border_title = self._context_title()

    def _context_title(self) -> str:
        """As the coding screen names it: the session, its condition, the item's time."""
        s = self.session
        action = s.case.action
        bits = [f"session {action.meta.get('session_name') or action.session[:12]}"]
        if action.condition:
            bits.append(action.condition)
        at = time_in_session(self.queries, action)
        bits.append(f"case {s.index + 1}" + (f" at {_clock(at)}" if at is not None else ""))
        return shown_line(" · ".join(bits))

    def flash(self, message: str, *, warning: bool = False, seconds: float = 4.0) -> None:
        """A short message in the status lines, never over the options."""
        self.message = Text("» " + shown_line(message), style="bold yellow" if warning else "bold")
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(seconds, self._clear)
        self.query_one("#status", Static).update(self._status())

    def _clear(self) -> None:
        self.message = None
        self._timer = None
        self.query_one("#status", Static).update(self._status())

    def _status(self) -> RenderableType:
        s = self.session
        case = s.case
        grid = Table.grid(expand=True)
        grid.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
        grid.add_column(justify="right", no_wrap=True)
        grid.add_row(
            Text.assemble(
                ("adjudicate", "bold"),
                f" │ {shown_line(s.plan.codebook.name)} │ by ",
                (shown_line(s.adjudicator), "bold"),
                f" │ case {s.index + 1} of {s.n}",
            ),
            Text(f"decided {s.n_decided}/{s.n}"),
        )
        state = "decided" if case.decided else "to decide"
        why = case.short_reason  # the votes, by code, are in the table below
        second = self.message or Text(shown_line(why), style="italic")
        grid.add_row(second, Text(state, style="italic"))
        return grid

    def _answers(self) -> RenderableType:
        case = self.session.case
        table = Table(box=None, pad_edge=False, expand=True, show_header=True)
        table.add_column("Coder", style="bold", no_wrap=True)
        table.add_column("Answer", ratio=1)
        notes = any(a.note for a in case.answers) or case.gold is not None
        if notes:
            table.add_column("Note", ratio=2)
        q = case.question
        for a in case.answers:
            who = a.coder + (" ⚑" if a.flagged else "")
            shown = answer_label(q, a.answer) if a.answer is not None else a.text
            cells = [Text(shown_line(who)), Text(for_display(shown))]
            note = Text(for_display(a.note or ""), style="italic")
            table.add_row(*cells, *([note] if notes else []))
        if case.gold is not None:
            how = case.gold_meta.get("method", case.gold_meta.get("source", "?"))
            by = case.gold_meta.get("adjudicator")
            table.add_row(
                Text("gold", style="bold green"),
                Text(for_display(answer_label(q, case.gold)), style="green"),
                Text(shown_line(f"{how}" + (f" by {by}" if by else "")), style="italic"),
            )
        return table

    def _choices(self) -> RenderableType:
        """The codebook's keys with the labels `code` shows, wrapped under themselves;
        two columns when there are many (80x24 stays usable)."""
        s = self.session
        toggling = s.toggles is not None
        cells: list[tuple[Text, Text, Text]] = []
        for i, c in enumerate(s.choices()):
            on = s.is_on(c)
            if c.role == "toggle" and (toggling or s.case.question.kind == "multi"):
                mark = "[x]" if on else "[ ]"
            else:
                mark = " ● " if on else "   "
            click = Style(meta={"@click": f"screen.choose({c.key!r})"})
            here = i == self.highlight
            label_style = Style(bold=on, reverse=here) + click
            key = Text.assemble(("▸" if here else " ", "bold"), (f" {c.key} ", "bold reverse"))
            key.stylize(click)
            text = shown_line(c.label)
            if c.code == OTHER and s.toggles is not None and on and s.toggle_other:
                text = shown_line(f"Other: {s.toggle_other}")
            label = Text(text, style=label_style)
            cells.append((key, Text(mark, style=click), label))
        columns = 2 if len(cells) > 4 else 1
        grid = Table.grid(expand=True, padding=(0, 0))
        for k in range(columns):
            grid.add_column(width=5 if k == 0 else 6, no_wrap=True, justify="right")
            grid.add_column(width=4, no_wrap=True)
            grid.add_column(ratio=1, overflow="fold")
        rows = -(-len(cells) // columns)
        blank = (Text(""), Text(""), Text(""))
        for r in range(rows):
            row: list[Text] = []
            for k in range(columns):
                row += cells[r + k * rows] if r + k * rows < len(cells) else blank
            grid.add_row(*row)
        if not toggling:
            return grid
        hint = Text(
            "Tick the reasons with their keys; Enter stores them, Esc cancels.", style="dim"
        )
        return Group(grid, hint)

    # -- keys -----------------------------------------------------------------------------

    def on_key(self, event: Key) -> None:
        if self.session.handles(event.character):
            event.stop()
            event.prevent_default()
            self.action_choose(event.character or "")

    def action_choose(self, key: str) -> None:
        """An option's key, or a click on it."""
        keys = [c.key for c in self.session.choices()]
        if key in keys:
            self.highlight = keys.index(key)
            self.handle(self.session.press(key))

    def handle(self, feedback: Feedback | None) -> None:
        if feedback is not None:
            if feedback.kind == "need_text":
                self.app.push_screen(OtherPrompt(feedback.message), self._other_text)
                return
            if feedback.kind == "need_answer":  # a text or number case: the gold typed
                q = self.session.case.question
                field = TextAnswerPrompt(
                    q, f"Gold for {feedback.message}", value=self.session.typed_so_far()
                )
                self.app.push_screen(field, self._typed)
                return
            if feedback.kind == "done":
                self.app.exit(self.session.decisions)
                return
            self.flash(feedback.message, warning=feedback.kind == "warning")
        self.show_case()

    def _typed(self, text: str | None) -> None:
        if text is None:  # Esc: nothing stored
            self.show_case()
            return
        self.handle(self.session.answer_typed(text))

    def _other_text(self, text: str | None) -> None:
        if text is None:
            s = self.session
            if s.toggles is not None and s.pending_other is None:
                s.drop_other()  # an "other" reason: unticked, the other reasons stay
            else:
                s.cancel()
            self.show_case()
            return
        self.handle(self.session.answer_other(text))

    def action_prev(self) -> None:
        self.session.go(-1)
        self.highlight = 0
        self.show_case()

    def action_next(self) -> None:
        self.session.go(1)
        self.highlight = 0
        self.show_case()

    def action_highlight(self, delta: int) -> None:
        self.highlight = (self.highlight + delta) % len(self.session.choices())
        self.show_case()

    def action_enter(self) -> None:
        """Enter: store the set being put together, else choose the highlighted option."""
        if self.session.toggles is not None:
            self.handle(self.session.confirm())
        else:
            self.action_choose(self.session.choices()[self.highlight].key)

    def action_space(self) -> None:
        self.action_choose(self.session.choices()[self.highlight].key)

    def action_define(self) -> None:
        q = self.session.case.question
        codebook = self.session.plan.codebook
        choices = self.session.choices() if self.session.typed else question_choices(q)
        self.app.push_screen(DefinitionScreen(choices, q, codebook, self.highlight))

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(self._keys_table()))

    def action_quit(self) -> None:
        self.app.exit(self.session.decisions)

    def _keys_table(self) -> RenderableType:
        q = self.session.case.question
        choices = self.session.choices() if self.session.typed else question_choices(q)
        return key_table(
            ((c.key, f"{q.id}: {c.label} (stored as gold)") for c in choices),
            [
                ("↑ ↓", "highlight an option"),
                ("Enter", "choose the highlighted option; store the reasons put together"),
                ("Space", "toggle the highlighted reason (or choose the highlighted option)"),
                ("Esc", "drop the reasons being put together"),
                ("PgUp PgDn", "earlier turns / the turns after the item"),
            ],
            (
                (key_label(self.keys[c.id]), c.description)
                for c in COMMANDS
                if c.id in SCREEN_COMMANDS
            ),
        )

    def action_context_up(self) -> None:
        """PgUp: up the box, then earlier turns."""
        context = self.query_one(ContextView)
        if context.scroll_y > 0:
            context.scroll_page_up(animate=False)
            return
        self._more += CONTEXT_BEFORE
        self._show_context()
        self.call_after_refresh(context.scroll_home, animate=False, immediate=True)

    def action_context_down(self) -> None:
        """PgDn: the turns after the item, then down the box."""
        if not self._after:
            self._after = True
            self._show_context()
        else:
            self.query_one(ContextView).scroll_page_down(animate=False)

    def action_cancel(self) -> None:
        self.session.cancel()
        self.show_case()


class AdjudicationApp(App[int]):
    """Returns how many cases were decided in this sitting."""

    CSS_PATH = "adjudicate.tcss"
    TITLE = "annotate adjudicate"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "quit (all saved)", priority=True)
    ]

    def __init__(self, session: AdjudicationSession) -> None:
        super().__init__()
        self.session = session

    def on_mount(self) -> None:
        keys = command_keys(self.session.plan.codebook)
        moved = moved_keymap(BINDING_PREFIX, keys, SCREEN_COMMANDS)
        if moved:  # a codebook that uses q or ? as an option key: as in `annotate code`
            self.set_keymap(moved)
        self.push_screen(AdjudicationScreen(self.session))

    async def action_quit(self) -> None:
        """Ctrl+Q anywhere: every decision is already stored; return how many."""
        self.exit(self.session.decisions)


def make_app(store: Store, plan: GoldPlan, adjudicator: str) -> AdjudicationApp:
    return AdjudicationApp(AdjudicationSession(store, plan, adjudicator))


def run_adjudication(store: Store, plan: GoldPlan, adjudicator: str) -> int:
    """Run the screen until every case is decided or the adjudicator quits."""
    app = make_app(store, plan, adjudicator)
    app.run()
    return app.session.decisions
