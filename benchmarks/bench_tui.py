"""Coding app latency, measured the way a coder sees it: in a real terminal (a pty).

Builds a project of 3,000 synthetic Map Task actions (30 sessions of 100) and a sample of
300 drawn from them, starts `annotate code` in an 80x24 pseudo-terminal and reads what it
writes to the terminal:

- start-up: from launching the process to the first item's title on the terminal
  (interpreter, imports, opening the file, loading the session, first paint);
- keypress: from writing a key to the pty until the next item's title ("item #N") has
  been written back, for a Traum answer (one key stores and moves on), for "→" (next
  item) and for the last answer of a mental-model item (4th key).

The peer is Textual's own floor, measured in the same harness: a minimal app whose one
Static shows the number of keys pressed so far (start-up to first paint; keypress to the
new number on the terminal). Targets: keypress p95 < 50 ms, start-up < 1.5 s.

    .venv/bin/python benchmarks/bench_tui.py           # 200 keypresses per kind, 5 start-ups
    .venv/bin/python benchmarks/bench_tui.py --quick   # 60 and 3
"""

from __future__ import annotations

import argparse
import fcntl
import os
import random
import re
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

N_ACTIONS = 3_000
SAMPLE = 300
WORDS = "go left right up down past the old mill lake bridge ok got it where now".split()  # noqa: SIM905

FLOOR_APP = r"""
from textual.app import App
from textual.widgets import Static
class Floor(App):
    n = 0
    def compose(self):
        yield Static("count 0 .", id="n")
    def on_key(self, event):
        self.n += 1
        self.query_one(Static).update(f"count {self.n} .")
Floor().run()
"""


def build_project(folder: Path) -> Path:
    from annotate.coding.sampling import draw_sample
    from annotate.models import Action
    from annotate.store import Store

    rng = random.Random(3)
    start = datetime(2026, 4, 1, 10, 0, tzinfo=UTC)
    actions = []
    for i in range(N_ACTIONS):
        session, seq = divmod(i, 100)
        guide = rng.random() < 0.55
        kind = "message" if guide or rng.random() < 0.6 else rng.choice(["draw", "draw", "erase"])
        t = start + timedelta(days=session, seconds=seq * 7 + rng.random() * 5)
        actions.append(
            Action(
                id=f"a{i:05d}",
                session=f"s{session:02d}",
                seq=seq,
                action_type=kind,
                content=" ".join(rng.choices(WORDS, k=rng.randint(2, 14)))
                if kind == "message"
                else None,
                participant=f"p{session}{'g' if guide else 'f'}",
                role="guide" if guide else "follower",
                timestamp=t.isoformat().replace("+00:00", "Z"),
                condition="visible" if session % 2 else "hidden",
            )
        )
    db = folder / "bench.db"
    with Store(db) as store:
        store.actions.add_actions(actions, path="synthetic", sha256="-", fmt="jsonl")
        ids = draw_sample(store.actions.action_rows(), SAMPLE, 7, [])
        store.samples.create_sample("main", ids, seed=7)
    return db


class Pty:
    def __init__(self, argv: list[str], cwd: Path) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "80", "LINES": "24"}
        env.pop("NO_COLOR", None)
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env,
            start_new_session=True, close_fds=True,
        )  # fmt: skip
        os.close(slave)
        self.fd = master
        self.buf = b""

    def read_until(self, pattern: re.Pattern[bytes], timeout: float = 30) -> float:
        """Read output until ``pattern`` appears in it; return the time it did."""
        deadline = time.perf_counter() + timeout
        while True:
            m = pattern.search(self.buf)
            if m:
                self.buf = self.buf[m.end() :]
                return time.perf_counter()
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"{pattern.pattern!r} not seen; last: {self.buf[-300:]!r}")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                self.buf += os.read(self.fd, 1 << 16)

    def drain(self, quiet: float = 0.15) -> None:
        """Read until the app has been silent for ``quiet`` seconds."""
        while select.select([self.fd], [], [], quiet)[0]:
            self.buf += os.read(self.fd, 1 << 16)
        self.buf = b""

    def press(self, key: bytes) -> float:
        self.buf = b""
        t = time.perf_counter()
        os.write(self.fd, key)
        return t

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        os.close(self.fd)


def code_argv(db: Path, codebook: str, coder: str) -> list[str]:
    return [sys.executable, "-m", "annotate", "code", "--codebook", codebook,
            "--coder", coder, "--new-coder", "--db", str(db)]  # fmt: skip


def item(n: int) -> re.Pattern[bytes]:
    return re.compile(rb"item #" + str(n).encode() + rb"(?!\d)")


def startup(argv: list[str], cwd: Path, ready: re.Pattern[bytes]) -> float:
    term = Pty(argv, cwd)
    try:
        return term.read_until(ready) - term.started
    finally:
        term.close()


def keypresses(db: Path, cwd: Path, kind: str, n: int) -> list[float]:
    """Milliseconds from each key to the next item's title on the terminal."""
    codebook = "mental_model" if kind == "mental_model" else "traum"
    term = Pty(code_argv(db, codebook, f"bench_{kind}"), cwd)
    times: list[float] = []
    try:
        term.read_until(item(1))
        term.drain()
        for i in range(n):
            if kind == "mental_model":  # three answers, then time the fourth
                for key in b"123":
                    os.write(term.fd, bytes([key]))
                    time.sleep(0.03)
                term.drain(0.1)
                key = b"y"
            else:
                key = b"\x1b[C" if kind == "next" else b"1234567"[i % 7 : i % 7 + 1]
            t = term.press(key)
            times.append((term.read_until(item(i + 2)) - t) * 1000)
            term.drain(0.05)
    finally:
        term.close()
    return times


def floor_keypresses(cwd: Path, n: int) -> list[float]:
    term = Pty([sys.executable, "-c", FLOOR_APP], cwd)
    times = []
    try:
        term.read_until(re.compile(rb"count 0 "))
        term.drain()
        for i in range(n):
            t = term.press(b"x")
            times.append((term.read_until(re.compile(rb"count %d " % (i + 1))) - t) * 1000)
            term.drain(0.05)
    finally:
        term.close()
    return times


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[18] if len(values) >= 20 else max(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n_keys, n_starts = (60, 3) if args.quick else (200, 5)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        db = build_project(folder)
        rows = []
        ours = [
            startup(code_argv(db, "traum", f"start{i}"), folder, item(1)) for i in range(n_starts)
        ]
        floor = [startup([sys.executable, "-c", FLOOR_APP], folder, re.compile(rb"count 0 "))
                 for _ in range(n_starts)]  # fmt: skip
        print(f"{N_ACTIONS:,} actions, sample of {SAMPLE}; 80x24 pty; {os.cpu_count()} CPUs")
        print(
            f"start-up to first item: median {statistics.median(ours):.2f} s "
            f"(max {max(ours):.2f}); textual floor {statistics.median(floor):.2f} s"
        )
        floor_keys = floor_keypresses(folder, n_keys)
        for kind, label in [
            ("traum", "traum answer -> next item"),
            ("next", "→ next item"),
            ("mental_model", "mental_model 4th answer -> next item"),
        ]:
            ms = keypresses(db, folder, kind, n_keys)
            rows.append((label, statistics.median(ms), p95(ms), max(ms)))
        rows.append(("textual floor (one Static)", statistics.median(floor_keys), p95(floor_keys),
                     max(floor_keys)))  # fmt: skip
        print(f"\n| keypress ({n_keys} each) | median ms | p95 ms | max ms |")
        print("|---|---:|---:|---:|")
        for label, med, p, mx in rows:
            print(f"| {label} | {med:.1f} | {p:.1f} | {mx:.1f} |")
        worst = max(r[2] for r in rows[:-1])
        ok = worst < 50 and statistics.median(ours) < 1.5
        print(f"\ntargets (p95 < 50 ms, start-up < 1.5 s): {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
