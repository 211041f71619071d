"""`annotate merge`: bring coders' own project files into this one.

For each other file, in one transaction:

- the other file is read through a snapshot: a read-only copy, upgraded if it is older, so
  the coder's own file is never written to (a newer file, or one that is not a project, is
  refused);
- actions are matched by id; missing ones are inserted (one ``imports`` row records them);
  an id whose session, type or content differs is counted, and ours is kept;
- codebook versions missing here are copied, once every version in the other file is
  verified against its text (:mod:`annotate.analysis.merge_codebooks`); a date in the
  future is copied as now;
- labels are matched on (action, codebook, question, coder): missing ones are copied with
  their codebook hash, timestamps, notes and flags. When both files hold an answer and the
  answers differ (value, codes or other text), that is a *conflict*: ours is kept unless
  ``prefer="newer"`` and theirs was updated later. An unanswered row (a note or flag only)
  never overrides an answer, and an answer fills our unanswered row (its answer, codebook
  hash, times and source; our note and flag stay);
- notes and flags of labels in both files: their note fills ours when we have none; two
  different notes are a conflict resolved like answers (ours kept unless ``prefer="newer"``
  and their row was updated later). A flag raised in either file stays raised. Carrying a
  note or flag leaves the row's times alone;
- samples and session splits are copied when no sample/split of that name exists here (a
  same-named one with other items, or other sessions or parts, is reported and ours kept);
- LLM runs and agreement runs are not carried over (their requests, items and label sets
  belong to the other file); the ones this file does not already hold are reported by id.

Merging the same file again changes nothing: everything is then either present or a
conflict that is reported again and resolved the same way.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from annotate.analysis.merge_codebooks import check_codebooks
from annotate.analysis.merge_scratch import scratch_folder
from annotate.errors import UsageError
from annotate.store import Store
from annotate.store.base import snapshot_project


class Prefer(StrEnum):
    ours = "ours"
    newer = "newer"


class Decision(StrEnum):
    keep = "keep"  # conflict, ours kept
    take = "take"  # conflict, theirs is newer and --prefer newer
    fill = "fill"  # we had no answer (note), they had one
    ignore = "ignore"  # they have no answer (note), or the same one


@dataclass(frozen=True)
class Conflict:
    action_id: str
    codebook: str
    question: str
    coder: str
    ours: str
    theirs: str
    our_updated_at: str
    their_updated_at: str
    resolution: str
    what: str = "answer"  # or "note"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class MergeResult:
    path: str
    actions_in_file: int
    new_actions: int
    differing_actions: int
    new_codebook_versions: int
    new_labels: int
    filled_labels: int
    replaced_labels: int
    conflicts: tuple[Conflict, ...] = field(default_factory=tuple)
    new_samples: tuple[str, ...] = ()
    differing_samples: tuple[str, ...] = ()
    new_session_splits: tuple[str, ...] = ()
    differing_session_splits: tuple[str, ...] = ()
    notes_carried: int = 0
    flags_carried: int = 0
    replaced_notes: int = 0
    llm_runs_left: tuple[int, ...] = ()
    agreement_runs_left: tuple[int, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(
            self.new_actions
            or self.new_codebook_versions
            or self.new_labels
            or self.filled_labels
            or self.replaced_labels
            or self.notes_carried
            or self.flags_carried
            or self.replaced_notes
            or self.new_samples
            or self.new_session_splits
        )

    @property
    def answer_conflicts(self) -> int:
        return sum(c.what == "answer" for c in self.conflicts)

    @property
    def note_conflicts(self) -> int:
        return sum(c.what == "note" for c in self.conflicts)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["conflicts"] = [c.to_dict() for c in self.conflicts]
        out["changed"] = self.changed
        return out


def _answered(value: str | None, codes: str | None) -> bool:
    return value is not None or codes is not None


def show_answer(value: str | None, codes: str | None, other_text: str | None) -> str:
    """An answer as one short string: ``no [n1, n3]``, ``other: "text"``, ``-``."""
    parts = [value] if value is not None else []
    if codes:
        parts.append("[" + ", ".join(json.loads(codes)) + "]")
    text = " ".join(parts) or "-"
    if other_text:
        text += f' ("{other_text}")'
    return text


def _theirs_newer(row: Mapping[str, Any]) -> bool:
    return (row["their_updated_at"] or "") > (row["our_updated_at"] or "")


def decide(row: Mapping[str, Any], prefer: Prefer) -> Decision:
    """What to do with the answer of a label held by both files."""
    if not row["answer_differs"]:  # a row for its note or flag
        return Decision.ignore
    ours = _answered(row["our_value"], row["our_codes"])
    theirs = _answered(row["their_value"], row["their_codes"])
    if not theirs:
        return Decision.ignore
    if not ours:
        return Decision.fill
    if prefer is Prefer.newer and _theirs_newer(row):
        return Decision.take
    return Decision.keep


def decide_note(row: Mapping[str, Any], prefer: Prefer) -> Decision:
    """What to do with the note of a label held by both files (an empty note is none)."""
    ours, theirs = row["our_note"] or None, row["their_note"] or None
    if theirs is None or theirs == ours:
        return Decision.ignore
    if ours is None:
        return Decision.fill
    if prefer is Prefer.newer and _theirs_newer(row):
        return Decision.take
    return Decision.keep


def _conflict(row: Mapping[str, Any], decision: Decision, what: str) -> Conflict:
    if what == "note":
        ours, theirs = row["our_note"], row["their_note"]
    else:
        ours = show_answer(row["our_value"], row["our_codes"], row["our_other_text"])
        theirs = show_answer(row["their_value"], row["their_codes"], row["their_other_text"])
    return Conflict(
        action_id=row["action_id"],
        codebook=row["codebook"],
        question=row["question"],
        coder=row["coder"],
        ours=ours,
        theirs=theirs,
        our_updated_at=row["our_updated_at"],
        their_updated_at=row["their_updated_at"],
        resolution="took theirs (newer)" if decision is Decision.take else "kept ours",
        what=what,
    )


def _sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def check_other(store: Store, other: Path) -> None:
    """Refuse this very file and a missing file (the snapshot refuses the rest)."""
    if not other.exists():
        raise UsageError(f"{other}: no such file")
    if other.resolve() == store.path.resolve():
        raise UsageError(f"{other}: is the file being merged into")


def merge_file(
    store: Store, other: Path, snapshot: Path, *, prefer: Prefer = Prefer.ours
) -> MergeResult:
    """Merge one other project file, read from its ``snapshot``, in one transaction."""
    sha = _sha256(other)
    with store.merge.attached(snapshot), store.db.transaction():
        import_id = store.actions.begin_import(path=str(other), sha256=sha, fmt="merge")
        in_file = store.merge.attached_action_count()
        new_actions, differing_actions = store.merge.merge_actions(import_id)
        store.actions.finish_import(import_id, in_file, new_actions)
        new_books = store.merge.merge_codebooks()
        new_labels = store.merge.merge_missing_labels()
        conflicts: list[Conflict] = []
        filled = replaced = notes = flags = replaced_notes = 0
        # every row is read before any is changed: decisions compare the files as they were
        for row in store.merge.differing_labels():
            decision = decide(row, prefer)
            if decision in (Decision.fill, Decision.take):
                store.merge.take_their_answer(row["our_id"], row)
            filled += decision is Decision.fill
            replaced += decision is Decision.take
            if decision in (Decision.keep, Decision.take):
                conflicts.append(_conflict(row, decision, "answer"))
            note_decision = decide_note(row, prefer)
            if note_decision in (Decision.keep, Decision.take):
                conflicts.append(_conflict(row, note_decision, "note"))
            take_note = note_decision in (Decision.fill, Decision.take)
            raise_flag = bool(row["their_flagged"]) and not row["our_flagged"]
            if take_note or raise_flag:
                store.merge.set_label_note_flag(
                    row["our_id"],
                    row["their_note"] if take_note else row["our_note"],
                    bool(row["our_flagged"]) or raise_flag,
                )
            notes += note_decision is Decision.fill
            replaced_notes += note_decision is Decision.take
            flags += raise_flag
        new_samples, differing_samples = store.merge.merge_samples()
        new_splits, differing_splits = store.merge.merge_session_splits()
        llm_left, agreement_left = store.merge.runs_left_behind()
    return MergeResult(
        path=str(other),
        actions_in_file=in_file,
        new_actions=new_actions,
        differing_actions=differing_actions,
        new_codebook_versions=new_books,
        new_labels=new_labels,
        filled_labels=filled,
        replaced_labels=replaced,
        conflicts=tuple(conflicts),
        new_samples=tuple(new_samples),
        differing_samples=tuple(differing_samples),
        new_session_splits=tuple(new_splits),
        differing_session_splits=tuple(differing_splits),
        notes_carried=notes,
        flags_carried=flags,
        replaced_notes=replaced_notes,
        llm_runs_left=tuple(llm_left),
        agreement_runs_left=tuple(agreement_left),
    )


def merge_files(
    store: Store, others: Sequence[Path], *, prefer: Prefer = Prefer.ours
) -> list[MergeResult]:
    """Merge each file in turn, one transaction each.

    Every file is checked and snapshot first, so a refused file (missing, newer, not a
    project, a codebook version whose text does not give its hash) stops the merge before
    anything is written. The snapshots are removed on any exit (see
    :mod:`annotate.analysis.merge_scratch`).
    """
    if not others:
        raise UsageError("name at least one file to merge")
    paths = [Path(p) for p in others]
    with scratch_folder(store.path) as tmp:
        snapshots = []
        for number, path in enumerate(paths):
            check_other(store, path)
            snapshots.append(tmp / f"{number}.db")
            snapshot_project(path, snapshots[-1], on_wait=store.db.on_wait)
            with store.merge.attached(snapshots[-1]):
                check_codebooks(path, store.merge.attached_codebooks())
        return [
            merge_file(store, path, snapshot, prefer=prefer)
            for path, snapshot in zip(paths, snapshots, strict=True)
        ]
