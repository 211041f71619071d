"""The keys the coding and the adjudication screens share, declared once: the session
commands' bindings (each with an id, so that the keymap of a codebook that takes a command's
letter for an option moves it), the option keys (↑ ↓ Enter Space Esc), the context keys
(PgUp PgDn), and the key bar's command entries."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from textual.binding import Binding

from annotate.coding.keys import COMMANDS
from annotate.tui.widgets.keybar import key_label

KeyEntry = tuple[str, str, str]
"""A key bar entry: (key shown, label, action run on a click)."""

OPTION_BINDINGS: tuple[Binding, ...] = (
    Binding("up", "highlight(-1)", "highlight"),
    Binding("down", "highlight(1)", "highlight"),
    Binding("enter", "enter", "choose"),
    Binding("space", "space", "toggle"),
    Binding("escape", "cancel", "cancel"),
)
CONTEXT_BINDINGS: tuple[Binding, ...] = (
    Binding("pageup", "context_up", "earlier"),
    Binding("pagedown", "context_down", "later"),
)


def command_bindings(prefix: str, ids: Collection[str] | None = None) -> list[Binding]:
    """A binding per session command (those of ``ids``, else all), its id ``prefix + id``."""
    return [
        Binding(c.key, c.id, c.label, id=prefix + c.id)
        for c in COMMANDS
        if ids is None or c.id in ids
    ]


def moved_keymap(
    prefix: str, keys: Mapping[str, str], ids: Collection[str] | None = None
) -> dict[str, str]:
    """The keymap (binding id -> key) of the commands whose key a codebook moved (it uses
    ``q`` or ``?`` as an option key): for ``App.set_keymap``."""
    defaults = {c.id: c.key for c in COMMANDS}
    return {
        prefix + cid: key
        for cid, key in keys.items()
        if (ids is None or cid in ids) and key != defaults[cid]
    }


def command_entry(keys: Mapping[str, str], cid: str, label: str | None = None) -> KeyEntry:
    """The key bar entry of one command (its label, unless ``label``)."""
    command = next(c for c in COMMANDS if c.id == cid)
    return (key_label(keys[cid]), label or command.label, "screen." + cid)


def moving_entry(keys: Mapping[str, str]) -> KeyEntry:
    """The key bar's first entry: back and next."""
    return (f"{key_label(keys['prev'])}/{key_label(keys['next'])}", "back/next", "screen.prev")


def closing_entries(keys: Mapping[str, str]) -> list[KeyEntry]:
    """The key bar's last entries: definition, every key, quit."""
    return [command_entry(keys, cid) for cid in ("define", "help", "quit")]
