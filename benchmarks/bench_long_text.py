"""The coding screen's first render when the item is one huge message, in a real terminal.

Builds three projects of one session of 10 actions whose 10th is the item to code:

- normal: every message a few words (the reference);
- 3 MB: the item is 3,000,000 characters without a space;
- 100 MB: the item is 100,000,000 characters (words of 9 letters and a space).

Each is opened with `annotate code` in an 80x24 pseudo-terminal (the harness of
bench_tui.py) and timed from launching the process to the first paint of the item: its
title for the reference, the note "truncated for display" for the long ones (the screen
shows the first 10,000 characters and says so; the stored text stays whole). The peer is
the reference project in the same harness: a long message should cost no more than
loading its bytes from the file.

It also times the word wrap of the 3 MB text at 57 columns in-process, with `wrap_words`
as it is and as it was (a long word cut by slicing its head off again and again, which
is quadratic), and the display preparation (cut, then escape control characters).

    .venv/bin/python benchmarks/bench_long_text.py           # 3 start-ups each
    .venv/bin/python benchmarks/bench_long_text.py --quick   # 1 start-up each
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_tui import code_argv, startup  # noqa: E402

WIDTH = 57  # the text column of an 80-column screen
CASES = {
    "normal": None,
    "3 MB unbroken": "x" * 3_000_000,
    "100 MB": ("abcdefghi " * 10_000_000),
}


def build_project(folder: Path, name: str, item_text: str | None) -> Path:
    from annotate.models import Action
    from annotate.store import Store

    start = datetime(2026, 4, 1, 10, 0, tzinfo=UTC)
    actions = [
        Action(
            id=f"a{i:02d}",
            session="s1",
            seq=i,
            action_type="message",
            content=item_text if i == 9 and item_text is not None else f"go left, mill {i}",
            participant="p1g" if i % 2 else "p1f",
            role="guide" if i % 2 else "follower",
            timestamp=(start + timedelta(seconds=7 * i)).isoformat().replace("+00:00", "Z"),
            condition="visible",
        )
        for i in range(10)
    ]
    db = folder / f"{name.split()[0]}.db"
    with Store(db) as store:
        store.actions.add_actions(actions, path=name, sha256="-", fmt="jsonl")
        store.samples.create_sample("main", ["a09"], seed=0)
        stored = store.db.query("SELECT length(content) FROM actions WHERE id = 'a09'")[0][0]
        assert stored == len(actions[9].content or "")
    return db


def old_wrap_words(text: str, width: int) -> list[str]:
    """wrap_words before the fix: a long word is cut by ``word = word[width:]`` (quadratic)."""
    lines: list[str] = []
    for paragraph in text.splitlines() or [""]:
        line = ""
        for word in paragraph.split(" "):
            while len(word) > width:
                if line:
                    lines.append(line)
                    line = ""
                lines.append(word[:width])
                word = word[width:]
            if not line:
                line = word
            elif len(line) + 1 + len(word) <= width:
                line += " " + word
            else:
                lines.append(line)
                line = word
        lines.append(line)
    return lines


def timed(fn, *args) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t, out


def main() -> None:
    from annotate.render.terminal import for_display
    from annotate.tui.widgets.context import wrap_words

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n = 1 if args.quick else 3
    text = CASES["3 MB unbroken"]
    assert text is not None
    new_s, new_lines = timed(wrap_words, text, WIDTH)
    old_s, old_lines = timed(old_wrap_words, text, WIDTH)
    assert new_lines == old_lines
    prep_s, _ = timed(for_display, CASES["100 MB"])
    print(f"{os.cpu_count()} CPUs; 80x24 pty")
    print(f"\n| wrap_words, 3 MB without a space, {WIDTH} columns | seconds |")
    print("|---|---:|")
    print(f"| as it was (slicing) | {old_s:.3f} |")
    print(f"| as it is (by index) | {new_s:.3f} |")
    print(f"| for_display (cut + escape) of 100 MB | {prep_s:.6f} |")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, item_text in CASES.items():
            db = build_project(folder, name, item_text)
            ready = re.compile(rb"item #1(?!\d)" if item_text is None else rb"truncated")
            times = [startup(code_argv(db, "traum", f"c{k}"), folder, ready) for k in range(n)]
            rows.append((name, db.stat().st_size, statistics.median(times), max(times)))
            db.unlink()
    print(f"\n| item ({n} start-up{'s' if n > 1 else ''}) | file MB | first render s (median) "
          "| max s |")  # fmt: skip
    print("|---|---:|---:|---:|")
    for name, size, med, mx in rows:
        print(f"| {name} | {size / 1e6:.1f} | {med:.2f} | {mx:.2f} |")
    normal = rows[0][2]
    worst = max(r[2] for r in rows[1:])
    print(
        f"\ngoal: a long item's first render within 1 s of the normal one ({normal:.2f} s): "
        + ("met" if worst - normal < 1.0 else "NOT met")
    )


if __name__ == "__main__":
    main()
