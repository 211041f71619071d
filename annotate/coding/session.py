"""A coder's session over a sample, without any UI.

:class:`CodingSession` decides which item and which question are current, what each key
does, when an answer is written (at once, one transaction each, through the store), how
long the coder spent on each item, where a session resumes and what "undo" restores. The
Textual app (``annotate.tui``) only draws this state and forwards keys to it, so all of
the behaviour is tested here with plain unit tests.

Vocabulary: an *item* is one action of the sample that the codebook applies to; a
*choice* is one thing a key does for the current question (pick an option, answer yes or
no, toggle a reason, "other").
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from annotate.codebook import NO, OTHER, Answer, LoadedCodebook, Question
from annotate.coding.choices import Choice, question_choices
from annotate.coding.context import ContextRow, item_context_rows, time_in_session
from annotate.coding.items import Counts, Item, Tally, load_items
from annotate.coding.keys import command_keys, question_keys
from annotate.coding.session_inputs import (
    check_coder,
    sample_name,
    version_warning,
)
from annotate.errors import UsageError
from annotate.media import meta_screenshot_ref
from annotate.store import Store
from annotate.store.coding import CodingQueries

IDLE_CAP_S = 300.0
"""Longest stretch counted as work on one item: a coder who walks away is not coding."""


@dataclass
class Toggles:
    """Reasons of a 'no' (or the choices of a multi-select question) being put together."""

    question: Question
    value: str | None
    codes: set[str]
    other_text: str | None = None  # asked for as soon as "other" is ticked


@dataclass(frozen=True)
class Feedback:
    """What the UI should tell the coder (or ask them) after a key."""

    kind: Literal["need_text", "info", "warning", "done"]
    message: str = ""


@dataclass(frozen=True)
class _Undo:
    kind: Literal["answer", "skip"]
    index: int
    question: int
    previous: Answer | None = None
    was_skipped: bool = False


class CodingSession:
    """One coder coding one sample with one codebook. Every change is written at once."""

    def __init__(
        self,
        store: Store,
        loaded: LoadedCodebook,
        coder: str,
        sample: str | None = None,
        *,
        context: int = 8,
        lookahead: int = 0,
        show: Sequence[str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        new_coder: bool = False,
    ):
        if context < 0 or lookahead < 0:
            raise UsageError("--context and --lookahead must be 0 or more")
        self.store = store
        self.queries = CodingQueries(store.db)
        self.codebook = loaded.codebook
        self.coder = coder
        self.context = context
        self.lookahead = lookahead
        self.show = list(show) if show is not None else list(self.codebook.context_fields)
        """``meta`` fields shown beside each turn (``--show``, else the codebook's)."""
        self.clock = clock
        self.sample = self._sample_name(sample)
        self.is_new_coder = self._check_coder(new_coder)
        if loaded.text:
            store.codebooks.register_codebook(loaded)
        self.version_warning = self._version_warning()
        self.keys = command_keys(self.codebook)
        self.question_keys, self.unbound_actions = question_keys(self.codebook)
        self.items, self.not_applicable = self._load_items()
        if not self.items:
            raise UsageError(
                f"sample '{self.sample}' has no action that codebook '{self.codebook.name}' "
                "applies to",
                hint="it applies to: " + ", ".join(self.codebook.applies_to or ["any"]),
            )
        self._choices: dict[str, tuple[Choice, ...]] = {}
        self._by_key: dict[str, dict[str, Choice]] = {}
        self.undo_stack: list[_Undo] = []
        self.toggles: Toggles | None = None
        self.tally = Tally(self.items)
        self.finished = self.tally.coded == self.n
        self.index = 0
        self.q_index = 0
        self.highlight = 0
        self._shown_at = clock()
        self._enter(self.resume_index())

    # -- loading ----------------------------------------------------------------------

    def _sample_name(self, sample: str | None) -> str:
        return sample_name(self.queries, sample)

    def _check_coder(self, new_coder: bool) -> bool:
        return check_coder(self.store, self.codebook.name, self.coder, new_coder=new_coder)

    def _version_warning(self) -> str | None:
        return version_warning(self.queries, self.codebook, self.coder)

    def _load_items(self) -> tuple[list[Item], int]:
        """The sample's items and this coder's progress on them
        (:func:`~annotate.coding.items.load_items`)."""
        return load_items(self.store, self.queries, self.codebook, self.coder, self.sample)

    @cached_property
    def names_screenshots(self) -> bool:
        """Whether an item of the sample names a screenshot (read once, from the few actions
        that mention one: see
        :meth:`~annotate.store.coding.CodingQueries.sample_metas_naming_screenshots`)."""
        return any(
            meta_screenshot_ref(json.loads(meta))
            for meta in self.queries.sample_metas_naming_screenshots(self.sample)
        )

    # -- where we are -----------------------------------------------------------------

    @property
    def n(self) -> int:
        return len(self.items)

    @property
    def item(self) -> Item:
        return self.items[self.index]

    @property
    def question(self) -> Question:
        return self.item.questions[self.q_index]

    def resume_index(self) -> int:
        """The first item not yet coded (nor skipped); else the first skipped; else 0."""
        first_skipped = None
        for item in self.items:
            if not item.coded:
                if not item.skipped:
                    return item.position
                if first_skipped is None:
                    first_skipped = item.position
        return first_skipped or 0

    def counts(self) -> Counts:
        t = self.tally
        return Counts(self.n, t.coded, t.skipped, t.flagged)

    def pace_seconds(self) -> float | None:
        """The coder's median time per coded item (None before three timed items)."""
        return self.tally.median_time()

    def eta_seconds(self) -> float | None:
        pace = self.pace_seconds()
        if pace is None:
            return None
        return pace * (self.n - self.tally.coded)

    @contextmanager
    def _changing(self, item: Item) -> Iterator[Item]:
        """Around every change of an item's answers, marks or seconds: its counts move with
        it (see :class:`~annotate.coding.items.Tally`)."""
        self.tally.add(item, -1)
        try:
            yield item
        finally:
            self.tally.add(item, 1)

    # -- choices ----------------------------------------------------------------------

    def choices(self, question: Question | None = None) -> tuple[Choice, ...]:
        q = question or self.question
        if q.id not in self._choices:
            out = question_choices(q)
            self._choices[q.id] = out
            self._by_key[q.id] = {c.key: c for c in out}
        return self._choices[q.id]

    def handles(self, char: str | None) -> bool:
        """Whether this printable character is a shortcut of the current question."""
        if not char:
            return False
        self.choices()
        return char in self._by_key[self.question.id]

    def is_selected(self, choice: Choice) -> bool:
        """Marked in the UI: the stored answer, or a toggle currently switched on."""
        q = self.question
        if self.toggles is not None and self.toggles.question.id == q.id:
            if choice.role == "toggle":
                return choice.code in self.toggles.codes
            return choice.code == self.toggles.value
        answer = self.item.answers.get(q.id)
        if answer is None:
            return False
        if choice.role == "toggle":
            return choice.code in answer.codes
        return choice.code == answer.value

    @property
    def highlighted(self) -> Choice:
        choices = self.choices()
        return choices[min(self.highlight, len(choices) - 1)]

    def move_highlight(self, delta: int) -> None:
        if not self.choices():  # a free-text question
            return
        self.highlight = (self.highlight + delta) % len(self.choices())

    # -- answering --------------------------------------------------------------------

    def press(self, char: str) -> Feedback | None:
        """The coder pressed a shortcut of the current question (see :meth:`handles`)."""
        self.choices()
        choice = self._by_key[self.question.id].get(char)
        if choice is None:
            return None
        self.highlight = self.choices().index(choice)
        return self._choose(choice)

    def _choose(self, choice: Choice) -> Feedback | None:
        q = self.question
        if choice.role == "toggle":
            if self.toggles is None:
                answer = self.item.answers.get(q.id)
                keep = answer is not None and answer.value in (NO, None)
                value = NO if q.kind == "yes_no_reasons" else None
                self.toggles = self._toggles_from(answer if keep else None, value)
            t = self.toggles
            t.codes ^= {choice.code}
            if choice.code == OTHER:
                if OTHER not in t.codes:
                    t.other_text = None
                elif not t.other_text:  # the text field opens at once, before more keys
                    return Feedback("need_text", f"{q.id}: describe the 'other' reason")
            return None
        if choice.code == NO and q.kind == "yes_no_reasons":
            if self.toggles is None:
                answer = self.item.answers.get(q.id)
                keep = answer is not None and answer.value == NO
                self.toggles = self._toggles_from(answer if keep else None, NO)
            return None
        self.toggles = None
        if choice.code == OTHER:
            return Feedback("need_text", f"{q.id}: describe the 'other' answer")
        return self._store(Answer(choice.code))

    def _toggles_from(self, answer: Answer | None, value: str | None) -> Toggles:
        """Reasons (or options) to change, starting from a stored answer's."""
        if answer is None:
            return Toggles(self.question, value, set())
        return Toggles(self.question, value, set(answer.codes), answer.other_text)

    def choose_highlighted(self) -> Feedback | None:
        """Enter: confirm the reasons being put together, else choose the highlighted option."""
        if self.toggles is not None:
            return self.confirm()
        return self._choose(self.highlighted)

    def toggle_highlighted(self) -> Feedback | None:
        """Space: toggle the highlighted reason (or choose the highlighted option)."""
        return self._choose(self.highlighted)

    def confirm(self) -> Feedback | None:
        t = self.toggles
        if t is None:
            return None
        if not t.codes:
            what = "reason" if t.value == NO else "option"
            return Feedback("warning", f"Choose at least one {what} first (or Escape).")
        if OTHER in t.codes and not t.other_text:
            return Feedback("need_text", f"{t.question.id}: describe the 'other' reason")
        self.toggles = None
        other = t.other_text if OTHER in t.codes else None
        return self._store(Answer(t.value, tuple(sorted(t.codes)), other))

    def cancel(self) -> None:
        """Escape: drop the reasons being put together (nothing was stored yet)."""
        self.toggles = None

    def answer_text(self, text: str) -> Feedback | None:
        """The answer to a free-text question (kind ``text``), e.g. a rationale, or the
        number typed for a ``number`` question."""
        if self.question.kind == "number":
            return self._store(Answer.number(text, self.question))
        return self._store(Answer(text.strip()))

    def answer_other(self, text: str) -> Feedback | None:
        """The free text of an "other" answer (after a ``need_text`` feedback).

        An "other" reason (or option) keeps its text with the ticks, and Enter stores
        them all; a single-choice "other" is stored at once."""
        text = text.strip()
        if not text:
            return Feedback("warning", "'Other' needs a short description.")
        t = self.toggles
        if t is not None:
            t.codes.add(OTHER)
            t.other_text = text
            return None
        return self._store(Answer(OTHER, other_text=text))

    def drop_other(self) -> None:
        """The text field of an "other" reason was closed empty: untick "other"."""
        t = self.toggles
        if t is not None and not t.other_text:
            t.codes.discard(OTHER)

    def _store(self, answer: Answer) -> Feedback | None:
        item, q = self.item, self.question
        answer.check(q)
        previous = item.answers.get(q.id)
        revisited = item.coded  # a review of an item coded before: keep going in order
        seconds = self._lap()
        self.store.labels.save_answer(
            item.action_id, self.codebook, q.id, self.coder, answer, seconds=seconds
        )
        was_skipped = item.skipped
        with self._changing(item):
            item.answers[q.id] = answer
            item.seconds += seconds
            if was_skipped:  # an answered item is no longer skipped
                ids = [x.id for x in item.questions]
                self.store.labels.set_skipped(item.action_id, self.codebook, self.coder, ids, False)
                item.skipped = False
        self.undo_stack.append(_Undo("answer", self.index, self.q_index, previous, was_skipped))
        if not item.coded:  # the first question still open, wherever this one was
            self._set_question(item.first_open())
            return None
        if revisited and self.index + 1 < self.n:
            self._enter(self.index + 1)
            return None
        return self._advance()

    def _advance(self) -> Feedback | None:
        """After an item is done: the next item still to do, after this one if any.

        (An answer that changes an item coded before moves to the next item in order
        instead, see :meth:`_store`, so that reviewing goes item by item.)
        """
        target = self._next_open()
        if target is None:
            self.finished = True
            return Feedback("done", f"All {self.n} items are coded. Press q to quit.")
        wrapped = target.position <= self.index
        self._enter(target.position)
        if wrapped:
            return Feedback(
                "info", f"Back to the first item still to code, #{target.position + 1}."
            )
        return None

    def _next_open(self) -> Item | None:
        """The next item neither coded nor skipped (wrapping round), else the next skipped."""
        order = self.items[self.index + 1 :] + self.items[: self.index + 1]
        return next((it for it in order if it.todo), None) or next(
            (it for it in order if not it.coded), None
        )

    # -- moving -----------------------------------------------------------------------

    def _lap(self) -> float:
        now = self.clock()
        spent = min(max(now - self._shown_at, 0.0), IDLE_CAP_S)
        self._shown_at = now
        return spent

    def _leave(self) -> None:
        """Count the time spent on the current item since the last answer, answered or not.

        The seconds go to the current question's row (made if the item has none yet), in
        one transaction, so that time on items skipped or passed over counts too.
        """
        spent = self._lap()
        if spent <= 0:
            return
        item = self.item
        self.store.labels.add_item_seconds(
            item.action_id, self.codebook, self.coder, self.question.id, spent
        )
        with self._changing(item):
            item.seconds += spent

    def _enter(self, index: int, question: int | None = None) -> None:
        self.index = index
        self.toggles = None
        self._set_question(self.item.first_open() if question is None else question)

    def _set_question(self, q_index: int) -> None:
        self.q_index = q_index
        self.toggles = None
        answer = self.item.answers.get(self.question.id)
        self.highlight = 0
        if answer is not None:
            for i, c in enumerate(self.choices()):
                if c.role == "value" and c.code == answer.value:
                    self.highlight = i
                    break

    def go(self, delta: int) -> Feedback | None:
        target = self.index + delta
        if not 0 <= target < self.n:
            return Feedback("info", "First item." if target < 0 else "Last item.")
        self._leave()
        self._enter(target)
        return None

    def goto(self, number: int) -> Feedback | None:
        """Go to item ``number`` (1-based, as shown)."""
        if not 1 <= number <= self.n:
            return Feedback("warning", f"No item #{number}: items are numbered 1 to {self.n}.")
        self._leave()
        self._enter(number - 1)
        return None

    def next_uncoded(self) -> Feedback | None:
        target = self._next_open()
        if target is None:
            return Feedback("info", f"All {self.n} items are coded.")
        if target.position != self.index:
            self._leave()
            self._enter(target.position)
        return None

    def step_question(self, delta: int) -> None:
        """Move among the questions of the current item (multi-question codebooks)."""
        n = len(self.item.questions)
        if n > 1:
            self._set_question((self.q_index + delta) % n)

    def close(self) -> None:
        """Count the time spent on the current item (called when the coder quits)."""
        self._leave()

    # -- marks ------------------------------------------------------------------------

    def skip(self) -> Feedback | None:
        item = self.item
        if item.coded:
            return Feedback("info", "This item is coded; nothing to skip.")
        ids = [q.id for q in item.questions]
        with self.store.db.transaction():  # the skip and its time: one commit
            self.store.labels.set_skipped(item.action_id, self.codebook, self.coder, ids, True)
            self._leave()
        was = item.skipped
        with self._changing(item):
            item.skipped = True
        self.undo_stack.append(_Undo("skip", self.index, self.q_index, None, was))
        return self._advance()

    def toggle_flag(self) -> Feedback:
        item = self.item
        flagged = not item.flagged
        self.store.labels.set_flag(
            item.action_id, self.codebook, self.coder, [q.id for q in item.questions], flagged
        )
        with self._changing(item):
            item.flagged = flagged
        return Feedback("info", "Flagged for discussion." if flagged else "Flag removed.")

    def set_note(self, text: str) -> Feedback:
        item = self.item
        note = text.strip() or None
        self.store.labels.set_note(
            item.action_id, self.codebook, self.coder, [q.id for q in item.questions], note
        )
        item.note = note
        return Feedback("info", "Note saved." if note else "Note removed.")

    # -- undo -------------------------------------------------------------------------

    def undo(self) -> Feedback | None:
        """Take back the last answer (or skip) of this run and go back to it."""
        if not self.undo_stack:
            return Feedback("info", "Nothing to undo.")
        entry = self.undo_stack[-1]  # popped once the file has been changed back
        item = self.items[entry.index]
        ids = [q.id for q in item.questions]
        if entry.kind == "skip":
            self.store.labels.set_skipped(
                item.action_id, self.codebook, self.coder, ids, entry.was_skipped
            )
            with self._changing(item):
                item.skipped = entry.was_skipped
            self.undo_stack.pop()
            self._leave()
            self._enter(entry.index, entry.question)
            return Feedback("info", f"Skip of item #{entry.index + 1} undone.")
        q = item.questions[entry.question]
        with self._changing(item):
            if entry.previous is None:
                self.store.labels.clear_answer(
                    item.action_id, self.codebook.name, q.id, self.coder, keep_time=True
                )
                item.answers.pop(q.id, None)
            else:
                self.store.labels.save_answer(
                    item.action_id, self.codebook, q.id, self.coder, entry.previous
                )
                item.answers[q.id] = entry.previous
            if entry.was_skipped:
                self.store.labels.set_skipped(item.action_id, self.codebook, self.coder, ids, True)
                item.skipped = True
        self.undo_stack.pop()
        self._leave()
        self.finished = False
        self._enter(entry.index, entry.question)
        return Feedback("info", f"Answer to {q.id} of item #{entry.index + 1} undone.")

    # -- what is shown ----------------------------------------------------------------

    def context_rows(self, more: int = 0) -> list[ContextRow]:
        """The item among its preceding (``context + more``) and following turns."""
        return item_context_rows(
            self.store,
            self.queries,
            self.item.action,
            self.context + more,
            self.lookahead,
            show=self.show,
        )

    def item_time(self) -> float | None:
        """Seconds into its session at which the current item happened."""
        return time_in_session(self.queries, self.item.action)
