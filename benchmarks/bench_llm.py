"""LLM coder throughput against the ideal, a fully cached re-run, and peak memory.

A real chat-completions server (`tests/chat_server.py`, in its own process) answers every
request after a fixed latency (200 ms). `annotate`'s LLM coder labels N actions through the
same code path as `annotate llm-label` (prompt with 8 shots, the SQLite request cache,
per-item results and labels written to the project file) at concurrency 1, 8 and 32.
The peer is the ideal: concurrency / latency items per second (goal: at least 0.9 of it).
Then the same N items are labelled again by a new run: every reply comes from the cache
(goal: under 2 s for 2,000). Each case runs in its own subprocess, so its peak RSS
(`ru_maxrss`) is its own.

    .venv/bin/python benchmarks/bench_llm.py           # 2,000 items (100 at concurrency 1)
    .venv/bin/python benchmarks/bench_llm.py --quick   # 400 items (40 at concurrency 1)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

LATENCY = 0.2
WORDS = "go left right up down past the old mill lake bridge ok got it where now".split()  # noqa: SIM905


def build_project(db: Path, n: int) -> None:
    """N + 40 message actions in sessions of 200, 40 of them with gold labels, a split."""
    import random

    from annotate.codebook import Answer, find_codebook
    from annotate.models import Action
    from annotate.store import LabelWrite, Store
    from llm_coder.workflow import make_split

    rng = random.Random(1)
    loaded = find_codebook("hcrc_moves")
    codes = [o.code for o in loaded.codebook.questions[0].options]
    total = n + 40
    actions = [
        Action(
            id=f"a{i:06d}",
            session=f"s{i // 200}",
            seq=i % 200,
            action_type="message",
            content=" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 9))) + f" #{i}",
            role="guide" if i % 2 else "follower",
        )
        for i in range(total)
    ]
    with Store(db) as store:
        store.add_actions(actions, path="bench", sha256="bench", fmt="bench")
        store.register_codebook(loaded)
        gold = [
            LabelWrite(a.id, "move", "gold", Answer(codes[k % len(codes)]), "bench")
            for k, a in enumerate(actions[:40])
        ]
        store.save_answers(loaded.codebook, gold)
        make_split(store, loaded, shots=8, seed=7, gold="gold")


def run_case(db: Path, base_url: str, model: str, n: int, concurrency: int) -> dict:
    """Label the first N non-split actions; return timing and the run's counts."""
    os.environ["OPENAI_API_KEY"] = "bench-key"
    from annotate.codebook import find_codebook
    from annotate.store import Store
    from llm_coder.client import config_from_env
    from llm_coder.workflow import JobOptions, LabelJob

    loaded = find_codebook("hcrc_moves")
    config = config_from_env(model, base_url)
    import_started = time.perf_counter()
    import openai  # noqa: F401  -- loaded once per process (timed separately, not per item)

    import_s = time.perf_counter() - import_started
    with Store(db) as store:
        options = JobOptions(model=model, split="hcrc_moves", concurrency=concurrency)
        job = LabelJob(store, loaded, options, config)
        ids = job.rest_ids()[:n]
        started = time.perf_counter()
        result = job.run_phase("label", ids)
        seconds = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "items": len(ids),
        "seconds": seconds,
        "sent": result.sent,
        "cached": result.cached,
        "valid": result.valid,
        "peak_mb": peak_mb,
        "sdk_import_s": import_s,
    }


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.chat_server", "--port", "0", "--latency", str(latency)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline() if proc.stdout else ""
    if not line.startswith("listening on "):
        proc.kill()
        raise SystemExit(f"the test server did not start: {line!r}")
    return proc, line.split()[-1]


def case_in_subprocess(db: Path, base_url: str, model: str, n: int, concurrency: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--case", str(db), base_url, model, str(n), str(concurrency)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="400 items instead of 2,000")
    parser.add_argument("--case", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        db, base_url, model, n, concurrency = args.case
        print(json.dumps(run_case(Path(db), base_url, model, int(n), int(concurrency))))
        return 0

    n = 400 if args.quick else 2000
    n_one = 40 if args.quick else 100
    server, base_url = start_server(LATENCY)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "bench.db"
            build_project(db, n)
            for concurrency, items in ((1, n_one), (8, n), (32, n)):
                model = f"bench-c{concurrency}"  # the model is part of the request hash
                r = case_in_subprocess(db, base_url, model, items, concurrency)
                ideal = concurrency / LATENCY
                rate = r["items"] / r["seconds"]
                rows.append(
                    (f"concurrency {concurrency}", r, f"{rate:.1f}", f"{ideal:.0f}", rate / ideal)
                )
            cached = case_in_subprocess(db, base_url, f"bench-c{32}", n, 32)
            rows.append(("cached re-run (c32)", cached, "", "", None))
    finally:
        server.terminate()
        server.wait(timeout=10)

    print(f"LLM coder vs the ideal (server latency {LATENCY * 1000:.0f} ms, 8 shots)")
    print("| run | items | sent | cached | seconds | items/s | ideal/s | ratio | peak MB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, r, rate, ideal, ratio in rows:
        print(
            f"| {name} | {r['items']:,} | {r['sent']:,} | {r['cached']:,} | {r['seconds']:.2f} "
            f"| {rate} | {ideal} | {'' if ratio is None else f'{ratio:.3f}'} "
            f"| {r['peak_mb']:.0f} |"
        )
    ok = all(ratio >= 0.9 for *_, ratio in rows if ratio is not None)
    cache_ok = rows[-1][1]["seconds"] < 2.0 * n / 2000 and rows[-1][1]["sent"] == 0
    limit = 2.0 * n / 2000
    print(f"goal >= 0.9 of the ideal: {'met' if ok else 'NOT met'}")
    print(f"goal cached re-run < {limit:.1f} s, 0 sent: {'met' if cache_ok else 'NOT met'}")
    sdk = rows[0][1]["sdk_import_s"]
    print(f"(not timed: the openai SDK import, {sdk:.2f} s once per process)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
