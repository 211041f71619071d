"""`annotate adjudicate --majority-only` in one pass: the plan of :func:`plan_gold` and the
write of :func:`write_majority`, without an object or a row in Python per item.

SQLite packs each item's votes into one number (its pattern) in one ordered pass over the
labels and keeps them in a temporary table. The few hundred distinct patterns are decided
here, by the same rules as :func:`plan_gold` (:func:`majority_answer`, :func:`fits`); the
cases a number cannot say (codes, an "Other" text), the flagged ones and those whose gold
must be kept are few, and are read one by one. The majority gold is then written from the
temporary table by one ``INSERT ... SELECT`` joined with the decided patterns.

At 1M items x 3 coders this is what makes the goal of issue 17 (< 6 s) reachable: the plan
and write of :mod:`annotate.reliability.adjudication` read a million rows into Python.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from annotate.coding.answers import answer_text
from annotate.reliability import adjudication
from annotate.reliability.adjudication import (
    GOLD_CODER,
    GOLD_SOURCE,
    Case,
    Cases,
    GoldPlan,
    _numbered_values,
    _Patterns,
    fits,
    majority_answer,
    plan_gold,
)
from annotate.store.gold_votes import GoldKind, VoteScope
from annotate.store.label_cells import LabelScope

if TYPE_CHECKING:
    from annotate.codebook import Answer
    from annotate.reliability.agreement_data import Selection
    from annotate.store import Store

ANSWERS_KEPT = 50_000
"""Answers decoded once and kept while no more than this many: memory stays flat when the
"Other" texts do not repeat."""

FLAGGED, KEPT = 1, 2
"""The bits of why a case is set aside (:meth:`Store.stage_set_aside`)."""


@dataclass(frozen=True)
class _Votes:
    """What a vote pattern says: each coder's answer, how many answered, the majority."""

    answers: tuple[Answer | None, ...]
    n: int
    best: Answer | None
    votes: int
    fit: bool


@dataclass
class _Tally:
    """Cases by kind, as :func:`plan_gold` sorts them."""

    coders: tuple[str, ...]
    majority: int = 0
    to_decide: int = 0
    kept: int = 0
    too_few: int = 0

    def __post_init__(self) -> None:
        self.answered = dict.fromkeys(self.coders, 0)

    def add(self, votes: _Votes | None, why: int, cases: int, sign: int = 1) -> bool:
        """Count ``cases`` cases of these votes (None: no answer) set aside for ``why``
        (``sign`` -1: take them back); return whether they have majority gold."""
        n = votes.n if votes else 0
        flagged, kept = bool(why & FLAGGED), bool(why & KEPT)
        wanted = n >= 2 or flagged
        self.too_few += sign * cases * (n == 1 and not flagged)
        if not wanted:
            return False
        if votes:
            for coder, answer in zip(self.coders, votes.answers, strict=True):
                self.answered[coder] += sign * cases * (answer is not None)
        if kept:
            self.kept += sign * cases
            return False
        majority = not flagged and votes is not None and votes.fit
        if majority:
            self.majority += sign * cases
        else:
            self.to_decide += sign * cases
        return majority


def write_majority_in_one_pass(
    store: Store, selection: Selection, adjudicator: str
) -> tuple[GoldPlan, int]:
    """Decide and store the majority gold of the selection, retract the majority gold no
    majority backs any more; return the plan (its cases read only when asked for) and how
    many cases have majority gold: what :func:`plan_gold` with ``read_cases=False`` and
    :func:`write_majority` give."""
    cb = selection.codebook
    coders = selection.coders
    questions = selection.questions
    n_sample = len(selection.action_ids) if selection.action_ids is not None else None
    decided: dict[tuple[int, Any], _Votes] = {}

    def votes_of(q: int, pattern: Any, rich: str | None) -> _Votes:
        found = decided.get((q, pattern)) if rich is None else None
        if found is None:
            answers = patterns.decode(pattern if rich is None else (pattern, rich))
            best, votes = majority_answer(answers, len(coders))
            n = sum(a is not None for a in answers)
            fit = best is not None and fits(best, questions[q])
            found = _Votes(answers, n, best, votes, fit)
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
        scope = VoteScope(labels, _numbered_values(questions))
        patterns = _Patterns(scope)
        lookup = adjudication.SAMPLE_LOOKUP
        through = sample is not None and n_sample * lookup < store.gold_votes.labels_upper_bound()
        store.majority_pass.stage_votes(scope, through_sample=through)
        plain = store.majority_pass.staged_pattern_counts(scope)
        set_aside = store.majority_pass.stage_set_aside(labels, GOLD_SOURCE, through_sample=through)
        majority_patterns: list[tuple[int, Any]] = []
        for q, pattern, cases in plain:
            if tally.add(votes_of(q, pattern, None), 0, cases):
                majority_patterns.append((q, pattern))
        store.majority_pass.stage_rich_majority()
        # each distinct votes once, in chunks
        for chunk in store.majority_pass.staged_rich_patterns():
            rich_kinds = []
            for q, pattern, rich, cases, not_aside in chunk:
                votes = votes_of(q, pattern, rich)
                if tally.add(votes, 0, cases) and not_aside:
                    kind = _gold_kind(votes, questions[q], coders, adjudicator)
                    rich_kinds.append((q, pattern, rich, kind))
            store.majority_pass.add_rich_kinds(rich_kinds)
        for _, q, why, pattern, rich in set_aside:  # counted again as what they are
            votes = votes_of(q, pattern, rich) if pattern is not None else None
            if votes is not None:
                tally.add(votes, 0, 1, sign=-1)
            tally.add(votes, why, 1)
        kinds: list[GoldKind] = []
        kind_of: dict[tuple[int, Any], int] = {}

        def kind(q: int, pattern: Any) -> int:
            if (q, pattern) not in kind_of:
                kind_of[q, pattern] = len(kinds)
                kinds.append(_gold_kind(decided[q, pattern], questions[q], coders, adjudicator))
            return kind_of[q, pattern]

        staged = [(q, p, kind(q, p)) for q, p in majority_patterns]
        store.majority_pass.stage_pattern_kinds(cb, GOLD_SOURCE, kinds, staged)
        stale = tuple(  # read before the gold is written
            store.majority_pass.staged_stale_gold(labels, GOLD_SOURCE, actions_only=every_action)
        )
        store.majority_pass.stage_rich_answers(cb, GOLD_SOURCE)
        store.majority_pass.write_staged_majority(cb.name)
        store.gold_votes.clear_answers(cb.name, GOLD_CODER, stale)

    def later(kind: str) -> Callable[[], list[Case]]:
        def read() -> list[Case]:
            return list(getattr(plan_gold(store, selection, read_cases=False), kind))

        return read

    plan = GoldPlan(
        cb,
        selection.sample,
        coders,
        majority=Cases(tally.majority, later("majority")),
        to_decide=Cases(tally.to_decide, later("to_decide")),
        kept=Cases(tally.kept, later("kept")),
        too_few=tally.too_few,
        stale=stale,
        answered=tally.answered,
    )
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
