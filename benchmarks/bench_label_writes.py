"""The label-write paths at corpus scale (issue 32: one label-write rule in the store).

On a working copy of the cached 1M-action file (``bench_scale.py``: a sample of 100,000
items coded by three coders), each as a user runs it, in a process of its own:

- ``import-labels`` of a CSV of 300,000 labels by three coders the file does not have (every
  row new: the coders' upsert, each revision hashed in Python);
- the same file again (every row unchanged: the upsert's conflict path, nothing written);
- ``merge`` of the file that import made into a copy of the file before it (300,000 labels
  copied in SQL, their revisions hashed).

``adjudicate --majority-only`` (the gold write) is ``bench_scale.py --only adjudicate``.

    .venv/bin/python benchmarks/bench_label_writes.py            # scale-1m (100k items)
    .venv/bin/python benchmarks/bench_label_writes.py --quick    # scale-100k (10k items)
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import sqlite3
import sys
import tempfile
from contextlib import closing
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import bench_scale as bs  # the cached files, the measuring wrapper


def _labels_csv(db: Path, out: Path) -> int:
    """The coders' answered labels of the file as a CSV for `import-labels`, under new coder
    names (``ana`` -> ``ana2``)."""
    with closing(sqlite3.connect(db)) as conn, out.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["action_id", "coder", "question", "value", "other_text"])
        n = 0
        for row in conn.execute(
            "SELECT action_id, coder || '2', question, value, other_text FROM labels "
            "WHERE coder IN ('ana', 'ben', 'caro') AND value IS NOT NULL ORDER BY id"
        ):
            w.writerow(row)
            n += 1
    return n


def _fresh(source: Path, dest: Path) -> Path:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{dest}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(source, dest)
    return dest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the 100k-action file")
    args = parser.parse_args()
    shape = bs.QUICK if args.quick else bs.FULL
    rows: list[tuple[str, dict[str, float]]] = []
    bs.SCALE_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-writes-", dir=bs.SCALE_DIR) as tmp:
        work = Path(tmp)
        base = _fresh(bs.cached_project(shape), work / "base.db")
        bs.run(bs.annotate("status", "--db", str(base)))  # this branch's migrations
        labels = work / "labels.csv"
        n = _labels_csv(base, labels)
        imported = _fresh(base, work / "imported.db")
        cmd = ["import-labels", str(labels), "--codebook", "traum", "--db", str(imported)]
        rows.append((f"import-labels, {n:,} new labels", bs.measure(bs.annotate(*cmd))))
        rows.append((f"import-labels, {n:,} unchanged", bs.measure(bs.annotate(*cmd))))
        ours = _fresh(base, work / "ours.db")
        merge = bs.annotate("merge", str(imported), "--db", str(ours))
        rows.append((f"merge, {n:,} labels copied", bs.measure(merge)))
    load = os.getloadavg()[0]
    print(f"\n{shape.name}; load average {load:.1f} after\n")
    print("| command | seconds | CPU s | peak MB |\n|---|---:|---:|---:|")
    for name, r in rows:
        if "error" in r:
            print(f"| {name} | FAILED: {' '.join(r['error'].split())[-200:]} | | |")
        else:
            print(f"| {name} | {r['seconds']:.2f} | {r['cpu']:.2f} | {r['peak_mb']:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
