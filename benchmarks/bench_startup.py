"""Start-up of `annotate` commands as a user runs them: a new process each time.

Builds the demo project (`make demo`'s first steps: import, a sample of 120, three coders'
traum labels) in a temp folder, then runs each command several times after one warm-up and
prints CPU seconds (user + system of the child), wall seconds and how many modules the
process imported. The peers, measured in the same run: a bare interpreter, and the floor of
the CLI framework (a typer app of one command with two options showing its --help).

    .venv/bin/python benchmarks/bench_startup.py            # 9 runs each
    .venv/bin/python benchmarks/bench_startup.py --quick    # 3 runs each
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GOAL_HELP_CPU_S = 0.25  # `annotate status --help`

TYPER_FLOOR = """
from pathlib import Path
import typer
app = typer.Typer(rich_markup_mode="markdown", add_completion=False)
@app.command()
def status(fmt: str = typer.Option("table", "--format"), db: Path = Path("x.db")) -> None:
    '''What the project file holds.'''
app()
"""

# Run in the measured process: the command, then how many modules it imported (to stderr).
COUNT_MODULES = """
import json, sys
sys.argv = ["annotate", *json.loads(sys.argv[1])]
from annotate.cli import main
try:
    main()
except SystemExit:
    pass
print(len(sys.modules), file=sys.stderr)
"""


def make_project(folder: Path) -> Path:
    db = folder / "demo.db"
    for args in (
        ["import", str(REPO / "data" / "demo")],
        ["sample", "--n", "120", "--seed", "7", "--name", "main", "--stratify", "condition"],
        ["import-labels", str(REPO / "data" / "demo_labels.csv"), "--codebook", "traum"],
    ):
        cmd = [sys.executable, "-m", "annotate", *args, "--db", str(db)]
        subprocess.run(cmd, check=True, capture_output=True)
    return db


def measure(cmd: list[str], runs: int, env: dict[str, str]) -> dict[str, float]:
    """Median and min of CPU and wall seconds of ``cmd`` over ``runs`` runs after a warm-up."""
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    cpu, wall = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env)
        wall.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return {
        "cpu": statistics.median(cpu),
        "cpu_min": min(cpu),
        "wall": statistics.median(wall),
        "wall_min": min(wall),
    }


def modules(args: list[str], env: dict[str, str]) -> int:
    cmd = [sys.executable, "-c", COUNT_MODULES, json.dumps(args)]
    r = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return int(r.stderr.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 runs each instead of 9")
    runs = 3 if parser.parse_args().quick else 9
    env = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        db = make_project(Path(tmp))
        out = str(Path(tmp) / "labels.csv")
        at = ["--db", str(db)]
        cases = {
            "annotate --help": ["--help"],
            "annotate status --help": ["status", "--help"],
            "annotate status": ["status", *at],
            "annotate export --what labels": ["export", "--what", "labels", "--out", out, *at],
            "annotate agree --codebook traum": ["agree", "--codebook", "traum", *at],
        }
        rows = {
            "python -c pass": (measure([sys.executable, "-c", "pass"], runs, env), None),
            "typer app of one command, --help": (
                measure([sys.executable, "-c", TYPER_FLOOR, "--help"], runs, env),
                None,
            ),
        }
        for name, args in cases.items():
            cmd = [sys.executable, "-m", "annotate", *args]
            rows[name] = (measure(cmd, runs, env), modules(args, env))
    floor = rows["typer app of one command, --help"][0]["cpu"]
    print(f"Start-up, a new process each time: median (min) of {runs} runs after a warm-up")
    print()
    print("| command | CPU s | wall s | modules | CPU / typer floor |")
    print("|---|---:|---:|---:|---:|")
    for name, (m, count) in rows.items():
        print(
            f"| {name} | {m['cpu']:.3f} ({m['cpu_min']:.3f}) | {m['wall']:.3f} "
            f"({m['wall_min']:.3f}) | {count if count is not None else ''} | "
            f"{m['cpu'] / floor:.2f} |"
        )
    help_cpu = rows["annotate status --help"][0]["cpu"]
    verdict = "met" if help_cpu < GOAL_HELP_CPU_S else "missed"
    print(
        f"\nGoal: `annotate status --help` under {GOAL_HELP_CPU_S} CPU s: {verdict} "
        f"({help_cpu:.3f} s)."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
