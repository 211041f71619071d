"""From the project file to agreement figures: what `annotate agree` measures and keeps.

:func:`select` resolves the codebook, sample, coders and questions (with the defaults the
CLI documents); :func:`read_questions` reads the questions' labels into item x coder
matrix; :func:`run_agreement` computes every figure with :mod:`agreement` (which stays pure:
no I/O) and stores the run with the ids and a hash of the exact labels it used.

Left-out items are explained here, where the store is known: an item is left out of
Fleiss' kappa when not every selected coder answered it (skipped, not reached yet, or the
question does not apply to the action), and a sample item nobody answered is listed too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from annotate import __version__
from annotate.codebook import NO, OTHER, YES, Codebook, Question, find_codebook
from annotate.coders import is_human
from annotate.coding.answers import codes_text
from annotate.errors import AnnotateError, CodebookError, NotFoundError, UsageError
from annotate.models import describe
from annotate.reliability.question_labels import QuestionData, labels_hash_of, read_questions
from annotate.reliability.settings import (
    DEFAULT_CI,
    DEFAULT_CI_METHOD,
    DEFAULT_N_BOOT,
    DEFAULT_SEED,
)
from annotate.store.agreement_runs import AgreementRunRecord
from annotate.store.item_ids import ItemIds
from annotate.store.revisions import content_revision, revision_hex

if TYPE_CHECKING:
    from agreement import AgreementReport, LabelMatrix, MultiSelectReport, SetLabelMatrix
    from annotate.store import Store

DEFAULT_SAMPLE = "main"
EVERY_ITEM = "all"
"""``--sample all``: every labelled item, whatever samples exist."""
MIN_CODERS = 2


# -- what to measure --------------------------------------------------------------------------


@dataclass(frozen=True)
class Selection:
    """The inputs of one agreement run, resolved."""

    codebook: Codebook
    sample: str | None
    action_ids: Sequence[str] | None
    """The sample's items in order (an :class:`~annotate.store.item_ids.ItemIds` where the
    ids allow it), None without a sample."""
    coders: tuple[str, ...]
    questions: tuple[Question, ...]
    defaults: tuple[str, ...] = ()
    """How each default was chosen, e.g. "codebook traum (the only one with labels)"."""
    text_questions: tuple[Question, ...] = ()
    """Free-text questions: compared by similarity (:mod:`annotate.reliability.text_agreement`),
    not by codes."""
    number_questions: tuple[Question, ...] = ()
    """Number questions: alpha (interval/ratio) and ICC
    (:mod:`annotate.reliability.number_agreement`)."""


def _choices(names: Sequence[str] | dict[str, int]) -> str:
    if isinstance(names, dict):
        return ", ".join(f"{n} ({c} labels)" for n, c in names.items()) or "none"
    return ", ".join(names) or "none"


def _no_labels() -> UsageError:
    return UsageError(
        "this file has no labels yet",
        hint="code some with `annotate code`, or bring them with `annotate import-labels`",
    )


def _resolve_codebook(store: Store, name: str, counts: Mapping[str, int]) -> Codebook:
    """The codebook named by --codebook (a name or a YAML path), which must have labels
    (``counts``: answered labels by codebook)."""
    if not counts:
        raise _no_labels()
    if name not in counts:
        path = Path(name)
        if path.suffix in {".yaml", ".yml"} and path.is_file():
            cb = find_codebook(name).codebook
            if cb.name in counts:
                return _codebook_version(store, cb.name, fallback=cb)
            name = cb.name
        from annotate.codebook import available_codebooks

        known = name in available_codebooks() or name in store.agreement.codebook_names()
        raise CodebookError(
            f"codebook '{name}' has no labels in this file"
            if known
            else f"unknown codebook '{name}'",
            hint="choices: " + _choices(counts),
        )
    return _codebook_version(store, name)


@dataclass(frozen=True)
class Candidate:
    """A labelled codebook as `agree` without --codebook sees it in the chosen items."""

    name: str
    coders: tuple[str, ...]
    """The coders that would be compared (named ones, else the human coders with answers)."""
    shared: int
    """Items answered by two or more of them."""
    missing: str | None = None
    """Why it cannot be measured at all, e.g. "no question Q4"."""

    def qualifies(self, min_coders: int) -> bool:
        return self.missing is None and len(self.coders) >= min_coders and self.shared > 0

    def describe(self) -> str:
        if self.missing:
            return f"{self.name} ({self.missing})"
        n = len(self.coders)
        text = f"{n} coder{'' if n == 1 else 's'}"
        if 0 < n <= 4:
            text += " " + ", ".join(self.coders)
        if n >= 2:
            text += f", {self.shared} shared item{'' if self.shared == 1 else 's'}"
        return f"{self.name} ({text})"


def _candidate(
    store: Store,
    name: str,
    sample: str | None,
    coders: Sequence[str] | None,
    question: str | None,
) -> Candidate:
    if question is not None:
        cb = _codebook_version(store, name)
        if question not in {q.id for q in cb.questions}:
            return Candidate(name, (), 0, f"no question {question}")
    available = store.agreement.coders_with_answers(name, None, question, sample=sample)
    if coders:
        absent = [c for c in coders if c not in available]
        if absent:
            on = f" on {question}" if question else ""
            return Candidate(name, (), 0, f"no labels by {', '.join(absent)}{on}")
        chosen = tuple(coders)
    else:
        chosen = tuple(c for c in available if is_human(c))
    shared = (
        store.agreement.shared_items(name, chosen, None, question, sample=sample)
        if len(chosen) > 1
        else 0
    )
    return Candidate(name, chosen, shared)


def _choose_codebook(
    store: Store,
    action_ids: Sequence[str] | None,
    sample: str | None,
    coders: Sequence[str] | None,
    question: str | None,
    min_coders: int,
    command: str,
    counts: Mapping[str, int],
) -> tuple[str, str]:
    """The one labelled codebook (else the one with ``min_coders`` or more coders on shared
    items), and the note saying so; otherwise an error listing every codebook and the
    command to run."""
    if not counts:
        raise _no_labels()
    if len(counts) == 1:  # nothing to choose: the checks that follow say what is missing
        only = next(iter(counts))
        return only, f"codebook {only} (the only one with labels)"
    found = [_candidate(store, n, sample, coders, question) for n in counts]
    ok = [c for c in found if c.qualifies(min_coders)]
    enough = f"{min_coders} or more coders on shared items"
    if len(ok) == 1:
        return ok[0].name, f"codebook {ok[0].name} (the only one with {enough})"
    where = f" in sample '{sample}'" if sample else ""
    listing = ", ".join(c.describe() for c in found)
    if ok:
        best = max(ok, key=lambda c: (len(c.coders), c.shared))
        raise UsageError(
            f"{len(ok)} codebooks have {enough}{where}; name one with --codebook: {listing}",
            hint=f"run `{_with_codebook(command, best.name)}`",
        )
    usable = [c for c in found if c.missing is None]
    if not usable:
        raise _none_fits(store, found, where, question)
    corpus = set(store.labels.corpus_coders())  # a codebook the team has begun comes first

    def promise(c: Candidate) -> tuple[int, ...]:
        team = len(set(c.coders) - corpus)
        return (team, len(c.coders), c.shared, counts[c.name])

    best = max(usable, key=promise)
    raise UsageError(
        f"no codebook has {enough}{where}: {listing}", hint=_second_coder(best.name, sample)
    )


def _second_coder(codebook: str, sample: str | None) -> str:
    on = f" --sample {sample}" if sample else ""
    return (
        f"a second coder codes the same items: `annotate code --codebook {codebook}{on} "
        "--coder NAME --new-coder`, then run this again"
    )


def _with_codebook(command: str, name: str) -> str:
    """``annotate agree --format csv`` -> ``annotate agree --codebook NAME --format csv``."""
    words = command.split(" ", 2)
    return " ".join([*words[:2], f"--codebook {name}", *words[2:]])


def _none_fits(
    store: Store, found: Sequence[Candidate], where: str, question: str | None
) -> UsageError:
    """No codebook has the question, or the named coders' labels."""
    if question is not None and all(c.missing == f"no question {question}" for c in found):
        books = [_codebook_version(store, c.name) for c in found]
        return UsageError(
            f"no labelled codebook has a question {question}",
            hint="questions: "
            + "; ".join(f"{b.name} {', '.join(q.id for q in b.questions)}" for b in books),
        )
    return UsageError(
        f"no codebook has labels by every coder named{where}: "
        + ", ".join(c.describe() for c in found),
        hint="name coders who have labels with --coders (`annotate status` lists them), "
        "or leave --coders out",
    )


def _codebook_version(store: Store, name: str, fallback: Codebook | None = None) -> Codebook:
    """The newest version of the codebook stored with the labels (its codes are the categories)."""
    try:
        return store.codebooks.stored_codebook(name)
    except NotFoundError:
        if fallback is not None:
            return fallback
        return find_codebook(name).codebook


def select(
    store: Store,
    *,
    codebook: str | None = None,
    sample: str | None = None,
    coders: Sequence[str] | None = None,
    question: str | None = None,
    min_coders: int = MIN_CODERS,
    purpose: str = "agreement",
    command: str = "annotate agree",
    counted_ids: bool = False,
) -> Selection:
    """Resolve the inputs of a run; every mistake is a one-line error naming the choices.

    Defaults: sample ``main`` if it exists (for agreement, when too few coders answered in
    it, every labelled item, with a note), else every labelled item (``all`` names every
    labelled item whatever samples exist); the one codebook with
    ``min_coders`` or more coders on shared items there (``command`` is what the error
    suggests running, with --codebook, when several or none do); every human coder with
    answers (``gold`` and ``llm:*`` count only when named in ``coders``); every question of
    the codebook. ``counted_ids``: the sample's ids are read when first asked for, only
    their number now (:class:`~annotate.store.item_ids.Later`).
    """
    if sample == EVERY_ITEM:
        return _select(
            store, codebook, None, None, coders, question, min_coders, purpose, command,
            ["every labelled item (--sample all)"],
        )  # fmt: skip
    if sample is not None:  # NotFoundError names the samples
        action_ids = store.samples.sample_item_ids(sample, counted=counted_ids)
        return _select(
            store, codebook, sample, action_ids, coders, question, min_coders, purpose,
            command, [],
        )  # fmt: skip
    if not any(s["name"] == DEFAULT_SAMPLE for s in store.samples.samples()):
        return _select(
            store, codebook, None, None, coders, question, min_coders, purpose, command,
            ["every labelled item (there is no sample 'main')"],
        )  # fmt: skip
    action_ids = store.samples.sample_item_ids(DEFAULT_SAMPLE, counted=counted_ids)
    try:
        return _select(
            store, codebook, DEFAULT_SAMPLE, action_ids, coders, question, min_coders, purpose,
            command, [f"sample {DEFAULT_SAMPLE}"],
        )  # fmt: skip
    except UsageError as in_main:
        if purpose != "agreement":  # gold is made where the command says, or nowhere
            raise
        # the labels lie outside 'main' (imported on other items): measure them where they
        # are, and say so, rather than refuse
        try:
            found = _select(
                store, codebook, None, None, coders, question, min_coders, purpose, command, [],
            )  # fmt: skip
        except AnnotateError:
            raise in_main from None
        note = (
            f"every labelled item: too few coders in sample '{DEFAULT_SAMPLE}' "
            f"({in_main.message}), so the labels outside it are measured (--sample all "
            f"says so; --sample {DEFAULT_SAMPLE} refuses)"
        )
        return replace(found, defaults=(note, *found.defaults))


def _select(
    store: Store,
    codebook: str | None,
    sample: str | None,
    action_ids: Sequence[str] | None,
    coders: Sequence[str] | None,
    question: str | None,
    min_coders: int,
    purpose: str,
    command: str,
    notes: list[str],
) -> Selection:
    if codebook is not None and store.agreement.has_answers(codebook):  # no count over every label
        cb = _codebook_version(store, codebook)
    else:
        counts = store.agreement.answered_label_counts()  # once: a count over every label
        if codebook is None:
            wanted = list(dict.fromkeys(coders)) if coders else None
            codebook, why = _choose_codebook(
                store, action_ids, sample, wanted, question, min_coders, command, counts
            )
            notes.insert(0, why)
        cb = _resolve_codebook(store, codebook, counts)
    where = f"codebook '{cb.name}'" + (f" in sample '{sample}'" if sample else "")
    answering = store.agreement.answering_coders(cb.name, sample=sample)
    if coders:
        named = list(dict.fromkeys(coders))
        unknown = [c for c in named if c not in answering]
        if unknown:
            raise UsageError(
                f"unknown coder '{unknown[0]}': no labels on {where}",
                hint="coders: "
                + _choices(store.agreement.coders_with_answers(cb.name, sample=sample)),
            )
        chosen = tuple(named)
    else:
        chosen = tuple(c for c in answering if is_human(c))
        if len(chosen) >= min_coders:
            notes.append("coders " + ", ".join(chosen))
    if len(chosen) < min_coders:
        available = store.agreement.coders_with_answers(
            cb.name, sample=sample
        )  # with counts, to show
        found = f" ({', '.join(chosen)})" if chosen else ""
        hint = (
            "name them with --coders A,B (gold, llm:* and self:* count only when named); coders: "
            + _choices(available)
        )
        if not available and action_ids is not None:
            hint = (
                f"the labels of '{cb.name}' are on items outside sample '{sample}': "
                "pass --sample all (every labelled item) or --sample NAME, or code this sample"
            )
        elif len(available) < min_coders:
            hint = _second_coder(cb.name, sample) + "; coders: " + _choices(available)
        raise UsageError(
            f"{purpose} needs at least {min_coders} coders; got {len(chosen)}{found} on {where}",
            hint=hint,
        )
    questions = (cb.question(question),) if question else tuple(cb.questions)
    coded, text, numbers = _split_questions(questions, notes, purpose)
    return Selection(cb, sample, action_ids, chosen, coded, tuple(notes), text, numbers)


def _split_questions(
    questions: tuple[Question, ...], notes: list[str], purpose: str
) -> tuple[tuple[Question, ...], tuple[Question, ...], tuple[Question, ...]]:
    """Coded questions, free-text ones and number ones. Agreement gives the texts' similarity
    (SBERT and ROUGE-L) and the numbers' alpha and ICC; adjudication decides every kind
    (a text or a number by the same majority of equal answers as a code), so all its
    questions are the first."""
    if purpose != "agreement":
        return questions, (), ()
    text = tuple(q for q in questions if q.kind == "text")
    numbers = tuple(q for q in questions if q.kind == "number")
    coded = tuple(q for q in questions if q.kind not in ("text", "number"))
    if text:
        names = ", ".join(q.id for q in text)
        notes.append(f"free-text question {names}: similarity of the texts (SBERT, ROUGE-L)")
    if numbers:
        names = ", ".join(q.id for q in numbers)
        notes.append(f"number question {names}: Krippendorff's alpha and ICC")
    return coded, text, numbers


# -- one question's labels --------------------------------------------------------------------


def labels_hash(rows: Sequence[dict[str, Any]]) -> str:
    """SHA-256 of the labels' content (item, question, coder, answer, codebook version) as
    a run keeps it (:func:`~annotate.reliability.question_labels.labels_hash_of`)."""
    digests = [int(label_digest(r), 16) for r in rows]
    return labels_hash_of(np.array(digests, dtype=np.uint64).view(np.int64))


def legacy_labels_hash(rows: Sequence[dict[str, Any]]) -> str:
    """SHA-256 of the labels' content as runs stored before annotate kept each label's
    digest hashed it."""
    canonical = sorted(_content(r) for r in rows)
    text = json.dumps(canonical, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _content(r: dict[str, Any]) -> tuple[Any, ...]:
    return (
        r["action_id"],
        r["question"],
        r["coder"],
        r["value"],
        list(r["codes"] or ()),
        r["other_text"],
        r["codebook_hash"],
    )


def label_digest(row: dict[str, Any]) -> str:
    """A short SHA-256 of one label's content (its revision as hex), to tell later whether
    that label changed."""
    return revision_hex(
        content_revision(*(row[k] for k in ("action_id", "question", "coder", "value")),
                         row["codes"] or (), row["other_text"], row["codebook_hash"])
    )  # fmt: skip


# -- the categories that enter the figures ------------------------------------------------------

FIGURES_OF_PART = {
    "value": "kappa, alpha and AC1",
    "codes": "MASI alpha and the per-code figures",
    "reasons": "MASI alpha and the per-reason figures",
}


@dataclass(frozen=True)
class Categories:
    """The categories one part of a question's figures used: the codes the codebook version
    declares, plus "other" when labels made under a version that offered it use it."""

    part: str
    """``value`` (kappa, alpha, AC1), ``codes`` (multi) or ``reasons`` (a 'no')."""
    declared: tuple[str, ...]
    undeclared: tuple[str, ...] = ()
    n_undeclared: int = 0
    """Answers that use an undeclared code."""

    @property
    def codes(self) -> tuple[str, ...]:
        return self.declared + self.undeclared

    @property
    def note(self) -> str | None:
        if not self.undeclared:
            return None
        return (
            f"'{OTHER}' is not declared by this codebook version, but {self.n_undeclared} "
            f"answer(s) made under a version that offered Other use it: it is counted as a "
            "category."
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "part": self.part,
            "n": len(self.codes),
            "codes": list(self.codes),
            "undeclared": list(self.undeclared),
            "note": self.note,
        }


def undeclared_other(declared: Sequence[str], used: Sequence[str]) -> tuple[str, ...]:
    """``("other",)`` when answers use "other" and the question does not declare it (labels
    made under a version that offered Other); the figures count it rather than lose it."""
    return (OTHER,) if OTHER not in declared and OTHER in used else ()


def value_categories(data: QuestionData) -> Categories:
    declared = tuple(data.question.codes)
    counts = data.value_counts()
    extra = undeclared_other(declared, list(counts))
    return Categories("value", declared, extra, counts.get(OTHER, 0) if extra else 0)


def set_categories(data: QuestionData) -> Categories:
    declared = tuple(data.question.set_codes)
    used = [c for s in data.sets.values() for c in s]
    extra = undeclared_other(declared, used)
    part = "reasons" if data.kind == "yes_no_reasons" else "codes"
    return Categories(part, declared, extra, used.count(OTHER) if extra else 0)


def categories_line(q: dict[str, Any]) -> str | None:
    """One sentence, e.g. "Categories: 5 (a, b, c, d, e) in kappa, alpha and AC1.", for a
    question's result (None for runs stored before the count was recorded)."""
    found = q.get("categories")
    if not found:
        return None
    parts = [
        f"{'Categories' if c['part'] == 'value' else c['part'].capitalize()}: {c['n']} "
        f"({', '.join(c['codes'])}) in {FIGURES_OF_PART[c['part']]}"
        for c in found
    ]
    return "; ".join(parts) + "." + "".join(f" {c['note']}" for c in found if c["note"])


def value_matrix(data: QuestionData) -> LabelMatrix:
    """The codes (yes/no for yes/no questions) as an :class:`agreement.LabelMatrix`, made
    from the integer table as it is (no label is looked at one by one)."""
    from agreement.matrix import (
        MISSING,
        _category_names,
        _code_dtype,
        _resolve_categories,
        _trusted,
        label_name,
    )

    categories = _category_names(value_categories(data).codes)
    try:
        named = [label_name(n) for n in data.names]
        given = data.codes[data.codes >= 0].ravel()
        used = {named[k] for k in np.flatnonzero(np.bincount(given, minlength=1)).tolist()}
        resolved = _resolve_categories(used, categories)
    except ValueError as exc:
        raise _outside(data.question, exc) from None
    position = {name: i for i, name in enumerate(resolved)}
    dtype = _code_dtype(len(resolved))
    lookup = np.array([position.get(n, MISSING) for n in named] + [MISSING], dtype=dtype)
    codes = lookup[data.codes] if data.codes.size else np.empty(data.codes.shape, dtype=dtype)
    items = data.items if isinstance(data.items, ItemIds) else np.array(data.items, dtype=object)
    return _trusted(codes, resolved, tuple(data.coders), items)


def set_matrix(data: QuestionData) -> SetLabelMatrix:
    """The chosen sets (multi) or the reasons of a ``no`` as a :class:`SetLabelMatrix`.

    For yes/no questions only items with at least one ``no`` are rows, and a ``yes`` counts
    as no rating: the reasons are compared among the coders who answered ``no``.
    """
    from agreement import sets_from_wide

    rows = [(data.items[i], list(data.set_row(i))) for i in sorted({i for i, _ in data.sets})]
    try:
        return sets_from_wide(
            [s for _, s in rows] or _empty(data),
            coders=data.coders,
            items=[i for i, _ in rows],
            categories=list(set_categories(data).codes),
        )
    except ValueError as exc:
        raise _outside(data.question, exc) from None


def _empty(data: QuestionData) -> Any:
    return np.empty((0, len(data.coders)), dtype=object)


def _outside(question: Question, exc: ValueError) -> CodebookError:
    return CodebookError(
        f"question {question.id}: {str(exc).rstrip('.')}",
        hint="the labels do not fit the stored codebook version; "
        "see `annotate status` for the versions in this file",
    )


# -- the run ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeftOut:
    item: str
    part: str
    """``value``, ``reasons`` or ``codes``: which figure the item is left out of."""
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"item": self.item, "part": self.part, "reason": self.reason}


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


def _differing(data: QuestionData) -> list[int]:
    """Rows where the coders who answered did not all give the same answer."""
    return data.differing()


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
                len(_differing(data)),
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
        "sample_hash": _sample_hash(sel.action_ids),
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


def _sample_hash(action_ids: Sequence[str] | None) -> str | None:
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
            (d.question, _disagreements(store, d, _differing(d), name, context)) for d in datas
        )
    return DisagreementList(selection, found)


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
        if _sample_hash(action_ids) != run["sample_hash"]:
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
