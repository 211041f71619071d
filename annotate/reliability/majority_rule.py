"""Who counts in a majority vote, how many coders answered each item, and what a coder with
very few labels costs.

The majority is more than half of the *selected* coders, on every item, whoever answered
it: with ana, ben and caro, 2 votes; add dan, who gave one trial label, and every item
needs 3 of 4, so items two of three agree on go to the adjudicator instead of becoming
gold. The rule is kept (a coder's silence is not a vote either way, and gold made by fewer
coders than selected would be weaker than it says), but ``adjudicate`` states it, says how
many coders answered each item (a coder who labelled every item of the sample answered
every item, whoever else did), counts the cases sent to the adjudicator only for want of
votes (most of those who answered agree, but they are fewer than a majority needs) and
names the ``--coders`` that would decide the most of them, and names a coder who answered
far fewer items than the others, with how many majorities that coder's selection blocks.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from annotate.codebook import Answer
from annotate.reliability.adjudication import GoldPlan, majority_answer, short_of_votes

SPARSE_SHARE = 0.1
"""A coder who answered fewer than this share of the busiest coder's items is "sparse"."""


@dataclass(frozen=True)
class MajorityRule:
    coders: tuple[str, ...]
    answered: dict[str, int]
    """Items (and questions) each coder answered, those left for later included."""
    sparse: tuple[str, ...]
    blocked: int
    """Cases with no majority that would have one without the sparse coders."""
    by_answering: dict[int, int]
    """Items (and questions) by how many of the selected coders answered them."""
    short_of_votes: int = 0
    """Cases to decide only for want of votes: most of those who answered agree."""
    would_decide: tuple[tuple[str, ...], int] | None = None
    """The ``--coders`` that would decide the most of those cases, and how many."""

    @property
    def votes_needed(self) -> int:
        return len(self.coders) // 2 + 1

    def line(self) -> str:
        n = len(self.coders)
        return (
            f"majority: more than half of the {n} selected coders, i.e. {self.votes_needed} of "
            f"{n} giving the same answer, on every item whoever answered it; items answered: "
            + ", ".join(f"{c} {self.answered.get(c, 0)}" for c in self.coders)
        )

    def coverage(self) -> str:
        """How many coders answered each item: what reconciles a coder's count above with
        the items of the sample, and the cases each kind of coverage gives."""
        n = len(self.coders)

        def part(k: int, cases: int) -> str:
            if k == 0:
                return f"none (flagged) on {cases}"
            if k == 1:
                return f"1 of {n} on {cases} (left for later)"
            short = " (short of a majority)" if k < self.votes_needed else ""
            return f"{k} of {n} on {cases}{short}"

        return "coders answering each item: " + ", ".join(
            part(k, cases) for k, cases in self.by_answering.items()
        )

    def short_line(self) -> str | None:
        """The cases sent to the adjudicator for want of votes, and the ``--coders`` that
        would decide them."""
        if not self.short_of_votes:
            return None
        line = (
            f"{self.short_of_votes} cases go to the adjudicator for want of votes: most of "
            f"the coders who answered them agree, but fewer answered than the "
            f"{self.votes_needed} of {len(self.coders)} a majority needs"
        )
        if self.would_decide is not None:
            coders, decided = self.would_decide
            line += (
                f"; --coders {','.join(coders)} (the coders who answered) would decide "
                f"{decided} of them by majority"
            )
        return line + "."

    def warning(self) -> str | None:
        if not self.sparse:
            return None
        others = [c for c in self.coders if c not in self.sparse]
        names = ", ".join(f"{c} ({self.answered.get(c, 0)})" for c in self.sparse)
        return (
            f"warning: {names} answered far fewer items than the others; counting "
            f"{'them' if len(self.sparse) > 1 else 'this coder'} raises the majority to "
            f"{self.votes_needed} of {len(self.coders)}, and {self.blocked} cases that a "
            f"majority of the others agree on go to the adjudicator instead. To leave "
            f"{'them' if len(self.sparse) > 1 else 'this coder'} out: --coders {','.join(others)}"
        )


def _would_decide(
    plan: GoldPlan, short: list[tuple[tuple[Answer | None, ...], int]]
) -> tuple[tuple[str, ...], int] | None:
    """Of the sets of coders who answered the cases short of votes, the one whose
    selection decides the most of them (fewer coders first on a tie)."""
    candidates = {
        tuple(c for c, a in zip(plan.coders, answers, strict=True) if a is not None)
        for answers, _ in short
    }
    best: tuple[tuple[str, ...], int] | None = None
    for coders in sorted(candidates, key=lambda c: (len(c), c)):
        if len(coders) < 2:
            continue
        decided = 0
        for answers, cases in short:
            kept = [a for c, a in zip(plan.coders, answers, strict=True) if c in coders]
            decided += cases * (majority_answer(kept, len(coders))[0] is not None)
        if decided and (best is None or decided > best[1]):
            best = (coders, decided)
    return best


def majority_rule(plan: GoldPlan) -> MajorityRule:
    answered = Counter({c: n for c, n in plan.answered.items() if n})
    busiest = max(answered.values(), default=0)
    sparse = tuple(c for c in plan.coders if answered.get(c, 0) < SPARSE_SHARE * busiest)
    if len(sparse) == len(plan.coders) or len(plan.coders) - len(sparse) < 2:
        sparse = ()
    blocked = 0
    if sparse:
        n_rest = len(plan.coders) - len(sparse)
        for answers, cases in plan.undecided_votes:
            rest = [a for c, a in zip(plan.coders, answers, strict=True) if c not in sparse]
            best, _ = majority_answer(rest, n_rest)
            blocked += cases * (best is not None)
    short = [
        (answers, cases)
        for answers, cases in plan.undecided_votes
        if short_of_votes(answers, len(plan.coders))
    ]
    return MajorityRule(
        plan.coders,
        dict(answered),
        sparse,
        blocked,
        dict(plan.by_answering),
        sum(cases for _, cases in short),
        _would_decide(plan, short),
    )
