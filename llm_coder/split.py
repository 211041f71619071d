"""Gold items -> a few-shot set and a held-out validation set, stratified and reproducible
(:func:`random_split`, :func:`stratified_split`), and the split a project file stores
(:func:`make_split`, `annotate split`)."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from annotate.codebook import Answer, Codebook, LoadedCodebook
from annotate.coders import LLM_PREFIX
from annotate.errors import NotFoundError, UsageError

if TYPE_CHECKING:
    from llm_coder.ports import LLMStore


@dataclass(frozen=True)
class Split:
    shots: tuple[str, ...]
    heldout: tuple[str, ...]


def _largest_remainder(weights: dict[str, int], total: int, caps: dict[str, int]) -> dict[str, int]:
    """Share ``total`` slots in proportion to ``weights`` without exceeding ``caps``."""
    out = dict.fromkeys(weights, 0)
    remaining = total
    while remaining > 0:
        open_ = {k: w for k, w in weights.items() if out[k] < caps[k] and w > 0}
        if not open_:
            break
        mass = sum(open_.values())
        exact = {k: remaining * w / mass for k, w in open_.items()}
        given = 0
        for k, x in exact.items():
            add = min(int(x), caps[k] - out[k])
            out[k] += add
            given += add
        if given == 0:  # hand out single slots by largest remainder, then by weight
            order = sorted(open_, key=lambda k: (-(exact[k] - int(exact[k])), -open_[k], k))
            for k in order[:remaining]:
                out[k] += 1
                given += 1
        remaining -= given
    return out


def stratified_split(labels: Mapping[str, str], n_shots: int, seed: int) -> Split:
    """Pick ``n_shots`` items covering as many distinct labels as ``n_shots`` allows.

    ``labels`` maps item id -> its gold label, in the order items should be listed.
    With fewer labels than shots, every label gets one shot and the rest are shared in
    proportion to label frequency; with more labels than shots, the most frequent labels
    get one shot each. The choice and the shots' order depend only on ``labels`` and
    ``seed``. Every item that is not a shot is held out.
    """
    if n_shots < 0:
        raise ValueError("the number of shots cannot be negative")
    if n_shots > len(labels):
        raise ValueError(f"{n_shots} shots asked for but only {len(labels)} items given")
    rng = random.Random(seed)
    groups: dict[str, list[str]] = {}
    for item_id in sorted(labels):
        groups.setdefault(labels[item_id], []).append(item_id)
    for label in sorted(groups):
        rng.shuffle(groups[label])
    by_freq = sorted(groups, key=lambda g: (-len(groups[g]), g))
    quota = dict.fromkeys(by_freq, 0)
    for label in by_freq[:n_shots]:
        quota[label] = 1
    extra = n_shots - sum(quota.values())
    if extra > 0:
        more = _largest_remainder(
            {g: len(groups[g]) - 1 for g in by_freq},
            extra,
            {g: len(groups[g]) - 1 for g in by_freq},
        )
        for g, n in more.items():
            quota[g] += n
    chosen = [item for g in by_freq for item in groups[g][: quota[g]]]
    rng.shuffle(chosen)
    picked = set(chosen)
    return Split(tuple(chosen), tuple(i for i in labels if i not in picked))


def random_split(items: Sequence[str], n_shots: int, seed: int) -> Split:
    """Draw ``n_shots`` items at random, whatever their labels (the ALMANAC paper's
    procedure); the rest are held out, in the order given. The draw depends only on the
    items and ``seed``."""
    if n_shots < 0:
        raise ValueError("the number of shots cannot be negative")
    if n_shots > len(items):
        raise ValueError(f"{n_shots} shots asked for but only {len(items)} items given")
    chosen = random.Random(seed).sample(sorted(items), n_shots)
    picked = set(chosen)
    return Split(tuple(chosen), tuple(i for i in items if i not in picked))


# -- the stored split ----------------------------------------------------------------


@dataclass(frozen=True)
class SplitResult:
    name: str
    gold_items: int
    shots: tuple[str, ...]
    heldout: tuple[str, ...]
    shot_labels: dict[str, int]
    labels_total: int
    strategy: str = "random"


def stratum(codebook: Codebook, answers: dict[str, Answer]) -> str:
    """The label a split stratifies on: the answer to the first question that has one."""
    for q in codebook.questions:
        a = answers.get(q.id)
        if a is not None:
            return a.value if a.value is not None else "+".join(sorted(a.codes))
    return "?"


def complete_gold(
    store: LLMStore, codebook: Codebook, gold: str, ids: Sequence[str] | None
) -> dict[str, dict[str, Answer]]:
    """Gold answers of the actions the codebook applies to, every applicable question answered."""
    answers = store.coder_answers(codebook, gold, ids)
    if not answers:
        return {}
    actions = {a.id: a for a in store.actions_by_ids(sorted(answers))}
    out: dict[str, dict[str, Answer]] = {}
    for aid in sorted(answers, key=lambda i: (actions[i].session, actions[i].seq)):
        action = actions[aid]
        if not codebook.applies(action.action_type):
            continue
        needed = [q.id for q in codebook.questions_for(action.action_type)]
        if needed and all(q in answers[aid] for q in needed):
            out[aid] = answers[aid]
    return out


DEFAULT_SHOTS = 8
DEFAULT_SEED = 7


def gold_codebook(store: LLMStore) -> str:
    """The one codebook with gold (`llm-label` without ``--codebook``)."""
    names = store.gold_codebooks()
    if len(names) == 1:
        return names[0]
    if not names:
        raise UsageError(
            "no codebook has gold labels to validate an LLM on: pass --codebook NAME",
            hint="make gold first: `annotate agree` then `annotate adjudicate`, or import "
            "expert labels with `annotate import-labels FILE --codebook NAME` (coder gold)",
        )
    raise UsageError(
        f"{len(names)} codebooks have gold ({', '.join(names)}): pass --codebook NAME",
    )


def split_exists(store: LLMStore, name: str) -> bool:
    try:
        store.split_info(name)
    except NotFoundError:
        return False
    return True


STRATEGIES = ("random", "cover")
"""How shots are chosen: ``random`` (a plain draw, the ALMANAC paper's; the default) or
``cover`` (as many distinct labels as the shots allow)."""


def make_split(
    store: LLMStore,
    loaded: LoadedCodebook,
    *,
    shots: int,
    seed: int,
    gold: str = "gold",
    sample: str | None = None,
    name: str | None = None,
    replace: bool = False,
    strategy: str = "random",
) -> SplitResult:
    codebook = loaded.codebook
    if shots < 1:
        raise UsageError("--shots must be at least 1")
    if strategy not in STRATEGIES:
        raise UsageError(
            f"--strategy: unknown strategy '{strategy}'", hint="choices: " + ", ".join(STRATEGIES)
        )
    ids = store.sample_ids(sample) if sample else None
    answers = complete_gold(store, codebook, gold, ids)
    where = f" in sample '{sample}'" if sample else ""
    if not answers:
        coders = [c for c in store.coders(codebook.name) if not c.startswith(LLM_PREFIX)]
        raise UsageError(
            f"no gold labels for codebook '{codebook.name}'{where} (coder '{gold}')",
            hint=(
                f"make gold first: `annotate agree --codebook {codebook.name}` then "
                "`annotate adjudicate`, or import expert labels with "
                f"`annotate import FILES --labels-as {gold} --codebook {codebook.name}`"
                + (
                    f"; coders with labels: {', '.join(coders)} (use --gold CODER)"
                    if coders
                    else ""
                )
            ),
        )
    if len(answers) <= shots:
        raise UsageError(
            f"only {len(answers)} gold items for codebook '{codebook.name}'{where}: "
            f"--shots {shots} would leave nothing to validate on",
            hint="adjudicate more items into gold, or ask for fewer --shots",
        )
    labels = {aid: stratum(codebook, a) for aid, a in answers.items()}
    if strategy == "cover":
        split = stratified_split(labels, shots, seed)
    else:
        split = random_split(list(labels), shots, seed)
    split_name = name or codebook.name
    store.register_codebook(loaded)
    store.create_split(
        split_name,
        codebook=codebook,
        gold_coder=gold,
        sample=sample,
        seed=seed,
        shots=split.shots,
        heldout=split.heldout,
        labels=labels,
        replace=replace,
        strategy=strategy,
    )
    shot_labels: dict[str, int] = {}
    for aid in split.shots:
        shot_labels[labels[aid]] = shot_labels.get(labels[aid], 0) + 1
    return SplitResult(
        split_name,
        len(answers),
        split.shots,
        split.heldout,
        shot_labels,
        len(set(labels.values())),
        strategy,
    )
