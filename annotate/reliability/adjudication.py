"""Adjudication to gold, without any UI: majority vote, the cases left to decide, decisions.

For every item and question that two or more of the selected coders answered:

- a **strict majority** (more than half of the selected coders gave the same answer) makes
  gold at once (method ``majority``), unless a coder flagged the item;
- a **tie**, an item answered by too few coders for a majority, and a **flagged** item is
  a *case* for the adjudicator, who sees every coder's answer and note and decides
  (method ``decided``).

Answers are compared whole: the code, and for multi-select and yes/no questions the set of
codes (reasons); a free-text or number answer by its value (equal texts, equal numbers: a
number is stored in one canonical form). On a text or number case the adjudicator picks one
coder's answer (keys 1-9) or types the gold (``t``; a number within the question's ``min``,
``max`` and ``step``). The text of an "Other" does not split a majority; the gold keeps the text
most of the majority wrote. Gold is stored as coder ``gold`` with ``source='adjudicate'`` and
its provenance in ``meta``: ``method``, ``adjudicator``, the ``coders`` and their ``votes``.
A decided gold is never overwritten by a later majority vote. A majority gold whose majority
is gone (a coder changed or flagged an answer, or other coders were selected) is retracted
when the majority gold is written again; the case then goes to the adjudicator.

One planner decides (:mod:`annotate.reliability.majority_pass`, for `--majority-only` and
the screen alike): SQL packs each item's answers into a vote pattern
(:mod:`annotate.store.gold_votes`), the few distinct patterns are decided here
(:func:`majority_answer`, :func:`fits`), the majority gold is written by one
``INSERT ... SELECT``, and a :class:`Case` is made only for the cases someone looks at,
read back from what the pass staged (:func:`read_cases`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from annotate.codebook import NO, OTHER, Answer, Codebook, Question
from annotate.codebook import TYPED_KINDS as TYPED
from annotate.coding.answers import answer_text
from annotate.coding.choices import Choice, question_choices
from annotate.errors import AnnotateError, CodebookError, UsageError
from annotate.models import Action
from annotate.reliability.selection import Selection
from annotate.store import LabelWrite, Store
from annotate.store.agreement_runs import GOLD_CODER, GOLD_SOURCE
from annotate.store.item_ids import Later

Method = Literal["majority", "decided"]


@dataclass(frozen=True)
class CoderAnswer:
    """One coder's row for a case: the answer (None if not given), note and flag."""

    coder: str
    answer: Answer | None
    note: str | None = None
    flagged: bool = False
    skipped: bool = False

    @property
    def text(self) -> str:
        if self.answer is None:
            return "(skipped)" if self.skipped else "-"
        return answer_text(self.answer)


def fits(answer: Answer, question: Question) -> bool:
    """Whether the codebook version's question allows ``answer``: an "other" given under a
    version that offered Other does not fit one that no longer does."""
    key = (id(question), answer)
    known = _FITS.get(key)
    if known is not None and known[0] is question:
        return known[1]
    try:
        answer.check(question)
    except CodebookError:
        result = False
    else:
        result = True
    if len(_FITS) > 4096:
        _FITS.clear()
    _FITS[key] = (question, result)
    return result


_FITS: dict[tuple[int, Answer], tuple[Question, bool]] = {}
"""Answers already checked against a question object (the question is kept, so its id is
not reused): adjudicating 100k items checks a handful of distinct answers."""


def _key(answer: Answer) -> tuple[str | None, frozenset[str]]:
    return answer.value, frozenset(answer.codes)


@dataclass
class Case:
    """One item and question, with every selected coder's answer and the vote."""

    action_id: str
    question: Question
    answers: tuple[CoderAnswer, ...]
    majority: Answer | None
    votes: int
    flagged_by: tuple[str, ...]
    gold: Answer | None = None
    gold_meta: dict[str, Any] = field(default_factory=dict)
    load_action: Callable[[str], Action] | None = field(default=None, repr=False, compare=False)
    """Reads the item's action when first asked for: a majority case's action is read only
    then (while its store is open); the other cases' come with the plan."""
    loaded: Action | None = field(default=None, repr=False, compare=False)

    @property
    def action(self) -> Action:
        if self.loaded is None:
            if self.load_action is None:
                raise ValueError(f"case {self.action_id}: no action loaded")
            self.loaded = self.load_action(self.action_id)
        return self.loaded

    @property
    def n_answers(self) -> int:
        return sum(a.answer is not None for a in self.answers)

    @property
    def decided(self) -> bool:
        return self.gold is not None and self.gold_meta.get("method") == "decided"

    @property
    def kept_gold(self) -> bool:
        """Gold that adjudication leaves alone: decided, or not made by adjudication."""
        return self.gold is not None and (
            self.decided or self.gold_meta.get("source") != GOLD_SOURCE
        )

    @property
    def reason(self) -> str:
        """Why this case needs a person (or how the majority decided it)."""
        return self._reason()[1]

    @property
    def short_reason(self) -> str:
        """The reason in a few words, for a status line: tie, flagged, no strict majority..."""
        return self._reason()[0]

    def _reason(self) -> tuple[str, str]:
        if self.flagged_by:
            flagged = "flagged by " + ", ".join(self.flagged_by)
            return flagged, flagged
        if self.majority is not None and not fits(self.majority, self.question):
            return "majority not a code", (
                f"the majority answer '{answer_text(self.majority)}' is not a code of this "
                "codebook version (it was made under one that offered it)"
            )
        if self.majority is not None:
            return "majority", f"majority {self.votes} of {len(self.answers)}"
        counts = Counter(_key(a.answer) for a in self.answers if a.answer is not None)
        top = max(counts.values())
        n, selected = self.n_answers, len(self.answers)
        if short_of_votes([a.answer for a in self.answers], selected):
            coders = "--coders " + ",".join(a.coder for a in self.answers if a.answer is not None)
            return f"short of votes, {n} of {selected} answered: {coders} decides it", (
                f"short of votes: {top} of the {n} coders who answered agree, but a majority "
                f"needs {selected // 2 + 1} of the {selected} selected; {coders} would decide it"
            )
        return "tie", "tie: " + " vs ".join(
            f"{answer_text(Answer(v, tuple(sorted(c))))} ({n})" for (v, c), n in counts.items()
        )

    def votes_meta(self) -> dict[str, str | None]:
        return {a.coder: (answer_text(a.answer) if a.answer else None) for a in self.answers}


def majority_answer(answers: Sequence[Answer | None], n_coders: int) -> tuple[Answer | None, int]:
    """The answer more than half of ``n_coders`` gave (and its votes), else (None, top votes).

    The "Other" text of the majority answer is the one most of its voters wrote (the first
    of them on a tie).
    """
    given = [a for a in answers if a is not None]
    if not given:
        return None, 0
    counts = Counter(_key(a) for a in given)
    (value, codes), votes = counts.most_common(1)[0]
    if votes * 2 <= n_coders:
        return None, votes
    texts = Counter(a.other_text for a in given if _key(a) == (value, codes) and a.other_text)
    other_text = texts.most_common(1)[0][0] if texts else None
    uses_other = value == OTHER or OTHER in codes
    return Answer(value, tuple(sorted(codes)), other_text if uses_other else None), votes


def short_of_votes(answers: Sequence[Answer | None], n_coders: int) -> bool:
    """Whether votes without a majority lack one only for want of votes: fewer coders
    answered than selected, and more than half of those who did agree (the coders who
    answered, selected alone, would decide it)."""
    given = [a for a in answers if a is not None]
    return 0 < len(given) < n_coders and majority_answer(given, len(given))[0] is not None


class Cases(Later[Case]):
    """Cases made when first asked for (its length is known at once): a plan counts the
    cases of every kind from the vote patterns, and reads the rows of a case (notes, flags,
    its gold) only for the cases someone looks at. ``read`` needs the store still open."""

    @property
    def cases(self) -> list[Case]:
        """One case per (item, question) the plan counted (the list read, kept)."""
        items = self.items
        assert isinstance(items, list)
        return items


@dataclass(frozen=True)
class GoldPlan:
    """What adjudication will do for the selected codebook, sample and coders."""

    codebook: Codebook
    sample: str | None
    coders: tuple[str, ...]
    majority: Sequence[Case]
    """Cases a strict majority decides (not flagged, no decided gold yet)."""
    to_decide: Sequence[Case]
    """Ties, too few answers for a majority, flagged items: for the adjudicator."""
    kept: Sequence[Case]
    """Cases whose gold is already decided (or was not made here): left alone."""
    too_few: int
    """Items and questions answered by fewer than two of the coders: left for later."""
    stale: tuple[tuple[str, str], ...] = ()
    """(action id, question) of majority gold that no majority backs any more."""
    answered: dict[str, int] = field(default_factory=dict)
    """Cases (item and question) each coder answered, those left for later included."""
    by_answering: dict[int, int] = field(default_factory=dict)
    """Cases (item and question) by how many of the selected coders answered them (0: a
    flagged case nobody answered), the most first."""
    undecided_votes: tuple[tuple[tuple[Answer | None, ...], int], ...] = ()
    """The distinct votes (each selected coder's answer without its "Other" text, None:
    none) of the cases without a majority that no coder flagged, each with how many cases:
    what the majority rule and the coverage of the coders say
    (:mod:`annotate.reliability.majority_rule`)."""

    @property
    def undecided(self) -> list[Case]:
        return [c for c in self.to_decide if not c.decided]

    @property
    def n_undecided(self) -> int:
        """How many cases are undecided, without reading them when they were not read
        (a case is decided only through a case object)."""
        if isinstance(self.to_decide, Cases) and not self.to_decide.loaded:
            return len(self.to_decide)
        return len(self.undecided)


CELL_COLUMNS = (
    "action_id",
    "coder",
    "value",
    "codes",
    "other_text",
    "note",
    "meta",
    "flagged",
    "skipped",
)
"""What a case needs of each coder's label (a smaller row per label at corpus scale)."""

GOLD_COLUMNS = ("action_id", "value", "codes", "other_text", "source", "meta")


def _note(row: dict[str, Any]) -> str | None:
    return row.get("note") or (row.get("meta") or {}).get("note") or None


def _answer(
    row: dict[str, Any], made: dict[tuple[Any, ...], Answer] | None = None
) -> Answer | None:
    """The row's answer; ``made`` keeps one object per distinct answer (a corpus has few)."""
    return _made(row["value"], tuple(row["codes"]), row["other_text"], made)


def _made(
    value: str | None,
    codes: tuple[str, ...],
    other_text: str | None,
    made: dict[tuple[Any, ...], Answer] | None = None,
) -> Answer | None:
    if value is None and not codes:
        return None
    key = (value, codes, other_text)
    if made is None:
        return Answer(*key)
    found = made.get(key)
    if found is None:
        found = made[key] = Answer(*key)
    return found


def _coder_answer(
    coder: str,
    row: dict[str, Any] | None,
    made: dict[tuple[Any, ...], Answer],
    shared: dict[tuple[Any, ...], CoderAnswer],
) -> CoderAnswer:
    """The coder's row for a case, one object per distinct row (``shared``)."""
    if row is None:
        key: tuple[Any, ...] = (coder,)
        found = shared.get(key)
        if found is None:
            found = shared[key] = CoderAnswer(coder, None)
        return found
    answer = _answer(row, made)
    note = _note(row)
    key = (coder, id(answer), note, bool(row["flagged"]), bool(row["skipped"]))
    found = shared.get(key)
    if found is None:
        found = shared[key] = CoderAnswer(coder, answer, note, key[3], key[4])
    return found


def read_cases(
    store: Store, selection: Selection, cells: Sequence[tuple[int, str]], shown: bool
) -> list[Case]:
    """The cases of these (question index, action id), in this order (by question), with
    every coder's row (answer, note, flag) and the gold; ``shown``: with their actions
    too."""
    cb = selection.codebook
    coders = selection.coders
    out: list[Case] = []
    by_question: dict[int, list[str]] = {}
    for q, action_id in cells:
        by_question.setdefault(q, []).append(action_id)
    with store.db.read_snapshot():
        for q_number, ids in by_question.items():
            q = selection.questions[q_number]
            by_item: dict[str, dict[str, dict[str, Any]]] = {}
            for r in store.gold_votes.label_rows_of(cb.name, q.id, coders, ids, CELL_COLUMNS):
                by_item.setdefault(r["action_id"], {})[r["coder"]] = r
            golds = {
                r["action_id"]: r
                for r in store.gold_votes.label_rows_of(
                    cb.name, q.id, [GOLD_CODER], ids, GOLD_COLUMNS
                )
                if _answer(r) is not None
            }
            made: dict[tuple[Any, ...], Answer] = {}
            shared: dict[tuple[Any, ...], CoderAnswer] = {}  # a corpus has few distinct rows
            votes_of: dict[tuple[int, ...], tuple[Answer | None, int]] = {}
            for action_id in ids:
                rows = by_item.get(action_id, {})
                answers = tuple(_coder_answer(c, rows.get(c), made, shared) for c in coders)
                given = [a.answer for a in answers]
                vote_key = tuple(map(id, given))  # answers are shared objects (``made``)
                found = votes_of.get(vote_key)
                if found is None:
                    found = votes_of[vote_key] = majority_answer(given, len(coders))
                best, votes = found
                gold_row = golds.get(action_id)
                out.append(
                    Case(
                        action_id=action_id,
                        question=q,
                        answers=answers,
                        majority=best,
                        votes=votes,
                        flagged_by=tuple(a.coder for a in answers if a.flagged),
                        gold=_answer(gold_row) if gold_row else None,
                        gold_meta=(
                            (gold_row["meta"] or {}) | {"source": gold_row["source"]}
                            if gold_row
                            else {}
                        ),
                        load_action=store.actions.action,
                    )
                )
        if shown:  # their actions now, one query per 900
            actions = store.actions.actions_by_ids([c.action_id for c in out])
            for case, action in zip(out, actions, strict=True):
                case.loaded = action
    return out


def gold_meta(case: Case, method: Method, adjudicator: str, coders: Sequence[str]) -> dict:
    return {
        "method": method,
        "adjudicator": adjudicator,
        "coders": list(coders),
        "votes": case.votes_meta(),
        "reason": case.reason,
    }


def decide(store: Store, plan: GoldPlan, case: Case, answer: Answer, adjudicator: str) -> None:
    """Store the adjudicator's answer for one case as gold (method ``decided``)."""
    answer.check(case.question)
    meta = gold_meta(case, "decided", adjudicator, plan.coders)
    store.agreement.save_gold(
        plan.codebook,
        [LabelWrite(case.action_id, case.question.id, GOLD_CODER, answer, GOLD_SOURCE, meta)],
    )
    case.gold = answer
    case.gold_meta = meta | {"source": GOLD_SOURCE}


# -- the adjudicator's keys (the screen forwards keys here) ----------------------------------


@dataclass(frozen=True)
class Feedback:
    kind: Literal["info", "warning", "need_text", "need_answer", "saved", "done"]
    message: str


TYPE_KEY = "t"
"""On a text or number case: type the gold answer."""
MOST_PICKED = 9
"""Distinct coders' answers offered (keys 1-9) on a text or number case."""


def typed_choices(case: Case) -> tuple[Choice, ...]:
    """A text or number case's keys: each distinct answer the coders gave (1-9, in the
    coders' order, with who gave it), then ``t``: type the gold."""
    given: dict[str, list[str]] = {}
    for a in case.answers:
        if a.answer is not None and a.answer.value is not None:
            given.setdefault(a.answer.value, []).append(a.coder)
    picked = [
        Choice(str(i), value, f"{value} ({', '.join(coders)})", "value")
        for i, (value, coders) in enumerate(list(given.items())[:MOST_PICKED], start=1)
    ]
    what = "number" if case.question.kind == "number" else "text"
    typed = Choice(
        TYPE_KEY, "", f"Type the gold {what}", "value",
        f"Write the gold answer yourself (a {what}), then Enter to store it.",
    )  # fmt: skip
    return (*picked, typed)


class AdjudicationSession:
    """The adjudicator going through the cases of a plan, one key per decision."""

    def __init__(self, store: Store, plan: GoldPlan, adjudicator: str):
        if not plan.to_decide:
            raise UsageError("nothing to adjudicate: every case has a majority or a decision")
        self.store = store
        self.plan = plan
        self.adjudicator = adjudicator
        self.cases = list(plan.to_decide)
        self.index = next((i for i, c in enumerate(self.cases) if not c.decided), 0)
        self.toggles: set[str] | None = None
        """Codes switched on while putting together a set (reasons of a 'no', multi)."""
        self.pending_other: Answer | None = None
        self.toggle_other: str | None = None
        """The text of an "other" reason ticked in ``toggles`` (asked for at once)."""
        self.decisions = 0
        """Cases decided in this sitting."""

    @property
    def case(self) -> Case:
        return self.cases[self.index]

    @property
    def n(self) -> int:
        return len(self.cases)

    @property
    def n_decided(self) -> int:
        return sum(c.decided for c in self.cases)

    @property
    def finished(self) -> bool:
        return self.n_decided == self.n

    def choices(self) -> tuple[Choice, ...]:
        case = self.case
        if case.question.kind in TYPED:
            return typed_choices(case)
        return question_choices(case.question)

    @property
    def typed(self) -> bool:
        """Whether this case is a text or number question (picked or typed, not coded)."""
        return self.case.question.kind in TYPED

    def is_on(self, choice: Choice) -> bool:
        if self.toggles is not None:
            return choice.code in self.toggles or (
                choice.code == NO and self.case.question.kind == "yes_no_reasons"
            )
        gold = self.case.gold
        if gold is None:
            return False
        return choice.code in gold.codes if choice.role == "toggle" else choice.code == gold.value

    def handles(self, char: str | None) -> bool:
        return bool(char) and any(c.key == char for c in self.choices())

    def press(self, char: str) -> Feedback | None:
        choice = next((c for c in self.choices() if c.key == char), None)
        if choice is None:
            return None
        q = self.case.question
        if q.kind in TYPED:
            if choice.key == TYPE_KEY:
                return Feedback("need_answer", f"{q.id}: {q.prompt}")
            return self._save(Answer(choice.code))
        if choice.role == "toggle":
            if self.toggles is None:
                gold = self.case.gold
                self._start_toggles(gold if gold is not None and gold.codes else None)
            assert self.toggles is not None
            self.toggles ^= {choice.code}
            if choice.code == OTHER:  # as in `annotate code`: its text is asked for at once
                if OTHER not in self.toggles:
                    self.toggle_other = None
                elif not self.toggle_other:
                    return Feedback("need_text", "Describe the 'other' reason.")
            return None
        if choice.code == NO and q.kind == "yes_no_reasons":
            gold = self.case.gold
            self._start_toggles(gold if gold is not None and gold.value == NO else None)
            return Feedback("info", "Choose every reason that applies, then press Enter.")
        self.toggles = None
        if choice.code == OTHER:
            self.pending_other = Answer(OTHER)
            return Feedback("need_text", "Describe the 'other' answer.")
        return self._save(Answer(choice.code))

    def _start_toggles(self, gold: Answer | None) -> None:
        self.toggles = set(gold.codes) if gold is not None else set()
        self.toggle_other = gold.other_text if gold is not None else None

    def drop_other(self) -> None:
        """The text field of an "other" reason was closed empty: untick "other"."""
        if self.toggles is not None and not self.toggle_other:
            self.toggles.discard(OTHER)

    def confirm(self) -> Feedback | None:
        """Enter: store the set being put together."""
        if self.toggles is None:
            return None
        q = self.case.question
        if not self.toggles:
            what = "reason" if q.kind == "yes_no_reasons" else "option"
            return Feedback("warning", f"Choose at least one {what} first (or Escape).")
        value = NO if q.kind == "yes_no_reasons" else None
        other = self.toggle_other if OTHER in self.toggles else None
        answer = Answer(value, tuple(sorted(self.toggles)), other)
        self.toggles = None
        self.toggle_other = None
        if OTHER in answer.codes and not other:
            self.pending_other = answer
            return Feedback("need_text", "Describe the 'other' reason.")
        return self._save(answer)

    def cancel(self) -> None:
        self.toggles = None
        self.toggle_other = None
        self.pending_other = None

    def answer_other(self, text: str) -> Feedback | None:
        text = text.strip()
        base = self.pending_other
        if base is None and self.toggles is not None:  # an "other" reason being ticked
            if not text:
                return Feedback("warning", "'Other' needs a short description.")
            self.toggles.add(OTHER)
            self.toggle_other = text
            return None
        if base is None:
            return None
        if not text:
            return Feedback("warning", "'Other' needs a short description.")
        self.pending_other = None
        return self._save(Answer(base.value, base.codes, text))

    def answer_typed(self, text: str) -> Feedback | None:
        """The gold typed for a text or number case (after a ``need_answer`` feedback)."""
        q = self.case.question
        try:
            answer = Answer.number(text, q) if q.kind == "number" else Answer(text.strip())
        except AnnotateError as exc:
            return Feedback("warning", exc.message)
        if answer.value == "":
            return Feedback("warning", "The gold text is empty: nothing stored.")
        return self._save(answer)

    def typed_so_far(self) -> str:
        """What the field opens with: the gold, else the first coder's answer."""
        case = self.case
        if case.gold is not None and case.gold.value is not None:
            return case.gold.value
        return next(
            (a.answer.value for a in case.answers if a.answer and a.answer.value is not None), ""
        )

    def _save(self, answer: Answer) -> Feedback:
        case = self.case
        try:
            decide(self.store, self.plan, case, answer, self.adjudicator)
        except AnnotateError as exc:
            return Feedback("warning", exc.message)
        self.decisions += 1
        saved = f"Gold for #{self.index + 1}: {answer_text(answer)}."
        if self.finished:
            return Feedback("done", f"{saved} All {self.n} cases are decided.")
        self._next_undecided()
        return Feedback("saved", saved)

    def _next_undecided(self) -> None:
        order = list(range(self.index + 1, self.n)) + list(range(0, self.index + 1))
        self.index = next((i for i in order if not self.cases[i].decided), self.index)

    def go(self, delta: int) -> None:
        self.cancel()
        self.index = (self.index + delta) % self.n
