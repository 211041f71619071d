"""Gold items -> a few-shot set and a held-out validation set, stratified and reproducible."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


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
