"""The coding screen: draws the session and forwards every key to it."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen

from annotate.codebook import TYPED_KINDS as TYPED
from annotate.codebook import Question
from annotate.coding.session import CodingSession, Feedback
from annotate.errors import AnnotateError
from annotate.tui.screen_keys import (
    CONTEXT_BINDINGS,
    OPTION_BINDINGS,
    closing_entries,
    command_bindings,
    command_entry,
    moving_entry,
)
from annotate.tui.screens.help import DefinitionScreen, HelpScreen, keys_table
from annotate.tui.screens.prompt import TextPrompt
from annotate.tui.screens.rationale import TextAnswerPrompt, text_choice
from annotate.tui.screens.screenshots import ScreenshotsMixin
from annotate.tui.widgets.context import ContextView
from annotate.tui.widgets.keybar import KeyBar
from annotate.tui.widgets.question import QuestionPanel
from annotate.tui.widgets.status import StatusBar

BINDING_PREFIX = "annotate."


class CodingScreen(ScreenshotsMixin, Screen[None]):
    """Status, context, question, keys. Option keys go to the session before any binding."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *command_bindings(BINDING_PREFIX),
        # All shown: the key bar (our footer, see _key_entries) lists every one of them.
        *OPTION_BINDINGS,
        Binding("tab", "question(1)", "next question"),
        Binding("shift+tab", "question(-1)", "previous question"),
        *CONTEXT_BINDINGS,
    ]

    def __init__(self, session: CodingSession) -> None:
        super().__init__()
        self.session = session
        self._shown: tuple[int, int] | None = None
        self._more = 0  # earlier turns asked for with PgUp (this item only)
        self._text_asked: tuple[int, int] | None = None  # free text opened at once, once

    def compose(self) -> ComposeResult:
        yield StatusBar(self.session, id="status")
        yield ContextView(fit=True, id="context")
        yield QuestionPanel(self.session, id="question")
        yield KeyBar(self._key_entries(), id="keys")
        yield from self.compose_screenshots()

    def _key_entries(self) -> list[tuple[str, str, str]]:
        """Every key the screen binds for this codebook: (key shown, label, click action)."""
        keys = self.session.keys
        return [
            moving_entry(keys),
            *(command_entry(keys, cid) for cid in ("undo", "skip", "flag", "note")),
            command_entry(keys, "goto", "go to #"),
            command_entry(keys, "uncoded"),
            *(
                (q.bar_keys, q.bar_label, "screen." + q.action)
                for q in self.session.question_keys
                if q.bar_keys
            ),
            *self.screenshot_key_entries(),
            *closing_entries(keys),
        ]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Escape and Tab are bound only where they do something (reasons; questions): see
        ``QuestionKey.gates``."""
        return action not in self.session.unbound_actions

    def on_mount(self) -> None:
        self.refresh_view()
        s = self.session
        if s.version_warning:
            self.notify(s.version_warning, title="Codebook changed", severity="warning", timeout=15)
        if s.not_applicable:
            self.query_one(StatusBar).flash(
                f"{s.not_applicable} action(s) of the sample are not for '{s.codebook.name}' "
                f"(it codes: {', '.join(s.codebook.applies_to or [])}).",
                seconds=8,
            )

    # -- drawing ----------------------------------------------------------------------

    def refresh_view(self) -> None:
        s = self.session
        context = self.query_one(ContextView)
        if self._shown is not None and self._shown[0] != s.index:
            self._more = 0
        where = (s.index, self._more)
        if where != self._shown:  # --context N earlier turns, and those asked for with PgUp
            self._shown = where
            context.show(s.context_rows(self._more), wanted_before=s.context + self._more)
        context.border_title = self._context_title()
        self.query_one(StatusBar).refresh()
        self.query_one(QuestionPanel).show()
        self.refresh_screenshot()
        q = s.question
        asked = (s.index, s.q_index)
        if q.kind in TYPED and q.id not in s.item.answers and self._text_asked != asked:
            # a rationale is written first: its field opens as the item does
            self._text_asked = (s.index, s.q_index)
            self.call_after_refresh(self.action_write_text)

    def _context_title(self) -> str:
        s = self.session
        action = s.item.action
        bits = [f"session {action.meta.get('session_name') or action.session[:12]}"]
        if action.condition:
            bits.append(action.condition)
        at = s.item_time()
        bits.append(f"item #{s.index + 1}" + (f" at {_clock(at)}" if at is not None else ""))
        if s.item.flagged:
            bits.append("⚑ flagged")
        if s.item.skipped:
            bits.append("skipped")
        bits += self.screenshot_marks()
        return " · ".join(bits)

    # -- the one error boundary ---------------------------------------------------------

    def run_step(self, step: Callable[..., Feedback | None], *args: object) -> None:
        """Run one session step; show its feedback or error, then redraw."""
        try:
            feedback = step(*args)
        except AnnotateError as exc:
            self.notify(exc.message, title="Not saved", severity="error", timeout=8)
            feedback = None
        except sqlite3.Error as exc:
            self.notify(
                f"the project file could not be written ({exc}); try again",
                title="Not saved",
                severity="error",
                timeout=8,
            )
            feedback = None
        self.refresh_view()
        if feedback is not None:
            self._react(feedback)

    def _react(self, fb: Feedback) -> None:
        if fb.kind == "need_text":
            self.app.push_screen(
                TextPrompt(
                    fb.message,
                    placeholder="a short description",
                    required=True,
                ),
                self._other_text,
            )
        else:
            self.query_one(StatusBar).flash(fb.message, warning=fb.kind == "warning")

    def _other_text(self, text: str | None) -> None:
        if text is not None:
            self.run_step(self.session.answer_other, text)
        else:  # Esc: an "other" reason is unticked again; nothing is stored
            self.session.drop_other()
            self.refresh_view()

    # -- keys -------------------------------------------------------------------------

    def on_key(self, event: events.Key) -> None:
        if self.session.handles(event.character):
            event.stop()
            event.prevent_default()
            self.run_step(self.session.press, event.character)
        elif self.screenshot_key(event):
            event.stop()
            event.prevent_default()

    def action_choose(self, key: str) -> None:
        """A click on a choice."""
        if self.session.handles(key):
            self.run_step(self.session.press, key)

    def action_prev(self) -> None:
        self.run_step(self.session.go, -1)

    def action_next(self) -> None:
        self.run_step(self.session.go, 1)

    def action_undo(self) -> None:
        self.run_step(self.session.undo)

    def action_skip(self) -> None:
        self.run_step(self.session.skip)

    def action_flag(self) -> None:
        self.run_step(self.session.toggle_flag)

    def action_uncoded(self) -> None:
        self.run_step(self.session.next_uncoded)

    def action_highlight(self, delta: int) -> None:
        self.session.move_highlight(delta)
        self.refresh_view()

    def action_enter(self) -> None:
        if self.session.question.kind in TYPED:
            self.action_write_text()
            return
        self.run_step(self.session.choose_highlighted)

    def action_space(self) -> None:
        if self.session.question.kind in TYPED:
            self.action_write_text()
            return
        self.run_step(self.session.toggle_highlighted)

    def action_write_text(self) -> None:
        """The field of a free-text question (a rationale), with the answer so far."""
        s = self.session
        q = s.question
        if q.kind not in TYPED or self.app.screen is not self:
            return
        answer = s.item.answers.get(q.id)
        self.app.push_screen(
            TextAnswerPrompt(
                q, f"{q.id}: {q.prompt}", value=answer.value or "" if answer else ""
            ),
            self._text_written,
        )

    def _text_written(self, text: str | None) -> None:
        if text is not None:
            self.run_step(self.session.answer_text, text)

    def action_cancel(self) -> None:
        self.session.cancel()
        self.refresh_view()

    def action_question(self, delta: int) -> None:
        self.session.step_question(delta)
        self.refresh_view()

    def action_context_up(self) -> None:
        context = self.query_one(ContextView)
        if context.scroll_y > 0:
            context.scroll_page_up(animate=False)
            return
        self._more += max(self.session.context, 8)
        self.refresh_view()
        self.call_after_refresh(context.scroll_home, animate=False, immediate=True)

    def action_context_down(self) -> None:
        self.query_one(ContextView).scroll_page_down(animate=False)

    def action_note(self) -> None:
        s = self.session
        self.app.push_screen(
            TextPrompt(
                f"Note on item #{s.index + 1} (empty: remove the note)",
                value=s.item.note or "",
                placeholder=note_placeholder(s.question),
            ),
            self._note,
        )

    def _note(self, text: str | None) -> None:
        if text is not None:
            self.run_step(self.session.set_note, text)

    def action_goto(self) -> None:
        self.app.push_screen(
            TextPrompt(
                f"Go to item number (1 to {self.session.n})",
                integer=True,
                hint="Enter: go · Esc: cancel",
            ),
            self._goto,
        )

    def _goto(self, text: str | None) -> None:
        if text and text.strip().lstrip("-").isdigit():
            self.run_step(self.session.goto, int(text))

    def action_define(self) -> None:
        s = self.session
        choices = s.choices() or (text_choice(s.question),)  # a free-text question: no options
        self.app.push_screen(DefinitionScreen(choices, s.question, s.codebook, s.highlight))

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(keys_table(self.session)))

    def action_quit(self) -> None:
        self.app.exit()


def note_placeholder(question: Question) -> str:
    """An example note in the codebook's own words: two of the question's options (a long
    label by its first words)."""
    labels = [_short(o.label) for o in question.options[:2]]
    if len(labels) < 2:
        return "e.g. what was unclear about this item"
    return f"e.g. unsure between {labels[0]} and {labels[1]}"


def _short(label: str, most: int = 24) -> str:
    words = label.split()
    return label if len(label) <= most else " ".join(words[:3]) + "…"


def _clock(seconds: float) -> str:
    s = max(0, round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"
