"""The item inside its conversation: preceding turns, the item, and optional lookahead."""

from __future__ import annotations

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widget import Widget

from annotate.coding_session import ContextRow, format_offset


def _who(row: ContextRow) -> str:
    a = row.action
    return (a.role or a.participant or "?").capitalize()


class ContextRows(Widget):
    """A block of turns as aligned columns: time relative to the item, who, type, what."""

    DEFAULT_CSS = "ContextRows { height: auto; }"

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.rows: list[ContextRow] = []
        self.session_start = False

    def set_rows(self, rows: list[ContextRow], *, session_start: bool = False) -> None:
        self.rows = rows
        self.session_start = session_start
        self.display = bool(rows) or session_start
        self.refresh(layout=True)

    def render(self) -> RenderableType:
        table = Table.grid(padding=(0, 1), expand=True)
        table.add_column(width=6, justify="right", no_wrap=True)
        table.add_column(width=8, no_wrap=True, overflow="ellipsis")
        table.add_column(width=7, no_wrap=True)
        table.add_column(ratio=1, overflow="fold")
        if self.session_start:
            table.add_row("", "", "", Text("── start of the session ──", style="dim"))
        for row in self.rows:
            who_style = "bold" if row.is_item else ""
            text_style = "bold" if row.is_item else ""
            if row.action.role == "guide":
                who_style += " cyan"
            elif row.action.role == "follower":
                who_style += " yellow"
            kind = row.action.action_type
            table.add_row(
                Text(format_offset(row.offset_s), style="dim"),
                Text(_who(row), style=who_style.strip()),
                Text(kind, style="italic" if kind != "message" else "dim"),
                Text(row.text, style=text_style),
            )
        return table


class ContextView(VerticalScroll, can_focus=False):
    """Scrolls back through the session; the item is kept in view after every move."""

    def compose(self) -> ComposeResult:
        yield ContextRows(id="before")
        yield ContextRows(id="item")
        yield ContextRows(id="after")

    def show(self, rows: list[ContextRow], *, wanted_before: int) -> None:
        """Draw ``rows``; fewer than ``wanted_before`` earlier turns means the session starts."""
        before = [r for r in rows if not r.is_item and not r.after]
        item = [r for r in rows if r.is_item]
        after = [r for r in rows if r.after]
        start = len(before) < wanted_before
        self.query_one("#before", ContextRows).set_rows(before, session_start=start)
        self.query_one("#item", ContextRows).set_rows(item)
        self.query_one("#after", ContextRows).set_rows(after)
        self.anchor()  # kept at the bottom (the item and its lookahead) through resizes
        if after:
            self.call_after_refresh(self._item_in_view)

    def on_mount(self) -> None:
        self.anchor()

    def _item_in_view(self) -> None:
        """A lookahead longer than the view must not push the item out of it."""
        item = self.query_one("#item", ContextRows)
        if not self.region.contains_region(item.region):
            self.scroll_to_widget(item, animate=False, immediate=True, top=False)
