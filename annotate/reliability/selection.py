"""What `annotate agree` (and adjudication) measures: :func:`select` resolves the codebook,
sample, coders and questions, with the defaults the CLI documents; every mistake is a
one-line error naming the choices."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from annotate.codebook import TYPED_KINDS, Codebook, Question, find_codebook
from annotate.coders import is_human
from annotate.errors import AnnotateError, CodebookError, NotFoundError, UsageError

if TYPE_CHECKING:
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
    coded = tuple(q for q in questions if q.kind not in TYPED_KINDS)
    if text:
        names = ", ".join(q.id for q in text)
        notes.append(f"free-text question {names}: similarity of the texts (SBERT, ROUGE-L)")
    if numbers:
        names = ", ".join(q.id for q in numbers)
        notes.append(f"number question {names}: Krippendorff's alpha and ICC")
    return coded, text, numbers
