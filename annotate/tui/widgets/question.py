"""The current question: its prompt and every choice with its one-key shortcut."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.widget import Widget

from annotate.codebook import NO
from annotate.coding_session import Choice, CodingSession


class QuestionPanel(Widget):
    """Choices laid out in as many columns as the width allows; a click chooses too."""

    DEFAULT_CSS = "QuestionPanel { height: auto; }"

    def __init__(self, session: CodingSession, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.session = session

    def title(self) -> str:
        """The item's questions with their answers so far (multi-question codebooks)."""
        s = self.session
        if len(s.item.questions) == 1:
            return f"{s.question.id}: {s.codebook.title}"
        parts = []
        for i, (qid, answer) in enumerate(s.answer_summary()):
            mark = "▸" if i == s.q_index else ""
            parts.append(f"{mark}{qid} {answer if answer is not None else '·'}")
        return " │ ".join(parts)

    def _columns(self, choices: tuple[Choice, ...]) -> int:
        width = self.size.width or 80
        longest = max(len(c.label) for c in choices) + 9
        return max(1, min(4, width // longest, (len(choices) + 1) // 2))

    def _cell(self, choice: Choice, highlighted: bool) -> Text:
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
        return Text.assemble(
            ("▸" if highlighted else " ", "bold"),
            (f" {choice.key} ", "bold reverse" if not inactive else "reverse dim"),
            " ",
            (mark, "bold green"),
            (choice.label, label_style.strip()),
            style=click,
        )

    def render(self) -> RenderableType:
        s = self.session
        q = s.question
        choices = s.choices()
        prompt = Text(q.prompt, style="bold")
        if q.kind == "yes_no_reasons" and s.toggles is not None and s.toggles.value == NO:
            prompt.append("  → reasons, then Enter", style="italic")
        elif q.kind == "multi":
            prompt.append("  → every option that applies, then Enter", style="italic")
        cols = self._columns(choices)
        grid = Table.grid(expand=True, padding=(0, 1))
        for _ in range(cols):
            grid.add_column(ratio=1, overflow="fold")
        rows = -(-len(choices) // cols)
        cells = [self._cell(c, i == s.highlight) for i, c in enumerate(choices)]
        for r in range(rows):  # fill column by column: 1 2 3 4 down, then 5 6 7 8
            grid.add_row(
                *[cells[c * rows + r] if c * rows + r < len(cells) else "" for c in range(cols)]
            )
        parts: list[RenderableType] = [prompt, grid]
        if s.item.note:
            parts.append(
                Text(f"note: {s.item.note}", style="italic", overflow="ellipsis", no_wrap=True)
            )
        if s.finished:
            parts.append(
                Text(
                    f"✓ All {s.n} items are coded. ←/→ to review, q to quit.",
                    style="bold green",
                )
            )
        return Group(*parts)
