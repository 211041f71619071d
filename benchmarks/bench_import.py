"""Import speed and peak memory: `annotate import` against sqlite-utils' insert_all.

Generates N platform-export actions (two participants per session, one file each), then
imports them (a) with annotate's importer into a fresh project file and (b) with the peer,
sqlite-utils (`insert_all` of the same JSON lines into one table, no parsing into actions,
no validation), each in its own subprocess so peak memory (ru_maxrss) is its own.

    .venv/bin/python benchmarks/bench_import.py            # 100k and 1M
    .venv/bin/python benchmarks/bench_import.py --quick    # 20k and 100k
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = "go left right up down past the old mill lake bridge ok got it where now".split()  # noqa: SIM905


def generate(folder: Path, n: int) -> list[Path]:
    rng = random.Random(1)
    files = [folder / "guide.jsonl", folder / "follower.jsonl"]
    handles = [f.open("w") for f in files]
    per_session = 200
    for i in range(n):
        session, k = divmod(i, per_session)
        who = rng.random() < 0.55
        kind = "send_message" if who or rng.random() < 0.6 else "map_draw_stop"
        rec = {
            "action_id": f"a{i}",
            "timestamp": f"2026-04-{1 + session % 28:02d}T10:{k // 60 % 60:02d}:{k % 60:02d}"
            f".{i % 1000:03d}Z",
            "session_id": f"s{session}",
            "participant_id": f"p{session}{'g' if who else 'f'}",
            "participant_name": "Guide" if who else "Follower",
            "role": "guide" if who else "follower",
            "condition": "visible" if session % 2 else "hidden",
            "action_type": kind,
            "action_content": " ".join(rng.choices(WORDS, k=8))
            if kind == "send_message"
            else "brush_release",
            "metadata": {"stroke_tool": "brush"}
            if kind != "send_message"
            else {"message_type": "text"},
            "session_elapsed_seconds": k * 3,
        }
        handles[0 if who else 1].write(json.dumps(rec) + "\n")
    for h in handles:
        h.close()
    return files


def run_ours(files: list[str], db: str) -> None:
    from annotate.io.importing import import_files
    from annotate.store import Store

    with Store(db) as store:
        import_files(store, [Path(f) for f in files])


def run_peer(files: list[str], db: str) -> None:
    import sqlite_utils

    database = sqlite_utils.Database(db)
    for f in files:
        with open(f) as fh:
            database["actions"].insert_all(
                (json.loads(line) for line in fh), pk="action_id", alter=True, batch_size=1000
            )


def child(which: str, db: str, files: list[str]) -> None:
    start = time.perf_counter()
    cpu = time.process_time()
    (run_ours if which == "ours" else run_peer)(files, db)
    seconds = time.perf_counter() - start
    cpu_s = time.process_time() - cpu
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "cpu_s": cpu_s, "peak_mb": peak_mb}))


def measure(which: str, files: list[Path], tmp: Path) -> dict[str, float]:
    db = tmp / f"{which}-{time.monotonic_ns()}.db"
    out = subprocess.run(
        [sys.executable, __file__, "--child", which, str(db), *map(str, files)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", nargs="+")
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1], args.child[2:])
        return
    sizes = [20_000, 100_000] if args.quick else [100_000, 1_000_000]
    print(
        f"{'actions':>10} {'ours s':>8} {'peer s':>8} {'time ratio':>10} {'ours cpu':>8} "
        f"{'peer cpu':>8} {'cpu ratio':>9} {'ours MB':>8} {'peer MB':>8} {'mem ratio':>9}"
    )
    for n in sizes:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            files = generate(tmp, n)
            ours = measure("ours", files, tmp)
            peer = measure("peer", files, tmp)
        print(
            f"{n:>10,} {ours['seconds']:>8.2f} {peer['seconds']:>8.2f} "
            f"{ours['seconds'] / peer['seconds']:>10.2f} {ours['cpu_s']:>8.2f} "
            f"{peer['cpu_s']:>8.2f} {ours['cpu_s'] / peer['cpu_s']:>9.2f} {ours['peak_mb']:>8.0f} "
            f"{peer['peak_mb']:>8.0f} {ours['peak_mb'] / peer['peak_mb']:>9.2f}",
            flush=True,
        )
    print(
        "peer: sqlite-utils insert_all of the raw JSON lines (no parsing, no validation); "
        "ratios are ours / peer; cpu = user + system seconds of the process"
    )


if __name__ == "__main__":
    main()
