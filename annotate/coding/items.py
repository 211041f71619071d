"""A session's items: the sample's actions read a page at a time, each item's answers and
marks, and the counts kept up to date item by item."""

from __future__ import annotations

import bisect
import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from annotate.codebook import Answer, Codebook, Question
from annotate.models import Action
from annotate.store import Store
from annotate.store.coding import CodingQueries


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


@dataclass(frozen=True)
class Counts:
    n: int
    coded: int
    skipped: int
    flagged: int


class Tally:
    """The session's counts (coded, skipped, flagged) and the seconds of its coded items,
    kept up to date item by item (see
    :meth:`~annotate.coding.session.CodingSession._changing`) instead of counted over every
    item of a 100k-item sample at each render of the status line."""

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


def load_items(
    store: Store, queries: CodingQueries, codebook: Codebook, coder: str, sample: str
) -> tuple[list[Item], int]:
    """The sample's items (ids, and action types where the questions depend on them)
    and this coder's progress on them, by SQL; the actions themselves are read lazily
    (:class:`ItemActions`)."""
    questions = {
        kind: tuple(codebook.questions_for(kind)) if codebook.applies(kind) else ()
        for kind in store.actions.stored_action_types()
    }
    kept: list[tuple[str, tuple[Question, ...]]]
    uniform = {tuple(q.id for q in qs) for qs in questions.values()}
    if len(uniform) == 1 and () not in uniform:  # every action an item, same questions
        qs = next(iter(questions.values()))
        kept = [(aid, qs) for aid in queries.sample_item_ids(sample)]
        skipped = 0
    else:
        rows = queries.sample_item_types(sample)
        kept = [(aid, questions[kind]) for aid, kind in rows if questions.get(kind)]
        skipped = len(rows) - len(kept)
    actions = ItemActions(store, [aid for aid, _ in kept])
    items = [Item(i, aid, qs, actions) for i, (aid, qs) in enumerate(kept)]
    by_id = {item.action_id: item for item in items}
    rows = queries.coder_progress(codebook.name, coder)
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
