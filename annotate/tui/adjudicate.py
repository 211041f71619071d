"""The adjudication screen (`annotate adjudicate`): one case at a time, one key per decision.

A thin layer over :class:`annotate.adjudication.AdjudicationSession`, which holds every
decision and writes gold through the store; this module only draws the case (the item in
its conversation, every coder's answer and note, the codebook's keys) and forwards keys.
Self-contained on purpose: it does not depend on the coding app's widgets, which evolve
with that app.
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.events import Key
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Input, Label, Static

from annotate.adjudication import AdjudicationSession, Feedback, GoldPlan, answer_text
from annotate.models import Action, describe
from annotate.store import Store
from annotate.terminal import for_display, shown_line

CONTEXT_BEFORE = 8
CONTEXT_AFTER = 2


def _offset(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if abs(seconds) < 0.5:
        return "now"
    sign = "-" if seconds < 0 else "+"
    minutes, secs = divmod(round(abs(seconds)), 60)
    return f"{sign}{minutes}:{secs:02d}"


def context_table(store: Store, action: Action) -> Table:
    """The item among its neighbours (bold), with times relative to it when the log has them."""
    around = store.context(action, before=CONTEXT_BEFORE, after=CONTEXT_AFTER)
    t0 = action.elapsed_s
    table = Table.grid(padding=(0, 1), expand=True)
    table.add_column(width=5, justify="right", no_wrap=True)
    table.add_column(width=8, no_wrap=True, overflow="ellipsis")
    table.add_column(ratio=1, overflow="fold")
    rows = [a for a in around if a.seq < action.seq] + [action]
    rows += [a for a in around if a.seq > action.seq]
    for a in rows:
        item = a.id == action.id
        t = a.elapsed_s - t0 if a.elapsed_s is not None and t0 is not None else None
        colour = {"guide": "cyan", "follower": "yellow"}.get(a.role or "", "")
        style = "bold reverse" if item else ("dim" if a.seq > action.seq else "")
        table.add_row(
            Text(_offset(t), style="dim"),
            Text(shown_line((a.role or a.participant or "?").capitalize()), style=colour),
            Text(for_display(describe(a)), style=style),
        )
    return table


class OtherPrompt(ModalScreen[str | None]):
    """The text of an "Other" answer: Enter stores it, Escape stores nothing."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "cancel")]

    def __init__(self, title: str) -> None:
        super().__init__()
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.title_text, id="prompt-title")
            yield Input(placeholder="a short description", id="prompt-input")
            yield Label("Enter: store · Esc: cancel", id="prompt-hint")

    @on(Input.Submitted)
    def submit(self, event: Input.Submitted) -> None:
        event.stop()
        if not event.value.strip():
            self.query_one("#prompt-hint", Label).update(
                "A short description is needed (Esc: cancel)."
            )
            return
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ContextScroll(VerticalScroll, can_focus=False):
    """Never takes the focus: arrows and keys belong to the screen (PgUp/PgDn scroll it)."""


class AdjudicationScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "go(-1)", "back"),
        Binding("right", "go(1)", "next"),
        Binding("enter", "confirm", "store the set"),
        Binding("escape", "cancel", "cancel"),
        Binding("pageup", "scroll(-1)", "scroll context", show=False),
        Binding("pagedown", "scroll(1)", "scroll context", show=False),
    ]

    def __init__(self, session: AdjudicationSession) -> None:
        super().__init__()
        self.session = session

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        with ContextScroll(id="context"):
            yield Static(id="context-rows")
        yield Static(id="answers")
        yield Static(id="question")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#context", ContextScroll).border_title = "Context"
        self.show_case()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Enter and Escape only mean something while a set is being put together."""
        if action in {"confirm", "cancel"}:
            return self.session.toggles is not None
        return True

    # -- drawing --------------------------------------------------------------------------

    def show_case(self) -> None:
        s = self.session
        case = s.case
        self.query_one("#status", Static).update(self._status())
        self.query_one("#context-rows", Static).update(context_table(s.store, case.action))
        context = self.query_one("#context", ContextScroll)
        self.call_after_refresh(context.scroll_end, animate=False)
        self.query_one("#answers", Static).update(self._answers())
        question = self.query_one("#question", Static)
        question.border_title = shown_line(f"{case.question.id}: {case.question.prompt}")
        question.update(self._choices())
        self.refresh_bindings()

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
        grid.add_row(Text(f"{case.reason} ({state})", style="italic"), Text(""))
        return grid

    def _answers(self) -> RenderableType:
        case = self.session.case
        table = Table(box=None, pad_edge=False, expand=True, show_header=True)
        table.add_column("Coder", style="bold", no_wrap=True)
        table.add_column("Answer", ratio=1)
        notes = any(a.note for a in case.answers) or case.gold is not None
        if notes:
            table.add_column("Note", ratio=2)
        for a in case.answers:
            who = a.coder + (" ⚑" if a.flagged else "")
            cells = [Text(shown_line(who)), Text(for_display(a.text))]
            note = Text(for_display(a.note or ""), style="italic")
            table.add_row(*cells, *([note] if notes else []))
        if case.gold is not None:
            how = case.gold_meta.get("method", case.gold_meta.get("source", "?"))
            by = case.gold_meta.get("adjudicator")
            table.add_row(
                Text("gold", style="bold green"),
                Text(for_display(answer_text(case.gold)), style="green"),
                Text(shown_line(f"{how}" + (f" by {by}" if by else "")), style="italic"),
            )
        return table

    def _choices(self) -> RenderableType:
        """The codebook's keys; two columns when there are many (80x24 stays usable)."""
        s = self.session
        toggling = s.toggles is not None
        cells: list[Text] = []
        for c in s.choices():
            on = s.is_on(c)
            if c.role == "toggle" and (toggling or s.case.question.kind == "multi"):
                mark = "[x]" if on else "[ ]"
            else:
                mark = " ● " if on else "   "
            cells.append(
                Text.assemble(
                    (f" {c.key} ", "bold reverse"),
                    mark,
                    (shown_line(c.label), "bold" if on else ""),
                )
            )
        columns = 2 if len(cells) > 4 else 1
        grid = Table.grid(expand=True, padding=(0, 2))
        for _ in range(columns):
            grid.add_column(ratio=1, overflow="ellipsis", no_wrap=True)
        rows = -(-len(cells) // columns)
        for r in range(rows):
            grid.add_row(
                *(cells[r + k * rows] if r + k * rows < len(cells) else "" for k in range(columns))
            )
        if not toggling:
            return grid
        hint = Text(
            "Toggle the reasons with their keys; Enter stores them, Esc cancels.", style="dim"
        )
        return Group(grid, hint)

    # -- keys -----------------------------------------------------------------------------

    def on_key(self, event: Key) -> None:
        if self.session.handles(event.character):
            event.stop()
            event.prevent_default()
            self.handle(self.session.press(event.character or ""))

    def handle(self, feedback: Feedback | None) -> None:
        if feedback is not None:
            if feedback.kind == "need_text":
                self.app.push_screen(OtherPrompt(feedback.message), self._other_text)
                return
            if feedback.kind == "done":
                self.app.exit(self.session.decisions)
                return
            severity = "warning" if feedback.kind == "warning" else "information"
            self.notify(feedback.message, severity=severity, timeout=3)
        self.show_case()

    def _other_text(self, text: str | None) -> None:
        if text is None:
            self.session.cancel()
            self.show_case()
            return
        self.handle(self.session.answer_other(text))

    def action_go(self, delta: int) -> None:
        self.session.go(delta)
        self.show_case()

    def action_scroll(self, direction: int) -> None:
        context = self.query_one("#context", ContextScroll)
        if direction < 0:
            context.scroll_page_up(animate=False)
        else:
            context.scroll_page_down(animate=False)

    def action_confirm(self) -> None:
        self.handle(self.session.confirm())

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
