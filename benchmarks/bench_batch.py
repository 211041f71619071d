"""Batch files: exporting N requests (`llm-label --batch-export`) and importing N result
lines (`annotate llm-import`), in lines per second and peak memory, at two sizes.

The project holds N + 40 message actions (sessions of 200), 40 of them gold-labelled and
split into 8 shots + 32 held out, as in `bench_llm.py`: each request carries the 8-shot
prefix (~12 KB). Export builds every request exactly as the online path does (messages,
schema, request hash), looks the hashes up in the request cache in chunks, writes the
JSONL lines and records each line in the project file (`llm_batch_requests`). Import reads
a results file in vLLM `run_batch`'s output format (one chat completion per line, made
outside the timing), matches each line by custom_id, rebuilds and checks the request hash,
and stores the reply, the item result and the `llm:<model>` label, in chunks of 2,000 lines
per transaction.

The peer is the floor of each direction in the same process: `json.dumps` of every
request line into a file (export), and `json.loads` of every result line (import), with no
request building, no hashing and no SQLite. Each size runs in its own subprocess, so its
peak RSS (`ru_maxrss`) is its own; `base MB` is the RSS after loading the project (the
actions, the codebook, the libraries) and before the export, so `peak - base` is what the
streaming costs; it should not grow with N.

    .venv/bin/python benchmarks/bench_batch.py           # 20,000 and 100,000 lines
    .venv/bin/python benchmarks/bench_batch.py --quick   # 5,000 and 20,000 lines
"""

from __future__ import annotations

import argparse
import itertools
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

MODEL = "bench-model"
GOAL = 20_000  # lines per second, each way


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def make_results(requests: Path, results: Path) -> None:
    """What vLLM's run_batch writes for these requests (streamed, outside the timing)."""
    with open(requests) as src, open(results, "w") as out:
        for n, line in enumerate(src):
            custom_id = json.loads(line)["custom_id"]
            content = json.dumps({"move": {"code": "instruct", "other_text": None}})
            body = {
                "id": f"cmpl-{n}",
                "object": "chat.completion",
                "created": 0,
                "model": MODEL,
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 3000, "completion_tokens": 12,
                          "total_tokens": 3012},
            }  # fmt: skip
            out.write(json.dumps({"id": f"vllm-{n}", "custom_id": custom_id,
                                  "response": {"status_code": 200, "request_id": f"r{n}",
                                               "body": body}, "error": None}) + "\n")  # fmt: skip


def run_case(n: int, workdir: Path) -> dict:
    from bench_llm import build_project

    from annotate.codebook import find_codebook
    from annotate.llm_store import llm_store
    from annotate.store import Store
    from llm_coder.batch_cycle import UNLIMITED
    from llm_coder.batch_export import BatchFiles
    from llm_coder.batch_import import Importer
    from llm_coder.client import LLMConfig
    from llm_coder.job import JobOptions, LabelJob

    db = workdir / f"bench-{n}.db"
    requests = workdir / f"requests-{n}.jsonl"
    results = workdir / f"results-{n}.jsonl"
    build_project(db, n)
    out: dict = {"lines": n}
    with Store(db) as store:
        config = LLMConfig(MODEL, "http://offline", "")
        loaded = find_codebook("hcrc_moves")
        job = LabelJob(llm_store(store), loaded, JobOptions(MODEL, "hcrc_moves"), config)
        ids = list(itertools.islice(job.rest_ids(), n))  # TargetIds pages from SQL: no slicing
        run_id = job.start()
        store.llm.update_llm_run(run_id, status="batch")
        out["base_mb"] = current_rss_mb()
        started = time.perf_counter()
        written = BatchFiles(
            job, run_id, "label", kind="file", mode="json_schema",
            path_for=lambda part: requests, limits=UNLIMITED,
        ).write(ids)  # fmt: skip
        out["export_s"] = time.perf_counter() - started
        out["export_peak_mb"] = rss_mb()
        out["file_mb"] = requests.stat().st_size / 1e6
        assert written[0].requests == n, written

        # the floor: json.dumps of the same lines, no building, hashing or SQLite
        lines = []
        with open(requests) as f:
            for _, line in zip(range(200), f, strict=False):
                lines.append(json.loads(line))
        started = time.perf_counter()
        with open(workdir / "floor.jsonl", "w") as f:
            for k in range(n):
                f.write(json.dumps(lines[k % len(lines)]) + "\n")
        out["export_floor_s"] = time.perf_counter() - started
        (workdir / "floor.jsonl").unlink()

        make_results(requests, results)
        requests.unlink()
        started = time.perf_counter()
        with open(results) as f:
            importer = Importer(llm_store(store))
            importer.add(f)
            result = importer.finish()
        out["import_s"] = time.perf_counter() - started
        out["import_peak_mb"] = rss_mb()
        assert result.stored == n and result.items == n, result
        labels = store.db.query("SELECT count(*) FROM labels WHERE coder = ?", (job.coder,))[0][0]
        assert labels == n, labels
        started = time.perf_counter()
        with open(results) as f:
            for line in f:
                json.loads(line)
        out["import_floor_s"] = time.perf_counter() - started
    results.unlink()
    db.unlink()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--case", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case, args.workdir)))
        return 0
    sizes = (5_000, 20_000) if args.quick else (20_000, 100_000)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
        for n in sizes:
            proc = subprocess.run(
                [sys.executable, __file__, "--case", str(n), "--workdir", tmp],
                capture_output=True, text=True,
            )  # fmt: skip
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                return 1
            rows.append(json.loads(proc.stdout.splitlines()[-1]))
    print(f"goal: >= {GOAL:,} lines/s each way, peak - base flat in the number of lines")
    print(
        "| direction | lines | seconds | lines/s | floor lines/s | ratio | file MB "
        "| base MB | peak MB | peak - base |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        n = r["lines"]
        for way, seconds, floor, peak, size in (
            ("export", r["export_s"], r["export_floor_s"], r["export_peak_mb"], r["file_mb"]),
            ("import", r["import_s"], r["import_floor_s"], r["import_peak_mb"], None),
        ):
            rate = n / seconds
            floor_rate = n / floor
            met = "met" if rate >= GOAL else "MISSED"
            print(
                f"| {way} ({met}) | {n:,} | {seconds:.2f} | {rate:,.0f} | {floor_rate:,.0f} | "
                f"{floor_rate / rate:.2f} | {'' if size is None else f'{size:,.0f}'} | "
                f"{r['base_mb']:.0f} | {peak:.0f} | {peak - r['base_mb']:.0f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
