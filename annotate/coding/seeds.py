"""Random seeds given on the command line: whole numbers that numpy accepts and SQLite stores."""

from __future__ import annotations

from annotate.errors import UsageError

MAX_SEED = 2**63 - 1
"""The largest SQLite integer; numpy refuses negative seeds."""


def check_seed(seed: int) -> int:
    """``seed`` if numpy can use it and SQLite can store it; else a one-line UsageError."""
    if not 0 <= seed <= MAX_SEED:
        raise UsageError(f"--seed must be a whole number from 0 to {MAX_SEED}, not {seed}")
    return seed
