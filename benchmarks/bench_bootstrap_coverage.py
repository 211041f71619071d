"""Coverage of the bootstrap intervals of Fleiss' kappa: percentile against BCa.

A simulation, not a timing: for each scenario and number of items it draws ``--reps``
data sets from a model whose Fleiss' kappa is known, computes both 95% intervals from
the same 1,000 resamples (``agreement.bootstrap.fleiss_bootstrap``, seeded per data set),
and counts how often each interval holds the true kappa. Prints a Markdown table.

The model: every item has a true category drawn from the prevalences p; each of the
coders independently gives the true category with probability r, else a category drawn
from p. Every rating then has marginal p, two coders agree with probability
r² + (1 - r²) Σp², and chance agreement is Σp², so the population Fleiss' kappa is
exactly r².

    python benchmarks/bench_bootstrap_coverage.py [--reps 2000] [--quick]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agreement.bootstrap import fleiss_bootstrap

SCENARIOS = (
    # name, coders, prevalences, r (kappa = r**2)
    ("3 coders, 4 codes (0.4/0.3/0.2/0.1), kappa 0.49", 3, (0.4, 0.3, 0.2, 0.1), 0.7),
    ("3 coders, 3 codes (0.7/0.2/0.1), kappa 0.81", 3, (0.7, 0.2, 0.1), 0.9),
)
SIZES = (30, 60, 180)
LEVEL = 0.95
N_BOOT = 1000


def draw_counts(
    rng: np.random.Generator, n_items: int, coders: int, p: np.ndarray, r: float
) -> np.ndarray:
    """An items x categories count table from the model."""
    k = len(p)
    truth = rng.choice(k, size=n_items, p=p)
    chance = rng.choice(k, size=(n_items, coders), p=p)
    correct = rng.random((n_items, coders)) < r
    labels = np.where(correct, truth[:, None], chance)
    counts = np.zeros((n_items, k))
    for j in range(coders):
        counts[np.arange(n_items), labels[:, j]] += 1
    return counts


def coverage(
    coders: int, p: tuple[float, ...], r: float, n_items: int, reps: int, seed: int
) -> dict[str, tuple[float, int, float]]:
    """Per method: share of intervals holding r**2, how many intervals were defined, and
    their mean width."""
    truth = r * r
    rng = np.random.default_rng(seed)
    prevalence = np.asarray(p)
    hits = {"percentile": 0, "bca": 0}
    defined = {"percentile": 0, "bca": 0}
    width = {"percentile": 0.0, "bca": 0.0}
    for rep in range(reps):
        counts = draw_counts(rng, n_items, coders, prevalence, r)
        for method in hits:
            ci = fleiss_bootstrap(counts, LEVEL, N_BOOT, seed + rep, method)
            if ci.low is None:
                continue
            defined[method] += 1
            width[method] += ci.high - ci.low
            hits[method] += ci.low <= truth <= ci.high
    return {
        m: (hits[m] / max(defined[m], 1), defined[m], width[m] / max(defined[m], 1)) for m in hits
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000, help="data sets per cell")
    parser.add_argument("--quick", action="store_true", help="200 data sets per cell")
    args = parser.parse_args()
    reps = 200 if args.quick else args.reps
    started = time.perf_counter()
    print(
        f"95% intervals from {N_BOOT:,} resamples; {reps:,} data sets per row; Monte Carlo "
        f"SE of a coverage near 0.95: {math.sqrt(0.95 * 0.05 / reps):.3f}\n"
    )
    print("| scenario | items | percentile | BCa | percentile width | BCa width |")
    print("|---|---:|---:|---:|---:|---:|")
    for s, (name, coders, p, r) in enumerate(SCENARIOS):
        for n_items in SIZES:
            found = coverage(coders, p, r, n_items, reps, seed=1000 * s + n_items)
            pct, bca = found["percentile"], found["bca"]
            undefined = reps - min(pct[1], bca[1])
            extra = f" ({undefined} undefined)" if undefined else ""
            print(
                f"| {name} | {n_items}{extra} | {pct[0]:.3f} | {bca[0]:.3f} | "
                f"{pct[2]:.3f} | {bca[2]:.3f} |",
                flush=True,
            )
    print(f"\n{time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
