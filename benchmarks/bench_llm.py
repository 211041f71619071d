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

`--real` runs against a real llama.cpp server instead (llama-cpp-python serving SmolLM2-135M,
started with ../shared/llm/serve.sh on a port and directory of its own, and stopped at the
end; `--base-url URL` uses a running server instead and `--server-log FILE` reads its log).
It labels real HCRC Map Task moves: one dialogue's corpus labels are gold (8 shots), the first
24 utterances of another are labelled at concurrency 1, 4 and 8, each in a fresh project file
(so no run reads another's request cache and each negotiates the response format anew).
Per concurrency: items/s and its ratio to concurrency 1 (the server answers one request at a
time, so concurrency 1 is the floor and more should cost nothing) and to the server's own
rate (its log's per-request `total time`, summed), prompt tokens per item
(from the replies' usage), the share of prompt tokens and of requests served from the
server's prefix cache (its log's `prefix-match hit` lines), requests refused for their
response format, retries and timeouts.

    .venv/bin/python benchmarks/bench_llm.py --real    # 24 items x 3 concurrencies, ~2 min
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHARED = ROOT.parent / "shared"
SERVE_SH = SHARED / "llm" / "serve.sh"
DIALOGUES = SHARED / "maptask" / "dialogues"
REAL_MODEL = "smollm2"  # the alias serve.sh gives the model; the server answers to no other
LATENCY = 0.2
WORDS = "go left right up down past the old mill lake bridge ok got it where now".split()  # noqa: SIM905


def build_project(db: Path, n: int) -> None:
    """N + 40 message actions in sessions of 200, 40 of them with gold labels, a split."""
    import random

    from annotate.codebook import Answer, find_codebook
    from annotate.llm_store import llm_store
    from annotate.models import Action
    from annotate.store import LabelWrite, Store
    from llm_coder.split import make_split

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
        store.actions.add_actions(actions, path="bench", sha256="bench", fmt="bench")
        store.codebooks.register_codebook(loaded)
        gold = [
            LabelWrite(a.id, "move", "gold", Answer(codes[k % len(codes)]), "bench")
            for k, a in enumerate(actions[:40])
        ]
        store.labels.save_answers(loaded.codebook, gold)
        make_split(llm_store(store), loaded, shots=8, seed=7, gold="gold")


def run_case(db: Path, base_url: str, model: str, n: int, concurrency: int) -> dict:
    """Label the first N non-split actions; return timing and the run's counts."""
    os.environ["OPENAI_API_KEY"] = "bench-key"
    from annotate.codebook import find_codebook
    from annotate.llm_store import llm_store
    from annotate.store import Store
    from llm_coder.client import config_from_env
    from llm_coder.job import JobOptions, LabelJob

    loaded = find_codebook("hcrc_moves")
    config = config_from_env(model, base_url)
    import_started = time.perf_counter()
    import openai  # noqa: F401  -- loaded once per process (timed separately, not per item)

    import_s = time.perf_counter() - import_started
    with Store(db) as store:
        options = JobOptions(model=model, split="hcrc_moves", concurrency=concurrency)
        job = LabelJob(llm_store(store), loaded, options, config)
        ids = list(itertools.islice(job.rest_ids(), n))  # TargetIds pages from SQL: no slicing
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


# -- --real: a llama.cpp server -----------------------------------------------------------


def build_maptask_project(db: Path, gold_file: Path, target_file: Path, shots: int) -> None:
    """As `annotate import GOLD --labels-as hcrc --codebook hcrc_moves`, `annotate split
    --codebook hcrc_moves --gold hcrc --shots N` and `annotate import TARGET`; TARGET's own
    corpus labels are stored as coder 'corpus' (not gold: only to score the model's answers)."""
    from annotate.codebook import find_codebook
    from annotate.io.importing import LabelsAs, import_files
    from annotate.llm_store import llm_store
    from annotate.store import Store
    from llm_coder.split import make_split

    loaded = find_codebook("hcrc_moves")
    qid = loaded.codebook.questions[0].id
    with Store(db) as store:
        import_files(store, [gold_file], labels_as=LabelsAs("hcrc", loaded, qid))
        make_split(llm_store(store), loaded, shots=shots, seed=7, gold="hcrc")
        import_files(store, [target_file], labels_as=LabelsAs("corpus", loaded, qid))


def server_up(base_url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=2) as reply:
            return reply.status == 200
    except OSError:
        return False


def serve(port: int, llm_dir: Path, *stop: str) -> str:
    """Run serve.sh (start, or ``stop``) with this PORT and LLM_DIR; its stdout."""
    env = {**os.environ, "PORT": str(port), "LLM_DIR": str(llm_dir)}
    out = subprocess.run(
        ["bash", str(SERVE_SH), *stop], env=env, capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise SystemExit(f"serve.sh {' '.join(stop)} failed: {out.stderr.strip()[-2000:]}")
    return out.stdout.strip()


GENERATE = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens")
PROMPT_EVAL = re.compile(r"prompt eval time =\s*[\d.]+ ms /\s*(\d+) tokens")
TOTAL_TIME = re.compile(r"llama_perf_context_print:\s+total time =\s*([\d.]+) ms")
REFUSED = re.compile(r'"POST /v1/chat/completions HTTP/1\.1" [45]\d\d ')


def read_server_log(text: str) -> dict:
    """Prefix-cache use of the requests one llama-cpp-python log excerpt shows.

    Every generation prints ``prompt eval time = ... / N tokens`` (N prompt tokens
    evaluated); one that reused the cached prefix prints ``Llama.generate: H prefix-match
    hit, remaining N prompt tokens to eval`` first. No such line: nothing was reused."""
    generations = hit_requests = hit_tokens = eval_tokens = refused = 0
    server_ms = 0.0
    pending_hit = 0
    for line in text.splitlines():
        if m := GENERATE.search(line):
            pending_hit = int(m.group(1))
        elif m := PROMPT_EVAL.search(line):
            generations += 1
            hit_requests += pending_hit > 0
            hit_tokens += pending_hit
            eval_tokens += int(m.group(1))
            pending_hit = 0
        elif m := TOTAL_TIME.search(line):
            server_ms += float(m.group(1))
        elif REFUSED.search(line):
            refused += 1
    return {
        "generations": generations,
        "hit_requests": hit_requests,
        "hit_tokens": hit_tokens,
        "eval_tokens": eval_tokens,
        "server_s": server_ms / 1000,
        "refused_in_log": refused,
    }


def run_real_case(
    db: Path, base_url: str, items: int, concurrency: int, shots: int, context: int, skip: int = 0
) -> dict:
    """Label ITEMS target utterances (after the first SKIP) as `annotate llm-label` does."""
    os.environ.setdefault("OPENAI_API_KEY", "bench-key")  # the local server checks no key
    from annotate.codebook import find_codebook
    from annotate.llm_store import llm_store
    from annotate.store import Store
    from llm_coder.client import config_from_env
    from llm_coder.job import JobOptions, LabelJob

    loaded = find_codebook("hcrc_moves")
    config = config_from_env(REAL_MODEL, base_url)
    with Store(db) as store:
        options = JobOptions(
            model=REAL_MODEL,
            split="hcrc_moves",
            shots=shots,
            context=context,
            concurrency=concurrency,
        )
        job = LabelJob(llm_store(store), loaded, options, config)
        ids = job.rest_ids()[skip : skip + items]
        started = time.perf_counter()
        result = job.run_phase("label", ids)
        seconds = time.perf_counter() - started
        job.finish("done")
        stored_format = store.llm.endpoint_format(job.endpoint_host, REAL_MODEL)
        corpus = store.llm.coder_answers(loaded.codebook, "corpus", ids)
    qid = loaded.codebook.questions[0].id
    answered = [r.answers[qid].value for r in result.results if r.answers and qid in r.answers]
    agree = sum(
        r.answers is not None
        and qid in r.answers
        and qid in corpus.get(r.action_id, {})
        and r.answers[qid].value == corpus[r.action_id][qid].value
        for r in result.results
    )
    return {
        "items": len(ids),
        "seconds": seconds,
        "sent": result.sent,
        "valid": result.valid,
        "failed": result.failed,
        "retries": result.retries,
        "timeouts": result.timeouts,
        "tokens_in": result.tokens_in,
        "format": result.response_format,
        "format_changes": list(result.format_changes),
        "stored_format": stored_format,
        "agree": agree,
        "answers": answered,
    }


def main_real(args: argparse.Namespace) -> int:
    levels = [int(c) for c in args.concurrency.split(",")]
    gold_file = DIALOGUES / args.gold_dialogue
    target_file = DIALOGUES / args.target_dialogue
    for f in (gold_file, target_file):
        if not f.is_file():
            raise SystemExit(f"no dialogue {f}")
    log_path = args.server_log
    started_here = False
    wall_started = time.perf_counter()
    if args.base_url:
        base_url = args.base_url.rstrip("/")
    else:
        base_url = f"http://127.0.0.1:{args.port}/v1"
        if server_up(base_url):
            print(f"a server already answers at {base_url}: using it, not stopping it")
        else:
            if not SERVE_SH.is_file():
                raise SystemExit(f"no {SERVE_SH}: pass --base-url URL of a running server")
            print(f"starting llama.cpp on port {args.port} ({args.llm_dir}) ...", flush=True)
            boot = time.perf_counter()
            base_url = serve(args.port, args.llm_dir)
            started_here = True
            print(f"  up at {base_url} in {time.perf_counter() - boot:.1f} s", flush=True)
        log_path = log_path or args.llm_dir / "server.log"
    if not server_up(base_url):
        raise SystemExit(f"no server answers at {base_url}/models")
    if log_path is not None and not log_path.is_file():
        print(f"no server log at {log_path}: prefix-cache columns left empty")
        log_path = None

    rows: list[tuple[int, dict, dict | None]] = []
    tmp = Path(tempfile.mkdtemp(prefix="bench-llm-real-"))
    try:
        # warm-up (not measured; an item no run labels): the server's first prompt fills
        # its prefix cache, which would otherwise count against the first concurrency alone
        build_maptask_project(tmp / "warm.db", gold_file, target_file, args.shots)
        run_real_case(tmp / "warm.db", base_url, 1, 1, args.shots, args.context, args.items)
        for concurrency in levels:
            db = tmp / f"c{concurrency}.db"  # a fresh project file: no cache, no stored format
            build_maptask_project(db, gold_file, target_file, args.shots)
            offset = log_path.stat().st_size if log_path else 0
            r = run_real_case(db, base_url, args.items, concurrency, args.shots, args.context)
            log = None
            if log_path:
                time.sleep(0.5)  # the server's last lines
                with log_path.open("rb") as fh:
                    fh.seek(offset)
                    log = read_server_log(fh.read().decode("utf-8", "replace"))
            rows.append((concurrency, r, log))
            print(
                f"  concurrency {concurrency}: {r['items']} items in {r['seconds']:.1f} s",
                flush=True,
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if started_here:
            serve(args.port, args.llm_dir, "stop")

    floor = rows[0][1]["items"] / rows[0][1]["seconds"] if rows else 0.0
    print()
    print(
        f"LLM coder against llama.cpp ({REAL_MODEL} at {base_url}; {args.items} Map Task moves "
        f"per concurrency, {args.shots} shots, context {args.context}). The server answers one "
        f"request at a time: 'vs c{levels[0]}' is items/s against concurrency {levels[0]}'s; "
        "'server s' is the server's own compute time for the run's requests (its log's "
        "`total time`), 'vs server' = server s / seconds, the rate against the server "
        "answering the same requests back to back"
    )
    print(
        f"| concurrency | items | valid | sent | refused | retries | timeouts | seconds "
        f"| items/s | vs c{levels[0]} | server s | vs server | prompt tok/item "
        "| prefix-cached tokens | requests with prefix hit |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for concurrency, r, log in rows:
        rate = r["items"] / r["seconds"]
        refused = len(r["format_changes"])
        if log and log["generations"]:
            cached = f"{log['hit_tokens'] / (log['hit_tokens'] + log['eval_tokens']):.1%}"
            hits = f"{log['hit_requests']}/{log['generations']}"
            server = f"{log['server_s']:.1f} | {log['server_s'] / r['seconds']:.2f}"
        else:
            cached = hits = ""
            server = " | "
        print(
            f"| {concurrency} | {r['items']} | {r['valid']} | {r['sent']} | {refused} "
            f"| {r['retries']} | {r['timeouts']} | {r['seconds']:.1f} | {rate:.2f} "
            f"| {rate / floor:.2f} | {server} | {r['tokens_in'] / max(r['items'], 1):,.0f} "
            f"| {cached} | {hits} |"
        )
    first = rows[0][1] if rows else {}
    print(
        f"response format: {first.get('format')} after "
        f"{'; '.join(c[:90] for c in first.get('format_changes', [])) or 'no refusal'}; "
        f"stored for the endpoint: {first.get('stored_format')}"
    )
    if any(log for *_, log in rows):
        print(
            "refused requests in the server log: "
            + ", ".join(f"c{c} {log['refused_in_log']}" for c, _, log in rows if log)
        )
    total = sum(r["items"] for _, r, _ in rows)
    agree = sum(r["agree"] for _, r, _ in rows)
    counts = Counter(a for _, r, _ in rows for a in r["answers"])
    print(
        f"answers equal to the corpus label: {agree}/{total} (a 135M model: a weak coder); "
        "answers given: " + ", ".join(f"{code} {n}" for code, n in counts.most_common())
    )
    print(f"wall time, server start included: {time.perf_counter() - wall_started:.0f} s")
    ratio_ok = all(r["items"] / r["seconds"] / floor >= 0.95 for _, r, _ in rows)
    clean = all(r["retries"] == 0 and r["timeouts"] == 0 and not r["failed"] for _, r, _ in rows)
    print(f"goal items/s >= 0.95 of concurrency {levels[0]}: {'met' if ratio_ok else 'NOT met'}")
    if all(log and log["generations"] for *_, log in rows):
        busy = min(log["server_s"] / r["seconds"] for _, r, log in rows if log)
        print(f"goal >= 0.95 of the server's own rate: {'met' if busy >= 0.95 else 'NOT met'}")
    print(f"goal no retries, timeouts or failed items: {'met' if clean else 'NOT met'}")
    if all(log and log["generations"] for *_, log in rows):
        share = min(log["hit_requests"] / log["generations"] for *_, log in rows if log)
        print(
            f"goal prefix reused on >= 95% of requests: {'met' if share >= 0.95 else 'NOT met'} "
            f"(lowest {share:.0%})"
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="400 items instead of 2,000")
    parser.add_argument("--case", nargs=5, help=argparse.SUPPRESS)
    real = parser.add_argument_group("--real: a llama.cpp server and Map Task dialogues")
    real.add_argument("--real", action="store_true", help="benchmark against a real server")
    real.add_argument("--base-url", help="use this running server (default: start one)")
    real.add_argument("--server-log", type=Path, help="that server's log (prefix-cache hits)")
    real.add_argument("--port", type=int, default=8766, help="port of the server started")
    real.add_argument("--llm-dir", type=Path, default=Path("/tmp/llm-bench"), help="its dir")
    real.add_argument("--items", type=int, default=24, help="items per concurrency")
    real.add_argument("--concurrency", default="1,4,8", help="comma-separated")
    real.add_argument("--shots", type=int, default=8)
    real.add_argument("--context", type=int, default=2)
    real.add_argument("--gold-dialogue", default="q8nc2.txt", help="its labels are gold")
    real.add_argument("--target-dialogue", default="q4ec1.txt", help="labelled by the model")
    args = parser.parse_args()
    if args.real:
        return main_real(args)
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
