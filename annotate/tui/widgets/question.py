"""The current question: its prompt and every choice with its one-key shortcut.

A long list of options (200 choices do not fit in 24 lines) scrolls: the panel is a
scrolling container around the choices, and it keeps the highlighted choice in view."""

from __future__ import annotations

from rich.console import RenderableType
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Region, Size
from textual.widget import Widget

from annotate.codebook import NO, OTHER, TYPED_KINDS
from annotate.coding.answers import answer_label
from annotate.coding.choices import Choice
from annotate.coding.session import CodingSession
from annotate.render.terminal import shown_line
from annotate.tui.widgets.context import wrap_words


def fit_parts(parts: list[str], room: int) -> list[str]:
    """Cut the longest of ``parts`` (ending them with "…") to one common length, as long as
    possible, so that together they fit in ``room``."""
    cap = max(map(len, parts), default=0)
    while cap > 8 and sum(min(len(p), cap) for p in parts) > room:
        cap -= 1
    return [p if len(p) <= cap else p[: cap - 1].rstrip() + "…" for p in parts]


class QuestionPanel(VerticalScroll, can_focus=False):
    """The question's title (its border title) over its choices, scrolled to keep the
    highlighted choice visible. Never focused: the arrow keys belong to the screen."""

    DEFAULT_CSS = "QuestionPanel { height: auto; }"

    def __init__(self, session: CodingSession, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.session = session

    def compose(self) -> ComposeResult:
        yield Choices(self.session)

    def title(self, width: int = 80) -> str:
        """The item's questions with their answers so far, by label (multi-question
        codebooks), each shortened as much as the width needs."""
        s = self.session
        if len(s.item.questions) == 1:
            return f"{s.question.id}: {s.codebook.title}"
        parts = []
        for i, q in enumerate(s.item.questions):
            answer = s.item.answers.get(q.id)
            mark = "▸" if i == s.q_index else ""
            parts.append(f"{mark}{q.id} {answer_label(q, answer) if answer else '·'}")
        return " │ ".join(fit_parts(parts, width - 4 - 3 * (len(parts) - 1)))

    def show(self) -> None:
        """Draw the current question again, then scroll its highlighted choice into view."""
        self.border_title = self.title(self.size.width or self.screen.size.width or 80)
        self.query_one(Choices).refresh(layout=True)
        self.call_after_refresh(self._follow_highlight)

    def _follow_highlight(self) -> None:
        choices = self.query_one(Choices)
        top = choices.highlight_line
        if top is not None:
            region = Region(0, top, choices.size.width, choices.highlight_height)
            self.scroll_to_region(region, animate=False, immediate=True)


class Choices(Widget):
    """Choices laid out in as many columns as the width allows; a click chooses too."""

    DEFAULT_CSS = "Choices { height: auto; }"

    def __init__(self, session: CodingSession, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.session = session
        self.highlight_line: int | None = None
        """The first line of the highlighted choice, as last drawn."""
        self.highlight_height = 1

    def _columns(self, choices: tuple[Choice, ...], width: int) -> int:
        longest = max(len(c.label) for c in choices) + 9
        return max(1, min(4, width // longest, (len(choices) + 1) // 2))

    def _cell(self, choice: Choice, highlighted: bool, width: int) -> list[Text]:
        """One choice as lines of exactly ``width`` cells (a long label wraps, indented)."""
        s = self.session
        selected = s.is_selected(choice)
        inactive = (
            choice.role == "toggle"
            and s.question.kind == "yes_no_reasons"
            and s.toggles is None
            and not selected
        )
        if choice.role == "toggle" and (s.toggles is not None or s.question.kind == "multi"):
            mark = "[x] " if selected else "[ ] "
        else:
            mark = "● " if selected else "  "
        click = Style(meta={"@click": f"screen.choose({choice.key!r})"})
        label_style = "bold green" if selected else ("dim" if inactive else "")
        if highlighted:
            label_style += " reverse"
        key = f" {choice.key} "
        indent = 1 + len(key) + 1 + len(mark)
        label = choice.label
        if choice.code == OTHER and selected and s.toggles is not None and s.toggles.other_text:
            label = f"Other: {s.toggles.other_text}"
        labels = wrap_words(shown_line(label), max(width - indent, 4))
        first = Text.assemble(
            ("▸" if highlighted else " ", "bold"),
            (key, "bold reverse" if not inactive else "reverse dim"),
            " ",
            (mark, "bold green"),
            (labels[0], label_style.strip()),
            style=click,
        )
        lines = [first] + [
            Text.assemble(" " * indent, (label, label_style.strip()), style=click)
            for label in labels[1:]
        ]
        for line in lines:
            line.truncate(width, overflow="ellipsis", pad=True)
        return lines

    def _text(self, width: int) -> Text:
        s = self.session
        q = s.question
        choices = s.choices()
        width = max(width, 20)
        hint = ""
        if q.kind == "yes_no_reasons" and s.toggles is not None and s.toggles.value == NO:
            hint = "  tick the reasons, then Enter"
        elif q.kind == "multi":
            hint = "  tick every option that applies, then Enter"
        prompt = wrap_words(shown_line(q.prompt), width)
        lines: list[Text] = [Text(line, style="bold") for line in prompt]
        if q.kind in TYPED_KINDS:
            return self._free_text(lines, width)
        if hint and len(lines[-1]) + len(hint) <= width:
            lines[-1].append(hint, style="italic")
        elif hint:
            lines.append(Text(hint.strip(), style="italic"))
        cols = self._columns(choices, width)
        col_width = (width - (cols - 1)) // cols
        per_col = -(-len(choices) // cols)
        columns: list[list[Text]] = []  # filled column by column: 1 2 3 4 down, then 5 6 7 8
        self.highlight_line = None
        for c in range(cols):
            column: list[Text] = []
            for i in range(c * per_col, min((c + 1) * per_col, len(choices))):
                cell = self._cell(choices[i], i == s.highlight, col_width)
                if i == s.highlight:
                    self.highlight_line, self.highlight_height = len(lines) + len(column), len(cell)
                column += cell
            columns.append(column)
        for r in range(max(len(c) for c in columns)):
            row = Text()
            for c, column in enumerate(columns):
                if c:
                    row.append(" ")
                row.append_text(column[r] if r < len(column) else Text(" " * col_width))
            row.rstrip()
            lines.append(row)
        if s.item.note:
            note = Text(f"note: {shown_line(s.item.note[:1000])}", style="italic")
            note.truncate(width, overflow="ellipsis")
            lines.append(note)
        if s.finished:
            lines.append(
                Text(f"✓ All {s.n} items are coded. ←/→ to review, q to quit.", style="bold green")
            )
        return Text("\n", no_wrap=True, overflow="crop", end="").join(lines)

    def _free_text(self, lines: list[Text], width: int) -> Text:
        """A free-text question: the answer so far, and how to write it."""
        s = self.session
        self.highlight_line = None
        answer = s.item.answers.get(s.question.id)
        if answer is not None and answer.value:
            for line in wrap_words(shown_line(answer.value[:2000]), width - 2)[:4]:
                lines.append(Text.assemble(("● ", "bold green"), (line, "green")))
        least = s.question.min_chars
        hint = "Enter: write your answer" + (f" (at least {least} characters)" if least else "")
        if s.question.kind == "number":
            hint = "Enter: type a number"
        lines.append(Text(hint if answer is None else "Enter: change it", style="italic"))
        return Text("\n", no_wrap=True, overflow="crop", end="").join(lines)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return len(self._text(width).plain.split("\n"))

    def render(self) -> RenderableType:
        return self._text(self.size.width)
