"""`adjudicate --majority-only` beside the prototype that decided its schema (issue 17).

The product now keeps gold in tables of its own (migration 20) and decides the majority in
one pass (annotate/reliability/majority_pass.py); this prototype stays as the floor of that
design, one statement and nothing else. What it measured before migration 20:
`adjudicate --majority-only` was over its goal (< 1 s at 100k items x 3 coders, < 6 s at
1M) because each gold row entered `labels` and
two of its indexes (`UNIQUE (action_id, ...)` and `labels_answered`) that interleave it with
the coders' entries: the `sqlite3` shell alone takes longer than the goal to write the same
rows. This runs, on fresh copies of the same file, the command as a user runs it and a
prototype of the other design in a process of its own: the majority decided and written by
one SQL statement (each item's votes packed into one integer in SQLite's ordered pass over
`labels_answered`, joined with a table of the few hundred vote patterns that have a majority)
into a narrow `WITHOUT ROWID` table keyed by (codebook, action, question), with the answer and
provenance by reference to a table of the distinct kinds of gold. Then it checks that both
chose the same gold for the same items, and prints both.

The prototype leaves out what the command also does: flagged items, answers with codes or
an "Other" text and stale gold go to the command's own path (a few percent of items); the
revision of each gold row is not computed.

    .venv/bin/python benchmarks/bench_gold_table.py          # 100k items x 3 coders (--quick too)
    .venv/bin/python benchmarks/bench_gold_table.py --1m     # and 1M items x 3 coders
"""

from __future__ import annotations

import argparse
import itertools
import json
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import (  # the benchmark's folder is not a package
    AGREE_1M,
    CODERS,
    FULL,
    SCALE_DIR,
    Bench,
    annotate,
    measure,
)

CODEBOOK = "traum"
QUESTION = "act"
PLAIN = ("Acknowledge", "Cancel", "Continue", "Initiate", "Repair", "ReqAck", "ReqRepair")
"""The values a vote pattern numbers; any other ("other", which carries a text) is left out."""


def prototype(db: Path) -> None:
    """Decide and write the majority gold of the sample's items in one statement."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA cache_size = -65536")
    conn.executescript(
        """
        CREATE TABLE gold_kinds (id INTEGER PRIMARY KEY, question TEXT NOT NULL,
            value TEXT, meta TEXT NOT NULL);
        CREATE TABLE gold_labels (codebook TEXT NOT NULL, action_id TEXT NOT NULL,
            question TEXT NOT NULL, kind INTEGER NOT NULL REFERENCES gold_kinds(id),
            made_at TEXT NOT NULL, PRIMARY KEY (codebook, action_id, question)) WITHOUT ROWID;
        CREATE TEMP TABLE pattern_kinds (pattern INTEGER PRIMARY KEY, kind INTEGER NOT NULL);
        """
    )
    bits = (len(PLAIN) + 1).bit_length()
    kinds: dict[tuple[str, str], int] = {}
    patterns = []
    for votes in itertools.product(range(len(PLAIN) + 2), repeat=len(CODERS)):  # 0: none
        given = [v for v in votes if v]
        best = max(set(given), key=given.count) if given else 0
        if not 0 < best <= len(PLAIN) or given.count(best) * 2 <= len(CODERS):
            continue
        said = {
            c: PLAIN[v - 1] if 0 < v <= len(PLAIN) else None
            for c, v in zip(CODERS, votes, strict=True)
        }
        meta = json.dumps({"method": "majority", "coders": CODERS, "votes": said})
        kind = kinds.setdefault((PLAIN[best - 1], meta), len(kinds) + 1)
        patterns.append((sum(v << (i * bits) for i, v in enumerate(votes)), kind))
    value = " ".join(f"WHEN '{v}' THEN {i + 1}" for i, v in enumerate(PLAIN))
    coder = " ".join(f"WHEN '{c}' THEN {i}" for i, c in enumerate(CODERS))
    coders = ", ".join(f"'{c}'" for c in CODERS)
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany("INSERT INTO temp.pattern_kinds VALUES (?, ?)", patterns)
    conn.executemany(
        "INSERT INTO gold_kinds VALUES (?, ?, ?, ?)",
        [(k, QUESTION, v, meta) for (v, meta), k in kinds.items()],
    )
    written = conn.execute(
        f"""
        INSERT INTO gold_labels
        SELECT '{CODEBOOK}', v.action_id, v.question, k.kind, strftime('%Y-%m-%dT%H:%M:%fZ')
        FROM (SELECT l.action_id, l.question,
                     sum((CASE l.value {value} ELSE {len(PLAIN) + 1} END)
                         << ((CASE l.coder {coder} END) * {bits})) AS pattern,
                     max(l.codes IS NOT NULL OR l.other_text IS NOT NULL) AS rich
              FROM coder_labels l INDEXED BY labels_answered
              WHERE l.codebook = '{CODEBOOK}' AND l.coder IN ({coders})
                AND (l.value IS NOT NULL OR l.codes IS NOT NULL)
              GROUP BY l.action_id, l.question) v
        JOIN temp.pattern_kinds k ON k.pattern = v.pattern
        WHERE NOT v.rich
          AND v.action_id IN (SELECT action_id FROM sample_items WHERE sample = 'main')
          AND v.action_id NOT IN (SELECT action_id FROM coder_labels INDEXED BY labels_progress
                                  WHERE codebook = '{CODEBOOK}' AND coder IN ({coders})
                                    AND flagged)
        """
    ).rowcount
    conn.execute("COMMIT")
    conn.close()
    print(written)


def same_gold(command_db: Path, prototype_db: Path) -> tuple[int, int, int]:
    """(items both gave the same gold, items only the command gave gold, items where the
    prototype gave gold the command did not give or gave otherwise)."""
    conn = sqlite3.connect(command_db)
    conn.execute("ATTACH ? AS p", (str(prototype_db),))
    made = "SELECT action_id, value FROM labels WHERE coder = 'gold' AND codebook = ?"
    proto = "SELECT g.action_id, k.value FROM p.gold_labels g JOIN p.gold_kinds k ON k.id = g.kind"
    both = conn.execute(f"SELECT count(*) FROM ({made} INTERSECT {proto})", (CODEBOOK,))
    only_made = conn.execute(f"SELECT count(*) FROM ({made} EXCEPT {proto})", (CODEBOOK,))
    only_proto = conn.execute(f"SELECT count(*) FROM ({proto} EXCEPT {made})", (CODEBOOK,))
    counts = (both.fetchone()[0], only_made.fetchone()[0], only_proto.fetchone()[0])
    conn.close()
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--1m", dest="million", action="store_true", help="also 1M items")
    parser.add_argument("--quick", action="store_true", help="100k items only (the default)")
    parser.add_argument("--prototype", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.prototype:
        prototype(Path(args.prototype))
        return 0
    SCALE_DIR.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-gold-", dir=SCALE_DIR) as tmp:
        b = Bench(FULL, Path(tmp))
        for shape, goal in [(FULL, 1.0), *([(AGREE_1M, 6.0)] if args.million else [])]:
            items = f"{shape.n_sample // 1000}k items"
            print(f"{items} ...", flush=True)
            base = b.fixture("base", shape=shape)
            command_db, prototype_db = b.copy(base, "command"), b.copy(base, "prototype")
            argv = ["adjudicate", "--codebook", CODEBOOK, "--majority-only"]
            command = measure(annotate(*argv, "--db", str(command_db)))
            proto = measure([sys.executable, __file__, "--prototype", str(prototype_db)])
            if "error" in command or "error" in proto:
                print(command.get("error", ""), proto.get("error", ""), file=sys.stderr)
                return 1
            started = time.perf_counter()
            both, only_command, only_prototype = same_gold(command_db, prototype_db)
            print(f"  both gold compared in {time.perf_counter() - started:.1f} s", flush=True)
            rows.append((items, goal, command, proto, both, only_command, only_prototype))
            for path in (command_db, prototype_db):
                path.unlink()
    print()
    print("| items x 3 coders | goal | adjudicate --majority-only | prototype: gold table, one "
          "statement | ratio | same gold | command only | prototype only |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for items, goal, command, proto, both, only_command, only_prototype in rows:
        print(
            f"| {items} | < {goal:g} s, < 300 MB "
            f"| {command['seconds']:.2f} s / {command['peak_mb']:.0f} MB "
            f"| {proto['seconds']:.2f} s / {proto['peak_mb']:.0f} MB "
            f"| x{proto['seconds'] / command['seconds']:.2f} | {both:,} | {only_command:,} "
            f"| {only_prototype:,} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
