"""The whole `annotate agree` report for 180 items x 3 coders: SQLite file to printed table.

Builds a project file from the demo data (sample of 180 actions, seed 7; coders ana, ben and
caro), then times `annotate agree --db FILE` as a user runs it: a fresh process each time,
start-up included (subprocess wall time, median of several runs after one warm-up). For the
breakdown it also times a bare interpreter, importing the CLI, and the library call plus
rendering inside one process.

    .venv/bin/python benchmarks/bench_agree_cli.py            # 9 runs each
    .venv/bin/python benchmarks/bench_agree_cli.py --quick    # 5 runs each
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GOAL_S = 1.0


def annotate_cmd() -> list[str]:
    script = Path(sys.executable).with_name("annotate")
    return [str(script)] if script.exists() else [sys.executable, "-m", "annotate"]


def make_project(folder: Path) -> Path:
    db = folder / "bench.db"
    for args in (
        ["import", str(REPO / "data" / "demo")],
        ["sample", "--n", "180", "--seed", "7", "--name", "main"],
        ["import-labels", str(REPO / "data" / "demo_labels.csv"), "--codebook", "traum"],
    ):
        subprocess.run([*annotate_cmd(), *args, "--db", str(db)], check=True, capture_output=True)
    return db


def wall(cmd: list[str], runs: int, env: dict[str, str]) -> tuple[float, list[float]]:
    """Median wall time of ``cmd`` over ``runs`` runs (after one warm-up run)."""
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def in_process(db: Path, runs: int) -> tuple[float, float]:
    """Median seconds of the library call (read, statistics, store the run) and of rendering."""
    from rich.console import Console

    import annotate.render.agree.layout as layout
    import annotate.render.agree.table as command
    from annotate.reliability.agreement_run import agree
    from annotate.store import Store

    command.console = layout.console = Console(file=io.StringIO(), width=80)
    calls, renders = [], []
    for _ in range(runs + 1):
        with Store(db, create=False) as store:
            start = time.perf_counter()
            result = agree(store)
            calls.append(time.perf_counter() - start)
        start = time.perf_counter()
        command.render_table(result.to_dict())
        renders.append(time.perf_counter() - start)
    return statistics.median(calls[1:]), statistics.median(renders[1:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 runs instead of 9")
    parser.add_argument("--runs", type=int, default=None)
    args = parser.parse_args()
    runs = args.runs or (5 if args.quick else 9)
    env = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1"}
    env.pop("ANNOTATE_DB", None)
    with tempfile.TemporaryDirectory() as tmp:
        db = make_project(Path(tmp))
        agree = [*annotate_cmd(), "agree", "--db", str(db)]
        out = subprocess.run(agree, check=True, capture_output=True, text=True, env=env).stdout
        assert "traum act (single choice): 180 items, 3 coders" in out, out
        rows = [
            ("python -c pass", [sys.executable, "-c", "pass"]),
            ("python -c 'import pandas'", [sys.executable, "-c", "import pandas"]),
            ("python -c 'import sqlite_utils'", [sys.executable, "-c", "import sqlite_utils"]),
            ("python -c 'import annotate.cli'", [sys.executable, "-c", "import annotate.cli"]),
            ("annotate --help", [*annotate_cmd(), "--help"]),
            ("annotate agree (table)", agree),
            ("annotate agree --format json", [*agree, "--format", "json"]),
            ("annotate agree --disagreements", [*agree, "--disagreements"]),
        ]
        print(f"180 items x 3 coders (540 labels), {runs} runs each, median wall time:\n")
        print("| command | median s | min s | max s |")
        print("|---|---:|---:|---:|")
        results = {}
        for name, cmd in rows:
            median, times = wall(cmd, runs, env)
            results[name] = median
            print(f"| {name} | {median:.3f} | {min(times):.3f} | {max(times):.3f} |")
        call, render = in_process(db, runs)
        print(
            f"\nIn one process: the library call (read labels, statistics with a 1,000-resample "
            f"bootstrap, store the run) {1000 * call:.1f} ms; rendering the table "
            f"{1000 * render:.1f} ms."
        )
        total = results["annotate agree (table)"]
        verdict = "met" if total < GOAL_S else "NOT met"
        print(f"Goal: the whole report under {GOAL_S:.0f} s including start-up: {verdict} "
              f"({total:.3f} s).")  # fmt: skip
    return 0 if total < GOAL_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
