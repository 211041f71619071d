"""Untrusted text on a terminal: control characters are shown escaped, never executed.

Log content, notes, coder and sample names come from files anyone can write. A message
holding ``ESC ] 0 ; title BEL`` would retitle the terminal, ``ESC ] 52`` write the
clipboard, ``ESC [ 2 J`` wipe the screen. :func:`shown` is the one sanitiser: every C0 and
C1 control character except newline and tab, DEL, and the bidirectional overrides (which
reorder what is shown) become visible escapes such as ``\\x1b``. It is linear (one
``str.translate``).

The CLI's consoles (:class:`TerminalConsole`) apply it to every piece of text they print;
the Textual screens apply it where log content meets a widget. ``annotate export`` is the
exception by design: it writes data byte for byte (see :mod:`annotate.render.output`).
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.segment import Segment

_CONTROLS = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]
_BIDI = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]

_TABLE: dict[int, str] = {c: f"\\x{c:02x}" for c in _CONTROLS if c not in (0x09, 0x0A)}
_TABLE.update({c: f"\\u{c:04x}" for c in _BIDI})


def shown(text: str) -> str:
    """``text`` safe to show on a terminal: control characters as visible escapes."""
    return text.translate(_TABLE)


def shown_line(text: str) -> str:
    """:func:`shown` for one line: a newline is shown as ``\\n`` too."""
    return shown(text).replace("\n", "\\n")


class TerminalConsole(Console):
    """A Rich console that shows control characters in printed text as escapes.

    Rich's own styling and cursor control (control segments) pass unchanged; only the
    text of segments, which may hold log content, is sanitised."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            segment if segment.control else Segment(shown(segment.text), segment.style)
            for segment in buffer
        )


DISPLAY_CHARS = 10_000


def for_display(text: str, limit: int = DISPLAY_CHARS) -> str:
    """Log content for a screen: :func:`shown`, cut after ``limit`` characters with a note
    that says so. Only the display is cut; the stored text stays whole (a 100 MB message
    would otherwise take the screen minutes to lay out)."""
    if len(text) <= limit:
        return shown(text)
    return (
        shown(text[:limit])
        + f" … [truncated for display: {len(text):,} characters, the first {limit:,} shown]"
    )
