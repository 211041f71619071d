"""The coding and adjudication screens take their shared keys from one declaration
(annotate/tui/screen_keys.py): the same bindings, the same key bar entries, and the same
moved command keys for a codebook that uses a command's letter."""

from __future__ import annotations

from annotate.codebook import parse_codebook
from annotate.coding.keys import command_keys
from annotate.tui import screen_keys
from annotate.tui.screens import adjudicate, coding

BOOK = """
name: q_taken
title: q as an option key
version: "1"
questions:
  - id: move
    prompt: Move?
    options: [{code: a, label: A, key: q}, {code: b, label: B, key: "?"}]
"""


def _keys(screen) -> dict[str, str]:
    return {b.key: b.action for b in screen.BINDINGS}


def test_both_screens_bind_the_shared_keys_alike() -> None:
    both = (*screen_keys.OPTION_BINDINGS, *screen_keys.CONTEXT_BINDINGS)
    shared = {b.key: b.action for b in both}
    for screen in (coding.CodingScreen, adjudicate.AdjudicationScreen):
        keys = _keys(screen)
        assert {k: keys[k] for k in shared} == shared, screen
        for command in ("prev", "next", "define", "help", "quit"):
            assert any(b.action == command for b in screen.BINDINGS), (screen, command)


def test_a_codebook_that_takes_q_and_question_mark_moves_them_on_both_screens() -> None:
    keys = command_keys(parse_codebook(BOOK, "q_taken.yaml"))
    coding_moved = screen_keys.moved_keymap(coding.BINDING_PREFIX, keys)
    adjudicate_moved = screen_keys.moved_keymap(
        adjudicate.BINDING_PREFIX, keys, adjudicate.SCREEN_COMMANDS
    )
    assert coding_moved == {"annotate.quit": "ctrl+q", "annotate.define": "f4"}
    assert adjudicate_moved == {"adjudicate.quit": "ctrl+q", "adjudicate.define": "f4"}
    closing = screen_keys.closing_entries(keys)
    assert closing == [
        ("F4", "define", "screen.define"),
        ("F1", "keys", "screen.help"),
        ("^q", "quit", "screen.quit"),
    ]
    assert screen_keys.moving_entry(keys) == ("←/→", "back/next", "screen.prev")
