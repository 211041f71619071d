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

import bisect
import json
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Literal

from annotate.codebook import (
    NO,
    OTHER,
    Answer,
    Codebook,
    LoadedCodebook,
    Question,
    find_codebook,
)
from annotate.coders import is_human
from annotate.coding.choices import Choice, question_choices
from annotate.errors import CodebookError, NotFoundError, UsageError
from annotate.media import meta_screenshot_ref
from annotate.models import Action, describe_with
from annotate.store import Store
from annotate.store.coding import CodingQueries, parse_time

DEFAULT_SAMPLE = "main"
IDLE_CAP_S = 300.0
"""Longest stretch counted as work on one item: a coder who walks away is not coding."""
RESERVED_CODERS = {"gold": "adjudicated gold labels (made with `annotate adjudicate`)"}
CODER_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$")


# -- keys -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    """A session command and its key (a Textual key name); ``char`` is its printable form."""

    id: str
    key: str
    label: str
    description: str
    char: str | None = None
    fallback: str | None = None


COMMANDS: tuple[Command, ...] = (
    Command("prev", "left", "back", "Previous item"),
    Command("next", "right", "next", "Next item"),
    Command("undo", "backspace", "undo", "Undo the last answer or skip"),
    Command("skip", "s", "skip", "Skip this item (come back to it later)", "s", "ctrl+s"),
    Command("flag", "f", "flag", "Flag this item for discussion (again: unflag)", "f", "ctrl+f"),
    Command("note", "m", "note", "Write a note on this item", "m", "f2"),
    Command("goto", "g", "go to", "Go to item number ...", "g", "ctrl+g"),
    Command(
        "uncoded",
        "j",
        "next uncoded",
        "Jump to the next item neither coded nor skipped (then to the skipped ones)",
        "j",
        "f3",
    ),
    Command("define", "question_mark", "define", "Definition, examples, instructions", "?", "f4"),
    Command("help", "f1", "keys", "All keys"),
    Command("quit", "q", "quit", "Quit (everything answered is already saved)", "q", "ctrl+q"),
)


@dataclass(frozen=True)
class QuestionKey:
    """Keys of the coding screen besides the commands: a row of the help (F1) and, unless
    ``bar_keys`` is None, an entry of the key bar (a click on it runs ``action``).

    ``when``: the codebooks the row is for ("toggles": a question takes several choices,
    see :func:`has_toggles`; "questions": more than one question). ``gates``: a screen
    action bound only where the row is for.
    """

    keys: str
    does: str
    bar_keys: str | None = None  # None: in the help only
    bar_label: str = ""
    action: str = ""  # run by a click in the key bar
    when: Literal["always", "toggles", "no toggles", "questions"] = "always"
    gates: str | None = None


# help: keys, what they do / key bar: keys, label, action on a click
QUESTION_KEYS: tuple[QuestionKey, ...] = (
    QuestionKey("↑ ↓", "highlight an option"),
    QuestionKey("Enter", "choose the highlighted option; confirm the reasons",
                "↑↓ Enter", "choose", "enter", when="toggles"),
    QuestionKey("Space", "toggle the highlighted reason (or choose the highlighted option)",
                "Space", "toggle", "space", when="toggles"),
    QuestionKey("Esc", "leave the reasons of a 'no' unanswered",
                "Esc", "cancel", "cancel", when="toggles", gates="cancel"),
    QuestionKey("Enter Space", "choose the highlighted option",
                "↑↓ Enter/Space", "choose", "enter", when="no toggles"),
    QuestionKey("Tab ⇧Tab", "next / previous question of this item",
                "Tab/⇧Tab", "question", "question(1)", when="questions", gates="question"),
    QuestionKey("PgUp PgDn", "scroll the context (PgUp at the top shows earlier turns)",
                "PgUp/PgDn", "scroll", "context_up"),
)  # fmt: skip


def question_keys(codebook: Codebook) -> tuple[list[QuestionKey], set[str]]:
    """The rows of :data:`QUESTION_KEYS` for this codebook, and the screen actions that
    stay unbound (gated by a row not for it)."""
    toggles = has_toggles(codebook)
    applies = {
        "always": True,
        "toggles": toggles,
        "no toggles": not toggles,
        "questions": len(codebook.questions) > 1,
    }
    rows = [k for k in QUESTION_KEYS if applies[k.when]]
    unbound = {k.gates for k in QUESTION_KEYS if k.gates and not applies[k.when]}
    return rows, unbound


def has_toggles(codebook: Codebook) -> bool:
    """Whether a question takes several choices (reasons of a 'no', multi-select)."""
    return any(q.kind in ("yes_no_reasons", "multi") for q in codebook.questions)


def codebook_keys(codebook: Codebook) -> set[str]:
    """Every character a question of this codebook uses as a shortcut."""
    keys: set[str] = set()
    for q in codebook.questions:
        keys.update(o.key for o in q.options)
        if q.allow_other:
            keys.add(q.other_key)
        if q.kind == "yes_no_reasons":
            keys.update((q.yes_key, q.no_key))
    return keys


def command_keys(codebook: Codebook) -> dict[str, str]:
    """Command id -> key; a command whose letter the codebook uses moves to its fallback."""
    taken = codebook_keys(codebook)
    return {c.id: (c.fallback if c.char in taken and c.fallback else c.key) for c in COMMANDS}


# -- state ----------------------------------------------------------------------------------


class ItemActions:
    """The actions of a session's items, read from the store a page at a time.

    A coder sees one item (and its context) at a time, so a sample of 100k items keeps only
    its ids in memory and the few pages around where the coder is."""

    PAGE = 64
    PAGES_KEPT = 8

    def __init__(self, store: Store, ids: Sequence[str]):
        self.store = store
        self.ids = ids
        self._pages: OrderedDict[int, list[Action]] = OrderedDict()

    def __getitem__(self, position: int) -> Action:
        page, offset = divmod(position, self.PAGE)
        actions = self._pages.get(page)
        if actions is None:
            start = page * self.PAGE
            actions = self.store.actions.actions_by_ids(self.ids[start : start + self.PAGE])
            self._pages[page] = actions
            while len(self._pages) > self.PAGES_KEPT:
                self._pages.popitem(last=False)
        else:
            self._pages.move_to_end(page)
        return actions[offset]


@dataclass(slots=True, eq=False)
class Item:
    position: int
    action_id: str
    questions: tuple[Question, ...]
    actions: ItemActions = field(repr=False)
    answers: dict[str, Answer] = field(default_factory=dict)
    flagged: bool = False
    skipped: bool = False
    note: str | None = None
    seconds: float = 0.0

    @property
    def action(self) -> Action:
        """The action (read from the store with its page of items when first needed)."""
        return self.actions[self.position]

    @property
    def coded(self) -> bool:
        answers = self.answers  # a plain loop: counted over every item of 100k at each render
        if not answers:
            return False
        for q in self.questions:  # noqa: SIM110
            if q.id not in answers:
                return False
        return True

    @property
    def todo(self) -> bool:
        return not self.coded and not self.skipped

    def first_open(self) -> int:
        """Index of the first unanswered question (0 when all are answered)."""
        for i, q in enumerate(self.questions):
            if q.id not in self.answers:
                return i
        return 0


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
class Counts:
    n: int
    coded: int
    skipped: int
    flagged: int


class Tally:
    """The session's counts (coded, skipped, flagged) and the seconds of its coded items,
    kept up to date item by item (see :meth:`CodingSession._changing`) instead of counted
    over every item of a 100k-item sample at each render of the status line."""

    def __init__(self, items: Sequence[Item]):
        coded = skipped = flagged = 0
        times: list[float] = []
        for item in items:  # as add(item, 1) does, inlined: 100k items at start-up
            if item.coded:
                coded += 1
                if item.seconds > 0:
                    times.append(item.seconds)
            elif item.skipped:
                skipped += 1
            if item.flagged:
                flagged += 1
        times.sort()  # sorted: the median is the middle one
        self.coded, self.skipped, self.flagged, self.times = coded, skipped, flagged, times

    def add(self, item: Item, sign: int) -> None:
        """Count ``item`` in (``sign`` 1) or out (-1), as it is now."""
        if item.coded:
            self.coded += sign
            if item.seconds > 0:
                if sign > 0:
                    bisect.insort(self.times, item.seconds)
                else:
                    i = bisect.bisect_left(self.times, item.seconds)
                    if i < len(self.times) and self.times[i] == item.seconds:
                        del self.times[i]
        elif item.skipped:
            self.skipped += sign
        if item.flagged:
            self.flagged += sign

    def median_time(self) -> float | None:
        """The median of the coded items' seconds (None before three timed items)."""
        t = self.times
        n = len(t)
        if n < 3:
            return None
        return t[n // 2] if n % 2 else (t[n // 2 - 1] + t[n // 2]) / 2


@dataclass(frozen=True)
class ContextRow:
    action: Action
    text: str
    offset_s: float | None
    is_item: bool
    after: bool


@dataclass(frozen=True)
class _Undo:
    kind: Literal["answer", "skip"]
    index: int
    question: int
    previous: Answer | None = None
    was_skipped: bool = False


# -- helpers --------------------------------------------------------------------------------


def format_offset(seconds: float | None) -> str:
    """``-1:05`` / ``+0:08`` relative to the item; ``now`` for the item itself."""
    if seconds is None:
        return ""
    if abs(seconds) < 0.5:
        return "now"
    sign = "-" if seconds < 0 else "+"
    s = round(abs(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{sign}{h}:{m:02d}:{s:02d}" if h else f"{sign}{m}:{s:02d}"


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    m = round(s / 60)
    return f"{m}m" if m < 60 else f"{m // 60}h{m % 60:02d}m"


def _time_of(action: Action, start: datetime | None) -> float | None:
    t = parse_time(action.timestamp)
    if t is not None and start is not None:
        return (t - start).total_seconds()
    return action.elapsed_s


def time_in_session(queries: CodingQueries, action: Action) -> float | None:
    """Seconds into its session at which the action happened (None: the log has no times)."""
    return _time_of(action, queries.session_start(action.session))


def item_context_rows(
    store: Store,
    queries: CodingQueries,
    action: Action,
    before: int,
    after: int,
    *,
    show: Sequence[str] = (),
) -> list[ContextRow]:
    """The action among its ``before`` preceding and ``after`` following turns, each with
    its time relative to the action's and the ``show`` fields of its meta (what the coding
    and adjudication screens show)."""
    around = store.actions.context(action, before=before, after=after)
    start = queries.session_start(action.session)
    t0 = _time_of(action, start)
    item = ContextRow(
        action, describe_with(action, show), 0.0 if t0 is not None else None, True, False
    )
    rows: list[ContextRow] = []
    placed = False
    for a in around:
        if not placed and a.seq > action.seq:
            rows.append(item)
            placed = True
        t = _time_of(a, start)
        offset = t - t0 if t is not None and t0 is not None else None
        rows.append(ContextRow(a, describe_with(a, show), offset, False, placed))
    if not placed:
        rows.append(item)
    return rows


def human_coders(store: Store) -> list[str]:
    """The human coders recorded in the project file (any codebook; not gold nor LLMs)."""
    return [c for c in store.labels.coders() if is_human(c)]


def check_coder(store: Store, codebook: str, coder: str, *, new_coder: bool = False) -> bool:
    """Validate a coder name for coding; return True when the coder is new to this codebook.

    A name the file already has labels from (in any codebook) is accepted. A name it does
    not have is accepted only with ``new_coder`` (``--new-coder``), or while the file has no
    human coder yet: an unknown name is far more often a typo than a new coder. A corpus
    coding (``import --labels-as``) is not a coder of the file in this sense: it came with
    the data. Always refused: names that are not plain identifiers, names reserved for
    non-human coders (``gold``, ``llm:...``), and a name that differs from an existing
    coder's only in case.
    """
    humans = human_coders(store)
    corpus = store.labels.corpus_coders()
    coding = [c for c in humans if c not in corpus]
    choices = "existing coders: " + (", ".join(coding) if coding else "none yet")
    if corpus:
        choices += "; corpus codings: " + ", ".join(corpus)
    if coder in RESERVED_CODERS:
        raise UsageError(f"coder '{coder}' is reserved for {RESERVED_CODERS[coder]}", hint=choices)
    if coder.startswith("llm:"):
        raise UsageError(f"coder '{coder}' is reserved for the LLM coder", hint=choices)
    if not CODER_PATTERN.match(coder):
        raise UsageError(
            f"coder name '{coder}' is not allowed",
            hint="use letters, digits and . _ - @ + (no spaces); " + choices,
        )
    new_here = coder not in store.labels.coders(codebook)
    if coder in humans:
        return new_here
    clash = [c for c in humans if c.casefold() == coder.casefold()]
    if clash:
        raise UsageError(
            f"coder '{coder}' differs from the existing coder '{clash[0]}' only in case",
            hint=f"use --coder {clash[0]} to continue, or a clearly different name; {choices}",
        )
    if coding and not new_coder:
        raise NotFoundError(
            f"unknown coder '{coder}' ({choices})",
            hint=f"check the spelling, or pass --new-coder to start a new coder '{coder}'",
        )
    return True


def resolve_codebook(store: Store, name: str) -> LoadedCodebook:
    """A codebook file by name or path; else the newest version stored in the project file."""
    try:
        return find_codebook(name)
    except CodebookError as exc:
        stored = CodingQueries(store.db).stored_codebook_names()
        if name in stored:
            cb = store.codebooks.stored_codebook(name)
            return LoadedCodebook(cb, "", f"{name} (stored in the project file)")
        if stored and exc.hint:
            raise CodebookError(
                exc.message, hint=f"{exc.hint}; stored in this file: {', '.join(stored)}"
            ) from None
        raise


# -- the session ----------------------------------------------------------------------------


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
        name = sample or DEFAULT_SAMPLE
        if self.queries.sample_exists(name):
            return name
        others = self.queries.sample_names()
        make = f"annotate sample --n 180 --seed 7 --name {name}"
        if sample is None:
            raise NotFoundError(
                f"no sample named '{DEFAULT_SAMPLE}' (the one coded when --sample is not given)",
                hint=(
                    f"pass --sample NAME (samples: {', '.join(others)}), or make one with `{make}`"
                    if others
                    else f"draw one first: `{make}`"
                ),
            )
        raise NotFoundError(
            f"no sample named '{name}'",
            hint=(f"samples: {', '.join(others)}" if others else f"draw one first: `{make}`"),
        )

    def _check_coder(self, new_coder: bool) -> bool:
        return check_coder(self.store, self.codebook.name, self.coder, new_coder=new_coder)

    def _version_warning(self) -> str | None:
        current = self.codebook.version_hash
        if not self.queries.answered_under_another_version(self.codebook.name, self.coder, current):
            return None
        versions = self.queries.coder_versions(self.codebook.name, self.coder)
        older = [v for v in versions if v.version_hash != current and v.labels]
        if not older:
            return None
        was = ", ".join(
            f"v{v.version or '?'} ({v.version_hash}, {v.labels} answers)" for v in older
        )
        return (
            f"Codebook '{self.codebook.name}' changed since you started: your earlier answers "
            f"were made under {was}; it is now v{self.codebook.version} "
            f"({current}). Those answers keep their version; new ones get the new one."
        )

    def _load_items(self) -> tuple[list[Item], int]:
        """The sample's items (ids, and action types where the questions depend on them)
        and this coder's progress on them, by SQL; the actions themselves are read lazily
        (:class:`ItemActions`)."""
        questions = {
            kind: tuple(self.codebook.questions_for(kind)) if self.codebook.applies(kind) else ()
            for kind in self.store.actions.stored_action_types()
        }
        kept: list[tuple[str, tuple[Question, ...]]]
        uniform = {tuple(q.id for q in qs) for qs in questions.values()}
        if len(uniform) == 1 and () not in uniform:  # every action an item, same questions
            qs = next(iter(questions.values()))
            kept = [(aid, qs) for aid in self.queries.sample_item_ids(self.sample)]
            skipped = 0
        else:
            rows = self.queries.sample_item_types(self.sample)
            kept = [(aid, questions[kind]) for aid, kind in rows if questions.get(kind)]
            skipped = len(rows) - len(kept)
        actions = ItemActions(self.store, [aid for aid, _ in kept])
        items = [Item(i, aid, qs, actions) for i, (aid, qs) in enumerate(kept)]
        by_id = {item.action_id: item for item in items}
        rows = self.queries.coder_progress(self.codebook.name, self.coder)
        answers: dict[tuple[str | None, str | None, str | None], Answer] = {}
        for aid, question, value, codes, other_text, flagged, skip, note, seconds in rows:
            item = by_id.get(aid)  # an item of this sample (the rows are this coder's only)
            if item is None:
                continue
            if value is not None or codes:
                # answers are frozen: one object per distinct answer (100k labels, a few
                # dozen distinct answers)
                answer = answers.get((value, codes, other_text))
                if answer is None:
                    parsed = tuple(json.loads(codes)) if codes else ()
                    answer = Answer(value, parsed, other_text)
                    if value is not None or parsed:
                        answers[value, codes, other_text] = answer
                if answer.value is not None or answer.codes:
                    item.answers[question] = answer
            if flagged:
                item.flagged = True
            if skip:
                item.skipped = True
            if note is not None and not item.note:
                item.note = note
            if seconds:
                item.seconds += seconds
        return items, skipped

    @cached_property
    def names_screenshots(self) -> bool:
        """Whether an item of the sample names a screenshot (read once, from the few actions
        that mention one: see :meth:`CodingQueries.sample_metas_naming_screenshots`)."""
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
        it (see :class:`Tally`)."""
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
