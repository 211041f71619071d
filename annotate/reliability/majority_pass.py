"""The one gold planner of `annotate adjudicate` (with or without `--majority-only`): one
pass decides every case of the selection, writes the majority gold and retracts the
majority gold no majority backs any more; the screen then reads the cases it left to decide.

SQLite packs each item's votes into one number (its pattern) in one ordered pass over the
labels and keeps them in a temporary table. The few hundred distinct patterns are decided
here (:func:`majority_answer`, :func:`fits`); the cases a number cannot say (codes, an
"Other" text), the flagged ones and those whose gold must be kept are few, and are read one
by one. The majority gold is then written from the temporary table by one
``INSERT ... SELECT`` joined with the decided patterns; what the pass decided stays in its
tables, from which a plan's cases are read when someone looks at them.

At 1M items x 3 coders this is what makes the goal of issue 17 (< 6 s) reachable: no
object or row in Python per item.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from annotate.codebook import OTHER, Answer
from annotate.coding.answers import answer_text
from annotate.reliability.adjudication import (
    GOLD_CODER,
    GOLD_SOURCE,
    Case,
    Cases,
    GoldPlan,
    _made,
    fits,
    majority_answer,
)
from annotate.reliability.adjudication import read_cases as read_cases_of
from annotate.store.gold_votes import GoldKind, VoteScope
from annotate.store.label_cells import LabelScope

if TYPE_CHECKING:
    from annotate.codebook import Question
    from annotate.reliability.selection import Selection
    from annotate.store import Store

ANSWERS_KEPT = 50_000
"""Answers decoded once and kept while no more than this many: memory stays flat when the
"Other" texts do not repeat."""

FLAGGED, KEPT = 1, 2
"""The bits of why a case is set aside
(:meth:`~annotate.store.gold_votes.GoldVotes.stage_set_aside`)."""

SAMPLE_LOOKUP = 8
"""A sample's items are looked up one by one when this many times their number is fewer
than the labels (each lookup costs several times the label a full pass reads)."""


def numbered_values(questions: Sequence[Question]) -> tuple[str, ...]:
    """The values SQL numbers for the vote patterns: every question's codes and "other"."""
    return tuple(dict.fromkeys([*(c for q in questions for c in q.codes), OTHER]))


@dataclass
class _Patterns:
    """Vote patterns as SQL packs them, decoded to answers (one object per distinct one)."""

    scope: VoteScope
    made: dict[tuple[Any, ...], Answer] = field(default_factory=dict)

    def decode(self, pattern: Any, rich: str | None) -> tuple[Answer | None, ...]:
        """The answers of a pattern and its JSON of the answers a number cannot say."""
        scope = self.scope
        n = len(scope.labels.coders)
        numbers = [0] * n
        if isinstance(pattern, int):
            mask = (1 << scope.value_bits) - 1
            numbers = [(pattern >> (i * scope.value_bits)) & mask for i in range(n)]
        elif pattern:
            for part in pattern.split(","):
                coder, value = part.split(":")
                numbers[int(coder)] = int(value)
        values = scope.values
        answers = [
            _made(values[v - 1], (), None, self.made) if 1 <= v <= len(values) else None
            for v in numbers
        ]
        for coder, value, codes, other_text in json.loads(f"[{rich}]") if rich else ():
            answers[coder] = _made(
                value, tuple(json.loads(codes)) if codes else (), other_text, self.made
            )
        return tuple(answers)


@dataclass(frozen=True)
class _Votes:
    """What a vote pattern says: each coder's answer, how many answered, the majority."""

    answers: tuple[Answer | None, ...]
    n: int
    best: Answer | None
    votes: int
    fit: bool
    counted: tuple[Answer | None, ...]
    """The answers as a vote counts them, without "Other" texts (kept for the undecided)."""


@dataclass
class _Tally:
    """Cases by kind, and the votes of the undecided ones no coder flagged."""

    coders: tuple[str, ...]
    majority: int = 0
    to_decide: int = 0
    kept: int = 0
    too_few: int = 0

    def __post_init__(self) -> None:
        self.answered = dict.fromkeys(self.coders, 0)
        self.by_answering = [0] * (len(self.coders) + 1)
        self.undecided: Counter[tuple[Answer | None, ...]] = Counter()

    def add(
        self, votes: _Votes | None, why: int, cases: int, sign: int = 1, *, moved: bool = False
    ) -> str | None:
        """Count ``cases`` cases of these votes (None: no answer) set aside for ``why``
        (``sign`` -1: take them back; ``moved``: counted already, they only change kind);
        return their kind: ``majority``, ``to_decide``, ``kept``, or None (answered by
        one coder: left for later)."""
        n = votes.n if votes else 0
        count = sign * cases
        flagged = why & FLAGGED
        if not moved and (n or flagged):  # who answered, whatever the kind
            self.by_answering[n] += count
            if votes:
                answered = self.answered
                for coder, answer in zip(self.coders, votes.answers, strict=True):
                    if answer is not None:
                        answered[coder] += count
        if n < 2 and not flagged:
            self.too_few += count * (n == 1)
            return None
        if why & KEPT:
            self.kept += count
            return "kept"
        if not flagged and votes is not None and votes.fit:
            self.majority += count
            return "majority"
        self.to_decide += count
        if not flagged and votes is not None and votes.best is None:
            self.undecided[votes.counted] += count
        return "to_decide"


def _without_texts(answers: tuple[Answer | None, ...]) -> tuple[Answer | None, ...]:
    """The answers as a vote counts them (an "Other" text does not split a majority): the
    undecided votes stay as few as their patterns, whatever texts the coders wrote."""
    return tuple(
        a if a is None or a.other_text is None else Answer(a.value, a.codes) for a in answers
    )


def adjudicate_majority(
    store: Store, selection: Selection, adjudicator: str, *, read_cases: bool = False
) -> tuple[GoldPlan, int]:
    """Decide every case of the selection, store the majority gold and retract the
    majority gold no majority backs any more; return the plan and how many cases have
    majority gold. The plan's cases are read from what this pass staged: the ones the
    screen shows (to decide, kept) at once with ``read_cases``, the others when first asked
    for (the store still open, before another pass)."""
    cb = selection.codebook
    coders = selection.coders
    questions = selection.questions
    n_sample = len(selection.action_ids) if selection.action_ids is not None else None
    decided: dict[tuple[int, Any], _Votes] = {}

    def votes_of(q: int, pattern: Any, rich: str | None) -> _Votes:
        found = decided.get((q, pattern)) if rich is None else None
        if found is None:
            answers = patterns.decode(pattern, rich)
            best, votes = majority_answer(answers, len(coders))
            n = sum(a is not None for a in answers)
            fit = best is not None and fits(best, questions[q])
            counted = _without_texts(answers) if best is None else answers
            found = _Votes(answers, n, best, votes, fit, counted)
            if rich is None:  # the same few hundred patterns, over and over
                decided[q, pattern] = found
            elif len(patterns.made) > ANSWERS_KEPT:  # "Other" texts that do not repeat
                patterns.made.clear()
        return found

    tally = _Tally(coders)
    with store.db.transaction(), store.db.larger_cache():
        every_action = n_sample is not None and n_sample == store.actions.count_actions()
        # a sample of every action keeps nothing out (a lookup per item at 1M: 0.7 s)
        sample = selection.sample if n_sample is not None and not every_action else None
        labels = LabelScope(cb.name, tuple(q.id for q in questions), coders, sample)
        scope = VoteScope(labels, numbered_values(questions))
        patterns = _Patterns(scope)
        through = (
            sample is not None and n_sample * SAMPLE_LOOKUP < store.gold_votes.labels_upper_bound()
        )
        store.gold_votes.stage_votes(scope, through_sample=through)
        staged = store.gold_votes.staged_pass
        plain = store.gold_votes.staged_pattern_counts(scope)
        set_aside = store.gold_votes.stage_set_aside(labels, GOLD_SOURCE, through_sample=through)
        majority_patterns: list[tuple[int, Any]] = []
        undecided: list[tuple[int, Any, str | None]] = []
        for q, pattern, cases in plain:
            kind = tally.add(votes_of(q, pattern, None), 0, cases)
            if kind == "majority":
                majority_patterns.append((q, pattern))
            elif kind == "to_decide":
                undecided.append((q, pattern, None))
        store.gold_votes.stage_rich_majority()
        for chunk in store.gold_votes.staged_rich_patterns():  # each distinct votes once, in chunks
            rich_kinds = []
            for q, pattern, rich, cases, not_aside in chunk:
                votes = votes_of(q, pattern, rich)
                kind = tally.add(votes, 0, cases)
                if kind == "majority" and not_aside:
                    gold = _gold_kind(votes, questions[q], coders, adjudicator)
                    rich_kinds.append((q, pattern, rich, gold))
                elif kind == "to_decide":
                    undecided.append((q, pattern, rich))
            store.gold_votes.add_rich_kinds(rich_kinds)
        classified: list[tuple[str | None, str, int]] = []
        for action_id, q, why, pattern, rich in set_aside:  # counted again as what they are
            votes = votes_of(q, pattern, rich) if pattern is not None else None
            if votes is not None:
                tally.add(votes, 0, 1, sign=-1, moved=True)
            classified.append((tally.add(votes, why, 1, moved=votes is not None), action_id, q))
        kinds: list[GoldKind] = []
        kind_of: dict[tuple[int, Any], int] = {}

        def kind(q: int, pattern: Any) -> int:
            if (q, pattern) not in kind_of:
                kind_of[q, pattern] = len(kinds)
                kinds.append(_gold_kind(decided[q, pattern], questions[q], coders, adjudicator))
            return kind_of[q, pattern]

        staged_kinds = [(q, p, kind(q, p)) for q, p in majority_patterns]
        store.gold_votes.stage_pattern_kinds(cb, GOLD_SOURCE, kinds, staged_kinds)
        stale = tuple(  # read before the gold is written
            store.gold_votes.staged_stale_gold(labels, GOLD_SOURCE, actions_only=every_action)
        )
        store.gold_votes.stage_rich_answers(cb, GOLD_SOURCE)
        store.gold_votes.write_staged_majority(cb.name)
        store.gold_votes.clear_answers(cb.name, GOLD_CODER, stale)

    order = selection.sample if selection.action_ids is not None else None
    unstaged = [True]

    def cases(kind: str, n: int, shown: bool) -> Cases:
        def read() -> list[Case]:
            if unstaged and staged == store.gold_votes.staged_pass:  # the kinds, for the first read
                store.gold_votes.stage_undecided(undecided)
                store.gold_votes.classify_set_aside(classified)
                unstaged.clear()
            cells = store.gold_votes.staged_cases(kind, order, staged)
            return read_cases_of(store, selection, cells, shown)

        return Cases(n, read)

    plan = GoldPlan(
        cb,
        selection.sample,
        coders,
        majority=cases("majority", tally.majority, False),
        to_decide=cases("to_decide", tally.to_decide, True),
        kept=cases("kept", tally.kept, True),
        too_few=tally.too_few,
        stale=stale,
        answered=tally.answered,
        by_answering={n: c for n, c in reversed(list(enumerate(tally.by_answering))) if c},
        undecided_votes=tuple((v, n) for v, n in tally.undecided.items() if n > 0),
    )
    if read_cases:
        for shown in (plan.to_decide, plan.kept):
            assert isinstance(shown, Cases)
            shown.cases  # noqa: B018
    return plan, tally.majority


def _gold_kind(votes: _Votes, question: Any, coders: Sequence[str], adjudicator: str) -> GoldKind:
    """The majority gold of these votes, with its provenance: what :func:`gold_meta` makes
    of a majority case (its reason ``majority N of M``), without the case (an "Other"
    majority with its text is one per item)."""
    best = votes.best
    assert best is not None
    best.check(question)
    meta = {
        "method": "majority",
        "adjudicator": adjudicator,
        "coders": list(coders),
        "votes": {
            c: (answer_text(a) if a else None) for c, a in zip(coders, votes.answers, strict=True)
        },
        "reason": f"majority {votes.votes} of {len(coders)}",
    }
    return GoldKind.of(question.id, best, meta)
