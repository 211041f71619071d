"""Every key of the coding screen, wrapped over as many lines as the width needs."""

from __future__ import annotations

from rich.console import RenderableType
from rich.style import Style
from rich.text import Text
from textual.widget import Widget

KEY_NAMES = {
    "left": "←",
    "right": "→",
    "up": "↑",
    "down": "↓",
    "backspace": "Bksp",
    "question_mark": "?",
    "enter": "Enter",
    "escape": "Esc",
    "tab": "Tab",
    "shift+tab": "⇧Tab",
    "space": "Space",
    "pageup": "PgUp",
    "pagedown": "PgDn",
}


def key_label(key: str) -> str:
    if key in KEY_NAMES:
        return KEY_NAMES[key]
    if key.startswith("ctrl+"):
        return "^" + key[5:]
    if len(key) > 1 and key[0] == "f" and key[1:].isdigit():
        return key.upper()
    return key


class KeyBar(Widget):
    """Like Textual's footer, but wraps instead of cutting keys off at 80 columns."""

    DEFAULT_CSS = "KeyBar { height: auto; }"

    def __init__(self, entries: list[tuple[str, str, str]], **kwargs: object) -> None:
        """``entries``: (key shown, label, action run on click)."""
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.entries = entries

    def render(self) -> RenderableType:
        width = max(self.size.width, 20)
        text = Text(no_wrap=True, overflow="ellipsis")
        used = 0
        for key, label, action in self.entries:
            size = len(key) + 1 + len(label)
            if used and used + 2 + size > width:
                text.append("\n")
                used = 0
            elif used:
                text.append("  ")
                used += 2
            click = Style(meta={"@click": action})
            text.append(key, style=Style(bold=True, reverse=True) + click)
            text.append(" " + label, style=click)
            used += size
        return text
