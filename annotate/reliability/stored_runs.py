"""A stored agreement run, and how the labels it used (and would use now) changed since."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from annotate.errors import NotFoundError
from annotate.reliability.agreement_run import sample_hash
from annotate.reliability.label_hashes import legacy_labels_hash
from annotate.store.revisions import revision_hex

if TYPE_CHECKING:
    from annotate.store import Store


@dataclass(frozen=True)
class StoredRun:
    """A stored run, and how the labels it used (and would use now) changed since."""

    run: dict[str, Any]
    deleted: int
    """Labels of the run that are no longer stored, or no longer answered."""
    changed: int | None
    """Labels of the run still answered whose content (answer, Other text, codebook
    version) differs; None for runs stored without per-label digests (see ``since``)."""
    added: int | None
    """Answered labels the run's selection (codebook, sample, coders, questions) holds now
    but the run did not use; None when its sample no longer exists (see ``since``)."""
    unchanged: bool
    """No label added, deleted or changed, the labels still hash to ``labels_hash``, and
    the sample (if any) has the same items."""
    notes: tuple[str, ...] = ()
    """Why a count is None, or that the sample's items changed."""

    @property
    def since(self) -> dict[str, Any]:
        """The changes as JSON-ready data."""
        return {
            "unchanged": self.unchanged,
            "added": self.added,
            "deleted": self.deleted,
            "changed": self.changed,
            "notes": list(self.notes),
        }

    def summary(self) -> str:
        """One line, e.g. "changed since: 2 added, 1 deleted, 3 changed"."""
        if self.unchanged:
            return "unchanged since"
        counts = [
            f"{'?' if n is None else n} {what}"
            for n, what in ((self.added, "added"), (self.deleted, "deleted"),
                            (self.changed, "changed"))
        ]  # fmt: skip
        return "changed since: " + ", ".join(counts) + "".join(f" ({n})" for n in self.notes)

    @property
    def results(self) -> dict[str, Any]:
        return {"run_id": self.run["id"], **self.run["results"], "labels_since_run": self.since}


def _labels_now(store: Store, run: dict[str, Any]) -> tuple[set[int] | None, list[str]]:
    """Ids of the answered labels the run's selection holds now (None: sample gone)."""
    notes: list[str] = []
    action_ids: Sequence[str] | None = None
    if run["sample"] is not None:
        try:
            action_ids = store.samples.sample_item_ids(run["sample"])
        except NotFoundError:
            return None, [f"sample '{run['sample']}' no longer exists, so added is unknown"]
        if sample_hash(action_ids) != run["sample_hash"]:
            notes.append(f"the items of sample '{run['sample']}' changed")
    ids: set[int] = set()
    for question in run["questions"]:
        found = store.agreement.label_ids(
            run["codebook"], question, run["coders"], sample=run["sample"]
        )
        ids.update(found.values())
    return ids, notes


def stored_run(store: Store, run_id: int) -> StoredRun:
    """A stored run, with the labels added, deleted and changed since it was made.

    Deleted: the run's labels no longer stored or no longer answered (an answer undone).
    Changed: the run's labels whose content differs from the stored per-label digest (the
    label's revision now).
    Added: answered labels of the run's codebook, sample, coders and questions that the run
    did not use (a new answer, or one given again after being deleted).
    """
    run = store.agreement.agreement_run(run_id)
    used = run["label_ids"]
    digests = run.get("label_digests") or {}
    notes: list[str]
    if all(digests.get(i) for i in used):
        with store.db.read_snapshot():
            ids, revisions = store.agreement.label_revisions(used)
            now, notes = _labels_now(store, run)
        deleted = len(used) - len(ids)
        changed: int | None = sum(
            revision_hex(r) != digests[i]
            for i, r in zip(ids.tolist(), revisions.tolist(), strict=True)
        )
        same = not deleted and not changed
    else:  # a run stored before annotate kept each label's digest
        with store.db.read_snapshot():
            rows = store.agreement.labels_by_id(used)
            now, notes = _labels_now(store, run)
        deleted = len(used) - sum(r["value"] is not None or bool(r["codes"]) for r in rows)
        same = not deleted and legacy_labels_hash(rows) == run["labels_hash"]
        changed = 0 if same else None
        if not same:
            notes.append(
                "the run was stored without per-label digests, so how many changed is "
                "unknown; labels_sha256 differs"
            )
    added = len(now - set(used)) if now is not None else None
    unchanged = same and added == 0 and changed == 0 and not notes
    return StoredRun(run, deleted, changed, added, unchanged, tuple(notes))
