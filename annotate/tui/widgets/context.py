"""The item inside its conversation: preceding turns, the item, and optional lookahead."""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.widget import Widget

from annotate.coding.context import ContextRow, format_offset
from annotate.render.terminal import for_display
from annotate.tui.widgets.relayout import remeasure


def _who(row: ContextRow) -> str:
    a = row.action
    return (a.role or a.participant or "?").capitalize()


PREFIX = 6 + 1 + 8 + 1 + 7 + 1  # time, who, type columns and their gaps


def wrap_words(text: str, width: int) -> list[str]:
    """Greedy word wrap that keeps every character (long words are cut).

    Linear in the length of ``text``: a long word is cut by index, never by slicing off
    its head again and again (3 MB without a space took 4.7 s that way)."""
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        line = ""
        for word in paragraph.split(" "):
            if len(word) > width:
                if line:
                    lines.append(line)
                cut = range(0, len(word), width)
                lines.extend(word[i : i + width] for i in cut[:-1])
                word = word[cut[-1] :]
                line = ""
            if not line:
                line = word
            elif len(line) + 1 + len(word) <= width:
                line += " " + word
            else:
                lines.append(line)
                line = word
        lines.append(line)
    return lines


class ContextRows(Widget):
    """A block of turns as aligned columns: time relative to the item, who, type, what.

    The text column is wrapped here, with a hanging indent, so that measuring the height
    and drawing share one cheap computation (a Rich table costs ~10 ms per keypress).
    """

    DEFAULT_CSS = "ContextRows { height: auto; }"

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.rows: list[ContextRow] = []
        self.session_start = False
        self.earlier = False
        self._cache: tuple[int, Text] | None = None

    def set_rows(
        self, rows: list[ContextRow], *, session_start: bool = False, earlier: bool = False
    ) -> None:
        """``session_start``: the first turn is the session's first; ``earlier``: there are
        earlier turns (PgUp shows them). Either puts a marker line on top."""
        self.rows = rows
        self.session_start = session_start
        self.earlier = earlier
        self.display = bool(rows) or session_start or earlier
        self._cache = None
        remeasure(self)

    def _text(self, width: int) -> Text:
        if self._cache is not None and self._cache[0] == width:
            return self._cache[1]
        text_width = max(width - PREFIX, 10)
        out = Text(no_wrap=True, overflow="crop", end="")
        pad = " " * PREFIX
        if self.session_start:
            out.append(pad + "── start of the session ──", style="dim")
        elif self.earlier:
            out.append(pad + "── PgUp: earlier turns ──", style="dim")
        for row in self.rows:
            if out:
                out.append("\n")
            who_style = "bold" if row.is_item else ""
            if row.action.role == "guide":
                who_style += " cyan"
            elif row.action.role == "follower":
                who_style += " yellow"
            kind = row.action.action_type
            out.append(f"{format_offset(row.offset_s):>6} ", style="dim")
            out.append(f"{_who(row)[:8]:<8} ", style=who_style.strip())
            out.append(f"{kind[:7]:<7} ", style="italic" if kind != "message" else "dim")
            lines = wrap_words(for_display(row.text), text_width)
            style = "bold" if row.is_item else ""
            out.append(lines[0], style=style)
            for line in lines[1:]:
                out.append("\n" + pad)
                out.append(line, style=style)
        self._cache = (width, out)
        return out

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._text(width).plain.split("\n")) if self.display else 0

    def render(self) -> RenderableType:
        return self._text(self.size.width)


class ContextView(VerticalScroll, can_focus=False):
    """Scrolls back through the session; the item is kept in view after every move.
    ``fit``: no taller than its turns (the coding screen, whose keys sit at the foot)."""

    def __init__(self, *, fit: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fit = fit

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
        self.query_one("#before", ContextRows).set_rows(
            before, session_start=start, earlier=not start
        )
        self.query_one("#item", ContextRows).set_rows(item)
        self.query_one("#after", ContextRows).set_rows(after)
        self.anchor()  # kept at the bottom (the item and its lookahead) through resizes
        if self.fit:
            self.call_after_refresh(self._fit)
        if after:
            self.call_after_refresh(self._item_in_view)

    def on_mount(self) -> None:
        self.anchor()

    def _fit(self) -> None:
        """No taller than its turns: a tall terminal (a browser's) would otherwise show them
        at the bottom of an empty view; a short one still gives the view what is left."""
        turns = sum(child.outer_size.height for child in self.children)
        needed = max(turns, 1) + self.styles.gutter.height
        if self.styles.max_height is None or self.styles.max_height.value != needed:
            self.styles.max_height = needed

    def _item_in_view(self) -> None:
        """A lookahead longer than the view must not push the item out of it."""
        item = self.query_one("#item", ContextRows)
        if not self.region.contains_region(item.region):
            self.scroll_to_widget(item, animate=False, immediate=True, top=False)
