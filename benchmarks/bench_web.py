"""Coding app latency through a browser: `annotate code --web` in headless Chromium.

The same project as bench_tui.py (3,000 synthetic Map Task actions, a sample of 300).
`annotate code --web` serves the app with textual-serve; headless Chromium (Playwright,
the system Chromium) opens the page in a tab sized for about 80x24 cells, and keys are
pressed in the tab. A keypress is timed in the page's own clock, from the key going down
(a keydown listener) to the arrival of the WebSocket frame that draws the next item's
title ("item #N"; xterm.js painting it is not included):
the key travels through xterm.js, the WebSocket, textual-serve and the app's pipes, and the
new screen comes back the same way. Kinds: a Traum answer (one key stores and moves on),
"→" (next item).

    .venv/bin/python benchmarks/bench_web.py           # 200 keypresses per kind
    .venv/bin/python benchmarks/bench_web.py --quick   # 60

Needs Chromium (`apt-get install -y chromium`) and Playwright (the dev extra); without
them it says so and exits 0, so that run_all.py goes on.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_tui import N_ACTIONS, SAMPLE, build_project, p95  # noqa: E402
from tests.web_browser import find_chromium, launch, open_app, press_and_wait, serve  # noqa: E402

VIEWPORT = (722, 440)  # about 80x24 cells in textual-serve's default font


def keypresses(db: Path, kind: str, n: int, chromium: str) -> tuple[list[float], str]:
    """Milliseconds from each key to the next item's title, and the terminal's size."""
    from playwright.sync_api import sync_playwright

    times: list[float] = []
    sizes: list[str] = []
    with serve(db, f"web_{kind}", "--new-coder") as url, sync_playwright() as pw:
        browser = launch(pw, chromium)
        try:
            width, height = VIEWPORT
            page = open_app(browser, url, width=width, height=height, on_socket=sizes.append)
            page.wait_for_timeout(300)  # let the first screen settle
            for i in range(n):
                key = "ArrowRight" if kind == "next" else "1234567"[i % 7]
                times.append(press_and_wait(page, key, i + 2))
            page.close()
        finally:
            browser.close()
    return times, sizes[0] if sizes else "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n_keys = 60 if args.quick else 200
    chromium = find_chromium()
    if chromium is None:
        print("skipped: Chromium not found (apt-get install -y chromium)")
        return 0
    try:
        import playwright  # noqa: F401
    except ImportError:
        print("skipped: Playwright is not installed (pip install -e '.[dev]')")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        db = build_project(Path(tmp))
        rows = []
        size = "?"
        for kind, label in [("traum", "traum answer -> next item"), ("next", "→ next item")]:
            ms, size = keypresses(db, kind, n_keys, chromium)
            rows.append((label, statistics.median(ms), p95(ms), max(ms)))
        print(f"{N_ACTIONS:,} actions, sample of {SAMPLE}; headless Chromium, terminal {size};"
              f" {os.cpu_count()} CPUs")  # fmt: skip
        print(f"\n| keypress in the browser ({n_keys} each) | median ms | p95 ms | max ms |")
        print("|---|---:|---:|---:|")
        for label, med, p, mx in rows:
            print(f"| {label} | {med:.1f} | {p:.1f} | {mx:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
