"""Reproducible random samples of actions, optionally stratified.

The draw needs only each action's position in session order and, with ``--stratify``, its
stratum: :func:`draw_from_store` reads the row ids (and stratum columns) in that order and
returns the drawn row ids, which the store turns into sample items inside SQLite, so a
million actions cost a few arrays, not a million dicts. :func:`draw_sample` draws from rows
already in memory, with the same result.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

from annotate.errors import UsageError

if TYPE_CHECKING:  # numpy loads when a sample is drawn, not with every command
    import numpy as np

    from annotate.store import Store


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


def _check(n: int, seed: int, total: int) -> None:
    if n <= 0:
        raise UsageError("--n must be at least 1")
    if n > total:
        raise UsageError(
            f"--n {n} is more than the {total} actions that match",
            hint="ask for fewer, or loosen --where",
        )


def pick_positions(
    total: int,
    n: int,
    seed: int,
    codes: np.ndarray | None = None,
    keys: Sequence[tuple[Any, ...]] = (),
) -> np.ndarray:
    """Positions (0..total-1, in the rows' stable order) of ``n`` rows drawn without
    replacement; the same seed gives the same positions.

    With strata, ``codes[i]`` is row i's stratum, ``keys[c]`` the key of stratum c (strata
    numbered in order of first appearance): each stratum gets its proportional share, and
    the result is shuffled so coders do not code one stratum after another.
    """
    import numpy as np

    _check(n, seed, total)
    rng = np.random.default_rng(seed)
    if codes is None:
        return rng.choice(total, size=n, replace=False)
    sizes = np.bincount(codes, minlength=len(keys))
    counts = allocate({keys[c]: int(sizes[c]) for c in range(len(keys))}, n)
    by_stratum = np.argsort(codes, kind="stable")  # row order kept inside each stratum
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    chosen = []
    for c in sorted(range(len(keys)), key=lambda c: str(keys[c])):
        members = by_stratum[starts[c] : starts[c] + sizes[c]]
        chosen.append(members[rng.choice(int(sizes[c]), size=counts[keys[c]], replace=False)])
    picked = np.concatenate(chosen)
    return picked[rng.permutation(len(picked))]


def _strata(keys_in_order: Sequence[Hashable]) -> tuple[np.ndarray, list[Any]]:
    """Each row's stratum number, and the strata's keys, numbered by first appearance."""
    import numpy as np

    numbers: dict[Any, int] = {}
    codes = np.fromiter(
        (numbers.setdefault(k, len(numbers)) for k in keys_in_order),
        dtype=np.int64,
        count=len(keys_in_order),
    )
    return codes, list(numbers)


def draw_sample(
    rows: Sequence[dict[str, Any]], n: int, seed: int, stratify: Sequence[str] = ()
) -> list[str]:
    """Ids of ``n`` of ``rows`` drawn without replacement; the same seed gives the same items.

    ``rows`` must come in a stable order (the store gives session, seq). With ``stratify``
    each stratum gets its proportional share.
    """
    if not stratify:
        picked = pick_positions(len(rows), n, seed)
    else:
        _check(n, seed, len(rows))
        codes, keys = _strata([tuple(row.get(c) for c in stratify) for row in rows])
        picked = pick_positions(len(rows), n, seed, codes, keys)
    return [rows[i]["id"] for i in picked]


def draw_from_store(
    store: Store, n: int, seed: int, stratify: Sequence[str] = (), where: str | None = None
) -> np.ndarray:
    """:func:`draw_sample` over the store's actions (session order), ``where`` one SQL
    condition: the drawn actions' row ids (int64), in sample order. Only row ids and
    stratum columns are read."""
    import numpy as np

    if n <= 0:
        raise UsageError("--n must be at least 1")
    with store.db.read_snapshot():
        if not stratify:
            rowids = store.actions.sampling_rowids(where)
            return rowids[pick_positions(len(rowids), n, seed)]
        with store.actions.sampling_rows(where, stratify) as rows:
            numbers: dict[tuple[Any, ...], int] = {}
            pairs = np.fromiter(
                ((r[0], numbers.setdefault(r[1:], len(numbers))) for r in rows),
                dtype=[("rowid", np.int64), ("stratum", np.int64)],
            )
    rowids = pairs["rowid"]
    return rowids[pick_positions(len(rowids), n, seed, pairs["stratum"], list(numbers))]
