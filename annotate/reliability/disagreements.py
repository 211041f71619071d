"""`annotate agree --disagreements`: every item the selected coders answered differently, per
question, with its text, context, notes and flags (no statistics, nothing stored)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from annotate.codebook import Question
from annotate.coding.answers import codes_text
from annotate.models import describe
from annotate.reliability.question_labels import QuestionData, read_questions
from annotate.reliability.selection import Selection

if TYPE_CHECKING:
    from annotate.store import Store

SKIPPED = "(skipped)"
NOT_CODED = "(not coded)"
"""What a coder's cell says in the disagreement list when they gave no answer."""


@dataclass(frozen=True)
class Disagreement:
    item: str
    session: str
    seq: int
    text: str
    answers: dict[str, str | None]
    """Each coder's answer as text, or :data:`SKIPPED` or :data:`NOT_CODED`."""
    context: tuple[str, ...] = ()
    """The turns before the item ("speaker: text"), oldest first (``--context``)."""
    notes: dict[str, str] = field(default_factory=dict)
    """Coder -> their note on the item."""
    flagged: tuple[str, ...] = ()
    """Coders who flagged the item."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "item": self.item,
            "session": self.session,
            "seq": self.seq,
            "text": self.text,
            "answers": self.answers,
            "context": list(self.context),
            "notes": self.notes,
            "flagged": list(self.flagged),
        }


def _disagreements(
    store: Store, data: QuestionData, differing: list[int], codebook: str, context: int = 0
) -> tuple[Disagreement, ...]:
    if not differing:
        return ()
    ids = [data.items[i] for i in differing]
    actions = {a.id: a for a in store.actions.actions_by_ids(ids)}
    rows = {
        (r["action_id"], r["coder"]): r
        for r in store.labels.label_rows(
            codebook, coders=data.coders, action_ids=ids, question=data.question.id
        )
    }

    def answer(item: str, coder: str) -> str:
        r = rows.get((item, coder))
        if r is not None and (r["value"] is not None or r["codes"]):
            return codes_text(r["value"], r["codes"], r["other_text"])
        return SKIPPED if r is not None and r["skipped"] else NOT_CODED

    out = []
    for i in differing:
        a = actions[data.items[i]]
        mine = [rows[(a.id, c)] for c in data.coders if (a.id, c) in rows]
        before = store.actions.context(a, before=context) if context else []
        out.append(
            Disagreement(
                a.id,
                a.session,
                a.seq,
                describe(a),
                {c: answer(a.id, c) for c in data.coders},
                tuple(f"{b.speaker}: {describe(b)}" for b in before),
                {r["coder"]: r["note"] for r in mine if r["note"]},
                tuple(r["coder"] for r in mine if r["flagged"]),
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class DisagreementList:
    """Every item the selected coders answered differently, per question (no statistics,
    nothing stored: `annotate agree --disagreements`)."""

    selection: Selection
    questions: tuple[tuple[Question, tuple[Disagreement, ...]], ...]

    def to_dict(self) -> dict[str, Any]:
        sel = self.selection
        return {
            "codebook": sel.codebook.name,
            "sample": sel.sample,
            "coders": list(sel.coders),
            "questions": [q.id for q, _ in self.questions],
            "disagreements": {q.id: [d.to_dict() for d in ds] for q, ds in self.questions},
        }


def list_disagreements(store: Store, selection: Selection, context: int = 0) -> DisagreementList:
    """``context``: how many turns before each item to show with it."""
    with store.db.read_snapshot():
        datas, _ = read_questions(store, selection)
        name = selection.codebook.name
        found = tuple(
            (d.question, _disagreements(store, d, d.differing(), name, context)) for d in datas
        )
    return DisagreementList(selection, found)
