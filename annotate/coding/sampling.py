"""Reproducible random samples of actions, optionally stratified."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from annotate.errors import UsageError


def allocate(sizes: dict[tuple[Any, ...], int], n: int) -> dict[tuple[Any, ...], int]:
    """Split ``n`` over strata in proportion to their sizes (largest remainder)."""
    total = sum(sizes.values())
    exact = {k: n * size / total for k, size in sizes.items()}
    counts = {k: min(int(v), sizes[k]) for k, v in exact.items()}
    by_remainder = sorted(sizes, key=lambda k: (-(exact[k] - int(exact[k])), str(k)))
    while sum(counts.values()) < n:
        for k in by_remainder:
            if counts[k] < sizes[k] and sum(counts.values()) < n:
                counts[k] += 1
    return counts


def draw_sample(
    rows: Sequence[dict[str, Any]], n: int, seed: int, stratify: Sequence[str] = ()
) -> list[str]:
    """Ids of ``n`` actions drawn without replacement; the same seed gives the same items.

    ``rows`` must come in a stable order (the store gives session, seq). With ``stratify``
    each stratum gets its proportional share; the result is shuffled so coders do not code
    one stratum after another.
    """
    if n <= 0:
        raise UsageError("--n must be at least 1")
    if n > len(rows):
        raise UsageError(
            f"--n {n} is more than the {len(rows)} actions that match",
            hint="ask for fewer, or loosen --where",
        )
    rng = np.random.default_rng(seed)
    if not stratify:
        picked = rng.choice(len(rows), size=n, replace=False)
        return [rows[i]["id"] for i in picked]
    strata: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        strata[tuple(row.get(c) for c in stratify)].append(i)
    counts = allocate({k: len(v) for k, v in strata.items()}, n)
    chosen: list[int] = []
    for key in sorted(strata, key=str):
        members = strata[key]
        chosen += [members[j] for j in rng.choice(len(members), size=counts[key], replace=False)]
    order = rng.permutation(len(chosen))
    return [rows[chosen[i]]["id"] for i in order]
