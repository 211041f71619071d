"""From the project file to agreement figures: :func:`run_agreement` reads the selected
questions' labels (:func:`~annotate.reliability.question_labels.read_questions`), computes every
figure with :mod:`agreement` (which stays pure: no I/O) and stores the run with the ids and a
hash of the exact labels it used.

Left-out items are explained here, where the store is known: an item is left out of
Fleiss' kappa when not every selected coder answered it (skipped, not reached yet, or the
question does not apply to the action), and a sample item nobody answered is listed too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from annotate import __version__
from annotate.codebook import NO, YES, Question
from annotate.errors import AnnotateError, UsageError
from annotate.reliability.matrices import (
    Categories,
    set_categories,
    set_matrix,
    value_categories,
    value_matrix,
)
from annotate.reliability.question_labels import QuestionData, read_questions
from annotate.reliability.selection import Selection, select
from annotate.reliability.settings import (
    DEFAULT_CI,
    DEFAULT_CI_METHOD,
    DEFAULT_N_BOOT,
    DEFAULT_SEED,
)
from annotate.store.agreement_runs import AgreementRunRecord
from annotate.store.item_ids import ItemIds

if TYPE_CHECKING:
    from agreement import AgreementReport, MultiSelectReport
    from annotate.store import Store


@dataclass(frozen=True)
class LeftOut:
    item: str
    part: str
    """``value``, ``reasons`` or ``codes``: which figure the item is left out of."""
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"item": self.item, "part": self.part, "reason": self.reason}


@dataclass(frozen=True)
class QuestionResult:
    question: Question
    data: QuestionData
    report: AgreementReport | None
    """Single-choice and yes/no questions: agreement on the code (yes/no)."""
    sets: MultiSelectReport | None
    """Multi-select questions: the sets; yes/no questions: the reasons of a ``no``."""
    left_out: tuple[LeftOut, ...]
    n_disagreements: int
    categories: tuple[Categories, ...] = ()
    """The categories each part of the figures used (value, then codes or reasons)."""

    @property
    def sets_name(self) -> str:
        return "reasons" if self.question.kind == "yes_no_reasons" else "codes"

    def to_dict(self) -> dict[str, Any]:
        q = self.question
        report = self.report or self.sets
        return {
            "question": q.id,
            "kind": q.kind,
            "level": q.level,
            "prompt": q.prompt,
            "n_items": report.n_items if report else 0,
            "n_coders": len(self.data.coders),
            "categories": [c.to_dict() for c in self.categories],
            "value": self.report.to_dict() if self.report else None,
            self.sets_name: self.sets.to_dict() if self.sets else None,
            "left_out": [x.to_dict() for x in self.left_out],
            "not_coded": [{"item": i, "reason": r} for i, r in self.data.not_coded],
            "n_disagreements": self.n_disagreements,
        }


@dataclass(frozen=True)
class AgreementRun:
    selection: Selection
    settings: dict[str, Any]
    questions: tuple[QuestionResult, ...]
    n_labels: int
    labels_hash: str
    label_codebook_hashes: tuple[str, ...]
    run_id: int | None = None
    results: dict[str, Any] = field(default_factory=dict)
    same_as_stored: bool = False
    """``run_id`` is an earlier run of the same inputs, labels and settings (none stored)."""

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, **self.results}


def _who(coders: Sequence[str]) -> str:
    return ", ".join(map(repr, coders))


def _not_no(
    row: Sequence[str | None], data: QuestionData, item: str, missing: Sequence[str]
) -> str:
    """Why an item is left out of the per-reason kappas: who did not answer 'no', and why."""
    answer = dict(zip(data.coders, row, strict=True))
    n_no = sum(v == NO for v in row)
    said_yes = [c for c in missing if answer.get(c) == YES]
    skipped = [c for c in missing if c not in said_yes and c in data.skipped.get(item, ())]
    silent = [c for c in missing if c not in said_yes and c not in skipped]
    parts = [f"Answered 'no' by {n_no} of {len(data.coders)} coders"]
    if said_yes:
        parts.append(f"{_who(said_yes)} answered 'yes'")
    if skipped:
        parts.append(f"skipped by {_who(skipped)}")
    if silent:
        parts.append(f"not answered by {_who(silent)}")
    return "; ".join(parts) + "."


def _left_out(data: QuestionData, report: Any, part: str) -> list[LeftOut]:
    out = []
    row_of = {item: i for i, item in enumerate(data.items)} if part == "reasons" else {}
    for x in report.items_left_out:
        item = str(x.item)
        if part == "reasons":
            row = data.value_row(row_of[item])
            out.append(LeftOut(item, part, _not_no(row, data, item, x.missing_coders)))
            continue
        reason = x.reason
        skippers = [c for c in data.skipped.get(item, ()) if c in x.missing_coders]
        if skippers:
            reason = reason.rstrip(".") + "; skipped by " + _who(skippers) + "."
        out.append(LeftOut(item, part, reason))
    return out


def _reasons_worded(report: MultiSelectReport) -> MultiSelectReport:
    """The reasons' report, where a per-reason kappa without items says why in the
    question's terms (stored with the run: every format shows it)."""
    why = "No item was answered 'no' by every coder, so the per-reason kappa has no data."
    per_code = tuple(
        replace(c, fleiss=replace(c.fleiss, undefined_reason=why))
        if c.fleiss.kappa is None and not c.fleiss.n_items
        else c
        for c in report.per_code
    )
    return replace(report, per_code=per_code)


def _check_settings(ci: float, n_boot: int, ci_method: str = DEFAULT_CI_METHOD) -> None:
    from agreement.bootstrap import METHODS, RECOMMENDED_RESAMPLES, min_resamples

    if not 0 < ci < 1:
        raise UsageError(f"--ci must be a level between 0 and 1 (e.g. 0.95); got {ci}")
    if n_boot < min_resamples(ci):
        raise UsageError(
            f"--n-boot must be at least {min_resamples(ci)} for a {100 * ci:g}% interval "
            f"(5 resamples beyond each limit); got {n_boot}",
            hint=f"{RECOMMENDED_RESAMPLES:,} or more is recommended (the default)",
        )
    if ci_method not in METHODS:
        raise UsageError(f"--ci-method must be bca or percentile; got {ci_method}")


def run_agreement(
    store: Store,
    selection: Selection,
    *,
    ci: float = DEFAULT_CI,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
    save: bool = True,
    ci_method: str = DEFAULT_CI_METHOD,
    only: Collection[str] | None = None,
) -> AgreementRun:
    """Every agreement figure of the selected questions; the run is stored unless ``save``
    is False (an identical stored run is named either way: ``run_id`` with
    ``same_as_stored``). The labels of all questions are read in one consistent snapshot.
    ``ci_method`` is the bootstrap interval of Fleiss' kappa (bca or percentile); each
    question's alpha uses its codebook ``level``. ``only``: measure these items of the
    selection only (the report's part of a split); such a run is neither stored nor looked
    up."""
    _check_settings(ci, n_boot, ci_method)
    from agreement import agreement_report, multi_select_report

    with store.db.read_snapshot():
        datas, read = read_questions(store, selection)
    if only is not None:
        datas = [d.restricted(only) for d in datas]
        save = False
    results: list[QuestionResult] = []
    for data in datas:
        q = data.question
        report = sets_report = None
        left_out: list[LeftOut] = []
        categories: list[Categories] = []
        try:
            if q.kind != "multi":
                categories.append(value_categories(data))
                report = agreement_report(
                    value_matrix(data),
                    categories[-1].codes,
                    ci=ci,
                    n_boot=n_boot,
                    seed=seed,
                    ci_method=ci_method,
                    level=q.level,
                )
                left_out += _left_out(data, report, "value")
            if q.kind != "single":
                categories.append(set_categories(data))
                sets_report = multi_select_report(set_matrix(data), categories[-1].codes)
                if q.kind == "yes_no_reasons":
                    sets_report = _reasons_worded(sets_report)
                part = "reasons" if q.kind == "yes_no_reasons" else "codes"
                left_out += _left_out(data, sets_report, part)
        except AnnotateError:
            raise
        except ValueError as exc:  # a case the statistics refuse, with their sentence
            raise UsageError(f"question {q.id}: {exc}") from None
        results.append(
            QuestionResult(
                q,
                data,
                report,
                sets_report,
                tuple(left_out),
                len(data.differing()),
                categories=tuple(categories),
            )
        )
    label_ids = read.label_ids
    hashes = read.codebook_hashes
    sel = selection
    settings = {
        "ci": ci,
        "n_boot": n_boot,
        "seed": seed,
        "ci_method": ci_method,
        # resamples draw the complete items sorted by their ratings (agreement.bootstrap.
        # complete_counts), not in sample order: runs stored before drew others, so an
        # identical run made now is not "the same as" one of them
        "resample_order": "ratings",
    }
    digest = read.labels_hash
    inputs = {
        "codebook": sel.codebook.name,
        "codebook_hash": sel.codebook.version_hash,
        "label_codebook_hashes": list(hashes),
        "sample": sel.sample,
        "sample_items": len(sel.action_ids) if sel.action_ids is not None else None,
        "sample_hash": sample_hash(sel.action_ids),
        "coders": list(sel.coders),
        "questions": [q.id for q in sel.questions],
        "n_labels": read.n_labels,
        "labels_sha256": digest,
        "settings": settings,
        "annotate_version": __version__,
    }
    payload = inputs | {"results": [r.to_dict() for r in results]}
    run_id = stored_before = None
    if only is None:
        record = AgreementRunRecord(
            codebook=sel.codebook.name,
            codebook_hash=sel.codebook.version_hash,
            label_codebook_hashes=hashes,
            sample=sel.sample,
            sample_hash=inputs["sample_hash"],
            coders=sel.coders,
            questions=inputs["questions"],
            label_ids=label_ids,
            labels_hash=digest,
            settings=settings,
            results=payload,
            annotate_version=__version__,
            aligned_digests=read.revisions.view(np.uint64),
        )
        stored_before = store.agreement.same_agreement_run(record)
        run_id = stored_before or (store.agreement.save_agreement_run(record) if save else None)
    return AgreementRun(
        selection=sel,
        settings=settings,
        questions=tuple(results),
        n_labels=read.n_labels,
        labels_hash=digest,
        label_codebook_hashes=hashes,
        run_id=run_id,
        results=payload,
        same_as_stored=stored_before is not None,
    )


def sample_hash(action_ids: Sequence[str] | None) -> str | None:
    if action_ids is None:
        return None
    text = action_ids.text if isinstance(action_ids, ItemIds) else "\n".join(action_ids)
    return hashlib.sha256(text.encode()).hexdigest()


def agree(
    store: Store,
    *,
    codebook: str | None = None,
    sample: str | None = None,
    coders: Sequence[str] | None = None,
    question: str | None = None,
    ci: float = DEFAULT_CI,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = DEFAULT_SEED,
    command: str = "annotate agree",
    save: bool = True,
    ci_method: str = DEFAULT_CI_METHOD,
) -> AgreementRun:
    """`annotate agree` in one call: resolve the inputs, measure, store the run (unless
    ``save`` is False)."""
    selection = select(
        store, codebook=codebook, sample=sample, coders=coders, question=question, command=command
    )
    return run_agreement(
        store, selection, ci=ci, n_boot=n_boot, seed=seed, save=save, ci_method=ci_method
    )
