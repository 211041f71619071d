"""Agreement statistics: time and peak memory against statsmodels and krippendorff.

For N items x 3 coders x 8 categories of raw string labels (N = 1,000 / 100,000 /
1,000,000), measured in one run:

- Fleiss' kappa from raw labels: ``agreement.fleiss_kappa(labels)`` against statsmodels'
  ``fleiss_kappa(aggregate_raters(labels)[0])``;
- nominal Krippendorff's alpha, complete and with 10% missing ratings:
  ``agreement.krippendorff_alpha(labels)`` against ``krippendorff.alpha(...,
  level_of_measurement="nominal")``. The peer gets its preferred input, prepared outside
  the timing: a coders x items NumPy unicode array with missing ratings as "nan" (the
  package's own convention; ours takes the items x coders object array with None);
- the 1,000-resample bootstrap CI of Fleiss' kappa on 180 x 3;
- the NumPy floor: on 1M items x 3 coders of int8 codes (a LabelMatrix, 8 categories), the
  rating-pattern key + ``np.bincount`` that any pattern-counting kernel must pay, against
  Fleiss' kappa, AC1, nominal alpha and Gwet's generalized kappa, each as a ratio to the
  floor measured in the same run (goal <= 1.5);
- the whole ``agreement_report`` with 1,000 bootstrap resamples (BCa) on 1k / 100k / 1M /
  10M items x 3 coders of int8 codes (goals: < 0.5 s at 1M, < 3 s at 10M).

Time is per call, the best of several rounds (``time.perf_counter``; a round repeats a
fast call for about 20 ms, like ``timeit``); our rounds and the peer's alternate, so both
meet the same machine load. Peak memory is measured in a
separate call under ``tracemalloc``, which sees NumPy's and pandas' buffers; the input
arrays exist before tracing starts, so the figure is what the call itself allocates.

    .venv/bin/python benchmarks/bench_agreement.py            # 1k, 100k, 1M
    .venv/bin/python benchmarks/bench_agreement.py --quick    # 1k, 100k; report to 1M
    .venv/bin/python benchmarks/bench_agreement.py --floor    # only the floor and report
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
import warnings
from collections.abc import Callable
from typing import Any

import krippendorff
import numpy as np
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

import agreement
from agreement.bootstrap import PATTERN_BOOTSTRAP_MIN_ITEMS, resample_weights

CODES = np.array(
    ["Initiate", "ack", "query", "instruct", "explain", "check", "align", "other"], dtype=object
)
N_CODERS = 3


def labels(n_items: int, missing: float, seed: int = 0) -> np.ndarray:
    """Items x coders object array of string labels (None = missing), ~60% agreement."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, len(CODES), n_items)
    noise = rng.integers(0, len(CODES), (n_items, N_CODERS))
    codes = np.where(rng.random((n_items, N_CODERS)) < 0.6, truth[:, None], noise)
    out = CODES[codes]
    if missing:
        out[rng.random(out.shape) < missing] = None
    return out


def peer_alpha_input(table: np.ndarray) -> np.ndarray:
    """The krippendorff package's string input: coders x items, missing as "nan"."""
    return np.where(table == None, "nan", table).astype(str).T  # noqa: E711


def calls_per_round(fn: Callable[[], Any], seconds: float = 0.02) -> tuple[int, Any]:
    """How many calls make a round of about ``seconds`` (at least one), and fn's value."""
    start = time.perf_counter()
    value = fn()
    first = time.perf_counter() - start
    return max(1, int(seconds / max(first, 1e-9))), value


def round_time(fn: Callable[[], Any], number: int) -> float:
    gc.collect()
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def best_times(ours: Callable[[], Any], peer: Callable[[], Any], rounds: int) -> tuple:
    """Seconds per call of each side: the best of ``rounds`` rounds, ours and peer's
    alternating so that both meet the same machine load. Also returns both values."""
    ours_n, ours_value = calls_per_round(ours)
    peer_n, peer_value = calls_per_round(peer)
    ours_best = peer_best = float("inf")
    for _ in range(rounds):
        ours_best = min(ours_best, round_time(ours, ours_n))
        peer_best = min(peer_best, round_time(peer, peer_n))
    return ours_best, peer_best, ours_value, peer_value


def peak_bytes(fn: Callable[[], Any]) -> int:
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def measure(name: str, n_items: int, ours: Callable[[], float], peer: Callable[[], float]) -> dict:
    rounds = 25 if n_items <= 1_000 else 5 if n_items <= 100_000 else 2
    ours_s, peer_s, ours_value, peer_value = best_times(ours, peer, rounds)
    row = {
        "case": name,
        "items": n_items,
        "ours_s": ours_s,
        "peer_s": peer_s,
        "ours_mb": peak_bytes(ours) / 2**20,
        "peer_mb": peak_bytes(peer) / 2**20,
        "diff": abs(ours_value - peer_value),
    }
    print_row(row)
    return row


COLUMNS = (
    ("case", 41), ("items", 9), ("ours ms", 8), ("peer ms", 8), ("time ratio", 10),
    ("ours MB", 7), ("peer MB", 7), ("mem ratio", 9), ("|diff|", 7),
)  # fmt: skip


def print_header() -> None:
    print("| " + " | ".join(f"{n:<{w}}" if i == 0 else f"{n:>{w}}"
                            for i, (n, w) in enumerate(COLUMNS)) + " |")  # fmt: skip
    print("|" + "|".join("-" * (w + 2) if i == 0 else "-" * (w + 1) + ":"
                         for i, (_, w) in enumerate(COLUMNS)) + "|")  # fmt: skip


def print_row(row: dict) -> None:
    cells = (
        row["case"],
        f"{row['items']:,}",
        f"{row['ours_s'] * 1e3:.1f}",
        f"{row['peer_s'] * 1e3:.1f}",
        f"{row['ours_s'] / row['peer_s']:.3f}",
        f"{row['ours_mb']:.2f}",
        f"{row['peer_mb']:.2f}",
        f"{row['ours_mb'] / row['peer_mb']:.3f}",
        f"{row['diff']:.0e}",
    )
    print("| " + " | ".join(f"{c:<{w}}" if i == 0 else f"{c:>{w}}"
                            for i, (c, (_, w)) in enumerate(zip(cells, COLUMNS, strict=True)))
          + " |", flush=True)  # fmt: skip


def bench_fleiss(table: np.ndarray) -> dict:
    def ours() -> float:
        return agreement.fleiss_kappa(table).kappa

    def peer() -> float:
        return float(sm_fleiss_kappa(aggregate_raters(table)[0]))

    return measure("Fleiss kappa (statsmodels)", len(table), ours, peer)


def bench_alpha(table: np.ndarray, missing: float) -> dict:
    peer_input = peer_alpha_input(table)

    def ours() -> float:
        return agreement.krippendorff_alpha(table).alpha

    def peer() -> float:
        return float(krippendorff.alpha(peer_input, level_of_measurement="nominal"))

    name = "alpha nominal (krippendorff)" + (f", {missing:.0%} missing" if missing else "")
    return measure(name, len(table), ours, peer)


def peer_bootstrap_ci(
    table: np.ndarray, n_boot: int = 1000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """The bootstrap CI of Fleiss' kappa with statsmodels: ``aggregate_raters`` and
    ``fleiss_kappa`` on each resample of the items x coders ``table``, drawn like
    ``agreement.bootstrap_fleiss_ci``: the same generator, seed and draws (one (n_boot,
    n_items) call, as ours makes when n_boot x n_items fits one chunk; checked by
    :func:`same_resamples`), so both see the same resampled items."""
    n_items = len(table)
    draws = np.random.default_rng(seed).integers(0, n_items, size=(n_boot, n_items))
    kappas = np.array([sm_fleiss_kappa(aggregate_raters(table[d])[0]) for d in draws])
    valid = kappas[np.isfinite(kappas)]
    low, high = np.quantile(valid, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return float(low), float(high)


def same_resamples(n_items: int, n_boot: int = 1000, seed: int = 0) -> bool:
    """Whether the peer's draws give the item multiplicities agreement's bootstrap uses."""
    draws = np.random.default_rng(seed).integers(0, n_items, size=(n_boot, n_items))
    peer = np.stack([np.bincount(d, minlength=n_items) for d in draws])
    ours = np.concatenate(list(resample_weights(n_items, n_boot, seed)))
    return ours.shape == peer.shape and bool((ours == peer).all())


def bench_bootstrap() -> None:
    """Ours from raw labels against statsmodels from the same raw labels, and ours from a
    LabelMatrix against statsmodels from integer codes (each side's encoded input, made
    outside the timing)."""
    raw = labels(180, 0.0, seed=1)
    matrix = agreement.from_wide(raw)
    codes = np.asarray(matrix.codes, dtype=np.int64)
    pairs = {
        "raw labels": (
            lambda: agreement.bootstrap_fleiss_ci(raw, method="percentile"),
            lambda: peer_bootstrap_ci(raw),
        ),
        "encoded": (
            lambda: agreement.bootstrap_fleiss_ci(matrix, method="percentile"),
            lambda: peer_bootstrap_ci(codes),
        ),
    }
    kappa = agreement.fleiss_kappa(matrix).kappa
    print(
        f"\nBootstrap CI of Fleiss' kappa, 180 items x 3 coders, 1,000 resamples, against a "
        f"loop of statsmodels' aggregate_raters + fleiss_kappa over the same resampled items "
        f"({'checked' if same_resamples(len(raw)) else 'NOT the same'}); "
        f"kappa {kappa:.3f}:"
    )
    for name, (ours, peer) in pairs.items():
        ours_s, peer_s, ours_ci, peer_ci = best_times(ours, peer, rounds=5)
        diff = max(abs(ours_ci.low - peer_ci[0]), abs(ours_ci.high - peer_ci[1]))
        print(
            f"- from {name}: ours {ours_s * 1e3:.1f} ms, statsmodels {peer_s * 1e3:.1f} ms, "
            f"time ratio {ours_s / peer_s:.3f}; 95% CI ours {ours_ci.low:.3f} to "
            f"{ours_ci.high:.3f}, statsmodels {peer_ci[0]:.3f} to {peer_ci[1]:.3f}, "
            f"|diff| {diff:.0e} ({'equal' if diff <= 1e-9 else 'DIFFERENT'})."
        )
    print(
        f"Our peak memory (from a LabelMatrix): {peak_bytes(pairs['encoded'][0]) / 2**20:.1f} MB."
    )


def int8_matrix(n_items: int, seed: int = 0) -> agreement.LabelMatrix:
    """Items x 3 coders of int8 codes of 8 categories, ~60% agreement, as a LabelMatrix."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, len(CODES), n_items)
    noise = rng.integers(0, len(CODES), (n_items, N_CODERS))
    codes = np.where(rng.random((n_items, N_CODERS)) < 0.6, truth[:, None], noise)
    return agreement.LabelMatrix(
        codes=codes.astype(np.int8),
        categories=tuple(str(c) for c in CODES),
        coders=tuple(f"coder{j + 1}" for j in range(N_CODERS)),
        items=np.arange(n_items),
    )


def numpy_floor(codes: np.ndarray, n_values: int) -> np.ndarray:
    """The floor: each item's rating-pattern key (base V + 1, missing = 0) and one
    ``np.bincount`` of the keys; every pattern-counting kernel does at least this."""
    side = n_values + 1
    key = codes[:, 0].astype(np.intp)
    for j in range(1, codes.shape[1]):
        key *= side
        key += codes[:, j]
    key += (side ** codes.shape[1] - 1) // (side - 1)
    return np.bincount(key, minlength=side ** codes.shape[1])


def bench_floor(n_items: int = 1_000_000, rounds: int = 9) -> list[tuple[str, float]]:
    """Each kernel's best time over ``rounds`` rounds and its ratio to the floor's best,
    the rounds of all of them interleaved (the same machine load)."""
    matrix = int8_matrix(n_items)
    codes, k = matrix.codes, len(matrix.categories)
    kernels: dict[str, Callable[[], Any]] = {
        "NumPy floor (pattern key + bincount)": lambda: numpy_floor(codes, k),
        "fleiss_kappa": lambda: agreement.fleiss_kappa(matrix),
        "gwet_ac1 (with its SE)": lambda: agreement.gwet_ac1(matrix),
        "krippendorff_alpha (nominal)": lambda: agreement.krippendorff_alpha(matrix),
        "fleiss_kappa_generalized (with its SE)": lambda: agreement.fleiss_kappa_generalized(
            matrix
        ),
    }
    numbers = {name: calls_per_round(fn)[0] for name, fn in kernels.items()}
    best = dict.fromkeys(kernels, float("inf"))
    for _ in range(rounds):
        for name, fn in kernels.items():
            best[name] = min(best[name], round_time(fn, numbers[name]))
    floor = best["NumPy floor (pattern key + bincount)"]
    print(
        f"\nKernels on {n_items:,} items x {N_CODERS} coders of int8 codes ({k} categories), "
        f"best of {rounds} interleaved rounds; ratio = kernel / NumPy floor (goal <= 1.5):\n"
    )
    print(f"| {'kernel':<40} | {'ms':>7} | {'ratio':>6} |")
    print(f"|{'-' * 42}|{'-' * 8}:|{'-' * 7}:|")
    for name, seconds in best.items():
        print(f"| {name:<40} | {seconds * 1e3:7.2f} | {seconds / floor:6.2f} |", flush=True)
    return [(name, seconds / floor) for name, seconds in best.items()]


def bench_report(sizes: list[int], n_boot: int = 1000, rounds: int = 3) -> None:
    """The whole agreement_report (BCa bootstrap with ``n_boot`` resamples) per size."""
    print(
        f"\nagreement_report with {n_boot:,} bootstrap resamples (BCa), {N_CODERS} coders of "
        f"int8 codes, best of {rounds} (goals: < 0.5 s at 1M, < 3 s at 10M):\n"
    )
    print(f"| {'items':>11} | {'seconds':>8} | {'Fleiss 95% CI':>17} | bootstrap |")
    print(f"|{'-' * 12}:|{'-' * 9}:|{'-' * 18}:|{'-' * 11}|")
    for n_items in sizes:
        matrix = int8_matrix(n_items)
        best, report = float("inf"), None
        for _ in range(rounds):
            gc.collect()
            start = time.perf_counter()
            report = agreement.agreement_report(matrix, n_boot=n_boot)
            best = min(best, time.perf_counter() - start)
        ci = report.fleiss_ci
        how = "patterns" if n_items >= PATTERN_BOOTSTRAP_MIN_ITEMS else "items"
        print(
            f"| {n_items:>11,} | {best:8.3f} | {ci.low:.4f} to {ci.high:.4f} | {how:<9} |",
            flush=True,
        )
        del matrix, report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the 1,000,000-item size")
    parser.add_argument(
        "--floor", action="store_true", help="only the NumPy floor and the whole report"
    )
    args = parser.parse_args()
    report_sizes = [1_000, 100_000, 1_000_000] + ([] if args.quick else [10_000_000])
    if args.floor:
        bench_floor()
        bench_report(report_sizes)
        return 0
    sizes = [1_000, 100_000] if args.quick else [1_000, 100_000, 1_000_000]
    warnings.simplefilter("ignore", RuntimeWarning)
    print(f"{N_CODERS} coders, {len(CODES)} categories; ratio = ours / peer (lower is better)\n")
    print_header()
    rows = []
    for n in sizes:
        complete = labels(n, 0.0)
        rows.append(bench_fleiss(complete))
        rows.append(bench_alpha(complete, 0.0))
        rows.append(bench_alpha(labels(n, 0.1, seed=2), 0.1))
        del complete
    bench_bootstrap()
    ratios = bench_floor()
    bench_report(report_sizes)
    worst_time = max(r["ours_s"] / r["peer_s"] for r in rows)
    worst_alpha_mem = max(r["ours_mb"] / r["peer_mb"] for r in rows if "alpha" in r["case"])
    print(
        f"\nWorst time ratio {worst_time:.3f} (goal <= 0.25); worst alpha memory ratio "
        f"{worst_alpha_mem:.3f} (goal < 0.25); largest |ours - peer| "
        f"{max(r['diff'] for r in rows):.1e}; worst kernel / NumPy floor "
        f"{max(r for _, r in ratios[1:]):.2f} (goal <= 1.5)."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
