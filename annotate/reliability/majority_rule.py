"""Who counts in a majority vote, and what a coder with very few labels costs.

The majority is more than half of the *selected* coders, on every item, whoever answered
it: with ana, ben and caro, 2 votes; add dan, who gave one trial label, and every item
needs 3 of 4, so items two of three agree on go to the adjudicator instead of becoming
gold. The rule is kept (a coder's silence is not a vote either way, and gold made by fewer
coders than selected would be weaker than it says), but ``adjudicate`` states it and names
a coder who answered far fewer items than the others, with how many majorities that coder's
selection blocks.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from annotate.reliability.adjudication import GoldPlan, majority_answer

SPARSE_SHARE = 0.1
"""A coder who answered fewer than this share of the busiest coder's items is "sparse"."""


@dataclass(frozen=True)
class MajorityRule:
    coders: tuple[str, ...]
    answered: dict[str, int]
    """Items (and questions) each coder answered, among those two or more coders answered."""
    sparse: tuple[str, ...]
    blocked: int
    """Cases with no majority that would have one without the sparse coders."""

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
    return MajorityRule(plan.coders, dict(answered), sparse, blocked)
