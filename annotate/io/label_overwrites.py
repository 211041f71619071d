"""What a label import would change in the project file, checked before anything is written.

An imported row meets one of four things: no answer yet (new), the same answer (unchanged),
the same answer with another note (the note is replaced, as a coder would), or another
answer. Another answer replaces a coder's work, so it needs ``--replace``. Gold is the
adjudicated answer together with its record of who decided and how: an import that would
change a gold label in any way needs ``--replace-gold``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from annotate.codebook import Codebook
from annotate.coding.answers import codes_text
from annotate.errors import ImportFormatError
from annotate.store import LabelWrite, Store
from annotate.store.agreement_runs import GOLD_CODER
from annotate.store.labels import RATIONALE_KEY

SHOWN = 3
"""Overwrites named in the refusal (the rest are counted)."""


@dataclass(frozen=True)
class Overwrite:
    line: int
    write: LabelWrite
    before: str
    after: str

    def describe(self) -> str:
        w = self.write
        return (
            f"line {self.line}: {w.coder}'s {w.question} for action '{w.action_id}' is "
            f"{self.before}, the file says {self.after}"
        )


@dataclass
class ImportPlan:
    """Each row of a label file sorted by what it would do to the stored labels."""

    new: int = 0
    unchanged: int = 0
    notes: int = 0
    """Rows with the stored answer and another note (the note is replaced)."""
    rationales: int = 0
    """Rows with the stored answer and another rationale (a self-report's text beside its
    answer; the rationale is replaced, the answer and its revision stay)."""
    answers: list[Overwrite] = field(default_factory=list)
    """Rows that would replace a coder's answer (``--replace``)."""
    gold: list[Overwrite] = field(default_factory=list)
    """Rows that would change a gold label (``--replace-gold``)."""


def _content(value: Any, codes: Any, other_text: Any) -> tuple[Any, ...]:
    return value, tuple(sorted(codes or ())), other_text or None


def _shown(value: Any, codes: Any, other_text: Any, note: Any) -> str:
    answer = codes_text(value, sorted(codes or ()), other_text)
    text = repr(answer) if answer else "no value"
    return text + (f" with note {note!r}" if note else "")


def plan_import(store: Store, codebook: Codebook, writes: Mapping[int, LabelWrite]) -> ImportPlan:
    """Compare every row (by its line) with the label stored for its action, question and
    coder."""
    stored = {
        (r["action_id"], r["question"], r["coder"]): r
        for r in store.labels.label_rows(
            codebook.name,
            coders=sorted({w.coder for w in writes.values()}),
            action_ids=sorted({w.action_id for w in writes.values()}),
        )
    }
    plan = ImportPlan()
    for line, w in sorted(writes.items()):
        row = stored.get((w.action_id, w.question, w.coder))
        kind = _kind(w, row)
        if kind == "new":
            plan.new += 1
        elif kind == "unchanged":
            plan.unchanged += 1
        elif kind == "note" and w.coder != GOLD_CODER:
            plan.notes += 1
        elif kind == "rationale":
            plan.rationales += 1
        else:
            assert row is not None
            note = kind == "note" or (w.note is not None and w.note != row["note"])
            overwrite = Overwrite(
                line,
                w,
                _shown(
                    row["value"], row["codes"], row["other_text"], row["note"] if note else None
                ),
                _shown(
                    w.answer.value, w.answer.codes, w.answer.other_text, w.note if note else None
                ),
            )
            (plan.gold if w.coder == GOLD_CODER else plan.answers).append(overwrite)
    return plan


def _kind(w: LabelWrite, row: dict[str, Any] | None) -> str:
    """new, unchanged, note (the stored answer, another note), rationale (the stored answer,
    another rationale in its meta) or answer (another answer)."""
    if row is None:
        return "new"
    new_note = w.note is not None and w.note != row["note"]
    if row["value"] is None and not row["codes"]:  # a skip, flag or note: no answer yet
        return "note" if new_note and row["note"] is not None else "new"
    a = w.answer
    if _content(a.value, a.codes, a.other_text) != _content(
        row["value"], row["codes"], row["other_text"]
    ):
        return "answer"
    if new_note:
        return "note"
    given = _rationale(w.meta)
    if w.coder != GOLD_CODER and given is not None and given != _rationale(row.get("meta")):
        return "rationale"
    return "unchanged"


def _rationale(meta: Mapping[str, Any] | None) -> Any:
    return (meta or {}).get(RATIONALE_KEY)


def _refusal(path: Path, what: str, overwrites: list[Overwrite], option: str) -> ImportFormatError:
    n = len(overwrites)
    shown = "; ".join(o.describe() for o in overwrites[:SHOWN])
    more = f"; and {n - SHOWN} more" if n > SHOWN else ""
    return ImportFormatError(
        f"{path}: {n} row{'s' if n > 1 else ''} would change {what}: {shown}{more}",
        hint=f"nothing was stored; pass {option} to overwrite "
        + (
            "them"
            if option == "--replace"
            else "them (their record of who decided and how is replaced by the import)"
        ),
    )


def refuse_overwrites(path: Path, plan: ImportPlan, *, replace: bool, replace_gold: bool) -> None:
    """Raise unless every change to a stored answer is allowed by its option."""
    if plan.gold and not replace_gold:
        raise _refusal(path, "adjudicated gold labels", plan.gold, "--replace-gold")
    if plan.answers and not replace:
        raise _refusal(path, "coders' existing answers", plan.answers, "--replace")
