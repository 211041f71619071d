"""What a coding session starts from, checked: the coder's name, the codebook, the sample,
and whether the codebook changed since the coder's earlier answers."""

from __future__ import annotations

import re

from annotate.codebook import Codebook, LoadedCodebook, find_codebook
from annotate.coders import is_human
from annotate.errors import CodebookError, NotFoundError, UsageError
from annotate.store import Store
from annotate.store.coding import CodingQueries

DEFAULT_SAMPLE = "main"
RESERVED_CODERS = {"gold": "adjudicated gold labels (made with `annotate adjudicate`)"}
CODER_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$")


def human_coders(store: Store) -> list[str]:
    """The human coders recorded in the project file (any codebook; not gold nor LLMs)."""
    return [c for c in store.labels.coders() if is_human(c)]


def check_coder(store: Store, codebook: str, coder: str, *, new_coder: bool = False) -> bool:
    """Validate a coder name for coding; return True when the coder is new to this codebook.

    A name the file already has labels from (in any codebook) is accepted. A name it does
    not have is accepted only with ``new_coder`` (``--new-coder``), or while the file has no
    human coder yet: an unknown name is far more often a typo than a new coder. A corpus
    coding (``import --labels-as``) is not a coder of the file in this sense: it came with
    the data. Always refused: names that are not plain identifiers, names reserved for
    non-human coders (``gold``, ``llm:...``), and a name that differs from an existing
    coder's only in case.
    """
    humans = human_coders(store)
    corpus = store.labels.corpus_coders()
    coding = [c for c in humans if c not in corpus]
    choices = "existing coders: " + (", ".join(coding) if coding else "none yet")
    if corpus:
        choices += "; corpus codings: " + ", ".join(corpus)
    if coder in RESERVED_CODERS:
        raise UsageError(f"coder '{coder}' is reserved for {RESERVED_CODERS[coder]}", hint=choices)
    if coder.startswith("llm:"):
        raise UsageError(f"coder '{coder}' is reserved for the LLM coder", hint=choices)
    if not CODER_PATTERN.match(coder):
        raise UsageError(
            f"coder name '{coder}' is not allowed",
            hint="use letters, digits and . _ - @ + (no spaces); " + choices,
        )
    new_here = coder not in store.labels.coders(codebook)
    if coder in humans:
        return new_here
    clash = [c for c in humans if c.casefold() == coder.casefold()]
    if clash:
        raise UsageError(
            f"coder '{coder}' differs from the existing coder '{clash[0]}' only in case",
            hint=f"use --coder {clash[0]} to continue, or a clearly different name; {choices}",
        )
    if coding and not new_coder:
        raise NotFoundError(
            f"unknown coder '{coder}' ({choices})",
            hint=f"check the spelling, or pass --new-coder to start a new coder '{coder}'",
        )
    return True


def resolve_codebook(store: Store, name: str) -> LoadedCodebook:
    """A codebook file by name or path; else the newest version stored in the project file."""
    try:
        return find_codebook(name)
    except CodebookError as exc:
        stored = CodingQueries(store.db).stored_codebook_names()
        if name in stored:
            cb = store.codebooks.stored_codebook(name)
            return LoadedCodebook(cb, "", f"{name} (stored in the project file)")
        if stored and exc.hint:
            raise CodebookError(
                exc.message, hint=f"{exc.hint}; stored in this file: {', '.join(stored)}"
            ) from None
        raise


def sample_name(queries: CodingQueries, sample: str | None) -> str:
    """The sample to code (``main`` when none is named), which must exist."""
    name = sample or DEFAULT_SAMPLE
    if queries.sample_exists(name):
        return name
    others = queries.sample_names()
    make = f"annotate sample --n 180 --seed 7 --name {name}"
    if sample is None:
        raise NotFoundError(
            f"no sample named '{DEFAULT_SAMPLE}' (the one coded when --sample is not given)",
            hint=(
                f"pass --sample NAME (samples: {', '.join(others)}), or make one with `{make}`"
                if others
                else f"draw one first: `{make}`"
            ),
        )
    raise NotFoundError(
        f"no sample named '{name}'",
        hint=(f"samples: {', '.join(others)}" if others else f"draw one first: `{make}`"),
    )


def version_warning(queries: CodingQueries, codebook: Codebook, coder: str) -> str | None:
    """A warning when the coder answered under another version of the codebook."""
    current = codebook.version_hash
    if not queries.answered_under_another_version(codebook.name, coder, current):
        return None
    versions = queries.coder_versions(codebook.name, coder)
    older = [v for v in versions if v.version_hash != current and v.labels]
    if not older:
        return None
    was = ", ".join(f"v{v.version or '?'} ({v.version_hash}, {v.labels} answers)" for v in older)
    return (
        f"Codebook '{codebook.name}' changed since you started: your earlier answers "
        f"were made under {was}; it is now v{codebook.version} "
        f"({current}). Those answers keep their version; new ones get the new one."
    )
