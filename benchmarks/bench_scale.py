"""Every command at corpus scale (issue 17): 1M actions and ~341k labels, as a user runs them.

Builds the project file once with bulk SQL through the store's own migrations, caches it,
then runs each command as a new process (`python -m annotate ...`) on a fresh copy of it,
each inside a wrapper process of its own so that the peak RSS (`ru_maxrss` of the wrapper's
children) is that command's alone, and prints a table: command, seconds, peak MB, goal, met?,
and the peer measured in the same run where one exists.

    .venv/bin/python benchmarks/bench_scale.py                 # the 1M-action file
    .venv/bin/python benchmarks/bench_scale.py --quick         # the 100k-action file
    .venv/bin/python benchmarks/bench_scale.py --only agree    # one command (see --list)
    .venv/bin/python benchmarks/bench_scale.py --build-only    # build the cached files

The cached files (stable paths; the other files in the folder are their targets):

    /tmp/annotate-scale/scale-1m.db     1,000,000 actions, sample 'main' of 100,000 items
                                        coded by ana, ben and caro (traum, question act),
                                        41,000 actions coded by llm:smollm2 (run 1)
    /tmp/annotate-scale/scale-100k.db   100,000 actions, the same shape scaled by 1/10
    /tmp/annotate-scale/agree-1m.db     1,000,000 actions, every one coded by the 3 coders

Each is a symlink to ``<name>-<builder hash>.db``: a change to the builder rebuilds. The
files are built at schema 8 (``BASE_SCHEMA``), so any branch can open them: a branch with
newer migrations upgrades its working copy (outside the timing). Never write to them: copy.
Set ANNOTATE_SCALE_DIR to cache elsewhere.

Shape: sessions of 200-400 actions, two participants (guide and follower), conditions
visible/hidden, 70% messages and the rest drawing actions; the coders agree with a latent
true act about 78% of the time (Fleiss' kappa about 0.6); 0.3% of their cells are skips
and 0.5% are flagged with a note.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import inspect
import json
import os
import re
import resource
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SCALE_DIR = Path(os.environ.get("ANNOTATE_SCALE_DIR") or "/tmp/annotate-scale")
BASE_SCHEMA = 8
CODERS = ("ana", "ben", "caro")
LLM_CODER = "llm:smollm2"
ACTS = ("Initiate", "Continue", "Acknowledge", "Repair", "ReqRepair", "ReqAck", "Cancel", "other")
ACT_P = (0.25, 0.15, 0.30, 0.07, 0.07, 0.08, 0.02, 0.06)
TYPES = ("message", "draw", "erase", "undo", "reset")
TYPE_P = (0.70, 0.20, 0.04, 0.03, 0.03)
PHRASES = (
    "go left past the old mill",
    "ok got it",
    "where are you now?",
    "down to the swamp",
    "no, a bit more to the right",
    "done",
    "mhm",
    "start at the ferry landing",
    "round the lake then up",
    "sorry, I meant the bridge",
    "can you see the fossil bed?",
)


@dataclass(frozen=True)
class Shape:
    name: str
    n_actions: int
    n_sample: int
    n_llm: int

    @property
    def path(self) -> Path:
        return SCALE_DIR / f"{self.name}.db"


FULL = Shape("scale-1m", 1_000_000, 100_000, 41_000)
QUICK = Shape("scale-100k", 100_000, 10_000, 4_100)
AGREE_1M = Shape("agree-1m", 1_000_000, 1_000_000, 0)


# -- the builder ------------------------------------------------------------------------------


def _uuids(rng, n: int) -> list[str]:
    h = rng.bytes(16 * n).hex()
    return [
        "-".join(
            (
                h[i : i + 8],
                h[i + 8 : i + 12],
                h[i + 12 : i + 16],
                h[i + 16 : i + 20],
                h[i + 20 : i + 32],
            )
        )
        for i in range(0, 32 * n, 32)
    ]


def _schema(conn: sqlite3.Connection) -> None:
    """Migrations 1..BASE_SCHEMA, exactly as the store applies them."""
    from annotate.store.migrations import MIGRATIONS

    conn.execute(
        "CREATE TABLE _migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
        "applied_at TEXT NOT NULL)"
    )
    for number, migration in MIGRATIONS:
        if number <= BASE_SCHEMA:
            migration(conn)
            conn.execute(
                "INSERT INTO _migrations VALUES (?, ?, '2026-11-24T00:00:00.000Z')",
                (number, migration.__name__),
            )


def _actions(conn: sqlite3.Connection, rng, n: int) -> list[str]:
    import numpy as np

    sizes: list[int] = []
    while sum(sizes) < n:
        sizes.append(int(rng.integers(200, 401)))
    sizes[-1] -= sum(sizes) - n
    n_sessions = len(sizes)
    session_ids = _uuids(rng, n_sessions)
    people = _uuids(rng, 2 * n_sessions)
    names = ("Maya", "Mei", "Jonas", "Priya", "Ivan", "Sara", "Leo", "Omar", "Tom", "Lucy")
    conn.executemany(
        "INSERT INTO imports VALUES (?, ?, ?, 'platform', ?, ?, '2026-11-24T00:00:00.000Z')",
        (
            (
                j + 1,
                f"/data/logs/{people[j]}.jsonl",
                hashlib.sha256(people[j].encode()).hexdigest(),
                sizes[j // 2] // 2,
                sizes[j // 2] // 2,
            )
            for j in range(2 * n_sessions)
        ),
    )
    ids = _uuids(rng, n)
    session_of = np.repeat(np.arange(n_sessions), sizes)
    starts = np.cumsum([0, *sizes[:-1]])
    seq = np.arange(n) - np.repeat(starts, sizes)
    guide = rng.random(n) < 0.55
    kinds = rng.choice(len(TYPES), size=n, p=TYPE_P)
    phrase = rng.integers(0, len(PHRASES), size=n)
    elapsed = seq * 3.0 + rng.random(n).round(3)
    t0 = np.datetime64("2026-01-05T09:00:00", "ms") + (session_of * 3_600_000).astype("m8[ms]")
    stamps = np.datetime_as_string(t0 + (elapsed * 1000).astype("m8[ms]"), unit="ms")
    source = {
        "message": "send_message",
        "draw": "map_draw_stop",
        "erase": "map_erase_stop",
        "undo": "map_undo",
        "reset": "map_tool_click",
    }

    def rows() -> Iterator[tuple]:
        for i in range(n):
            s = int(session_of[i])
            g = bool(guide[i])
            who = 2 * s + (0 if g else 1)
            kind = TYPES[kinds[i]]
            yield (
                ids[i],
                session_ids[s],
                names[who % len(names)],
                "guide" if g else "follower",
                int(seq[i]),
                stamps[i] + "Z",
                float(elapsed[i]),
                kind,
                f"{PHRASES[phrase[i]]} ({i % 97})" if kind == "message" else kind,
                "visible" if s % 2 else "hidden",
                f'{{"participant_id": "{people[who]}", "source_type": "{source[kind]}"}}',
                who + 1,
            )

    conn.executemany("INSERT INTO actions VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", rows())
    return ids


def _codebook(conn: sqlite3.Connection) -> str:
    from annotate.codebook import find_codebook

    loaded = find_codebook("traum")
    cb = loaded.codebook
    conn.execute(
        "INSERT INTO codebooks (name, version_hash, title, version, text, source, added_at, "
        "other_by_default) VALUES (?, ?, ?, ?, ?, ?, '2026-11-24T00:00:00.000Z', 0)",
        (cb.name, cb.version_hash, cb.title, cb.version, loaded.text, loaded.source),
    )
    return cb.version_hash


def _labels(conn: sqlite3.Connection, rng, items: Sequence[str], cb_hash: str) -> None:
    import numpy as np

    n = len(items)
    truth = rng.choice(len(ACTS), size=n, p=ACT_P)
    for c, coder in enumerate(CODERS):
        agree = rng.random(n) < 0.78
        codes = np.where(agree, truth, rng.choice(len(ACTS), size=n, p=ACT_P))
        state = rng.random(n)  # < 0.003 skipped, < 0.008 flagged
        seconds = rng.lognormal(1.3, 0.6, size=n).round(2)

        def rows(codes=codes, state=state, seconds=seconds, c=c, coder=coder) -> Iterator[tuple]:
            for i in range(n):
                stamp = f"2026-02-{1 + c * 9 + i * 9 // n:02d}T10:00:00.000Z"
                skipped = state[i] < 0.003
                value = None if skipped else ACTS[codes[i]]
                flagged = 0.003 <= state[i] < 0.008
                yield (
                    items[i],
                    "traum",
                    cb_hash,
                    "act",
                    coder,
                    value,
                    None,
                    "greeting" if value == "other" else None,
                    "unsure: two acts?" if flagged else None,
                    int(flagged),
                    int(skipped),
                    float(seconds[i]),
                    "tui",
                    "{}",
                    stamp,
                    stamp,
                )

        conn.executemany(
            "INSERT INTO labels (action_id, codebook, codebook_hash, question, coder, value, "
            "codes, other_text, note, flagged, skipped, seconds, source, meta, created_at, "
            "updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            rows(),
        )


def _llm(conn: sqlite3.Connection, rng, items: Sequence[str], cb_hash: str) -> None:
    if not items:
        return
    conn.execute(
        "INSERT INTO llm_runs (id, started_at, finished_at, status, coder, model, "
        "endpoint_host, codebook, codebook_hash, split, prompt_hash, shot_ids, temperature, "
        "votes, context, target, min_kappa, gate, kappa, sent, tokens_in, tokens_out) "
        "VALUES (1, '2026-03-01T10:00:00.000Z', '2026-03-01T12:00:00.000Z', 'done', ?, "
        "'smollm2', 'localhost:8766', 'traum', ?, 'traum', 'p0', '[]', 0.0, 1, 8, 'all', 0.6, "
        "'passed', 0.64, ?, ?, ?)",
        (LLM_CODER, cb_hash, len(items), 2300 * len(items), 12 * len(items)),
    )
    codes = rng.choice(len(ACTS), size=len(items), p=ACT_P)
    stamp = "2026-03-01T11:00:00.000Z"
    conn.executemany(
        "INSERT INTO llm_items VALUES (1, ?, 'label', 1, ?, NULL, 1.0, '[]', ?, 2300, 12, "
        "0.4, 0, ?)",
        (
            (
                a,
                json.dumps({"act": {"value": ACTS[k], "codes": [], "other_text": None}}),
                json.dumps([json.dumps({"act": ACTS[k]})]),
                stamp,
            )
            for a, k in zip(items, codes, strict=True)
        ),
    )
    meta = '{"confidence": 1.0, "model": "smollm2", "request_hash": null, "run_id": 1}'
    conn.executemany(
        "INSERT INTO labels (action_id, codebook, codebook_hash, question, coder, value, "
        "other_text, source, meta, created_at, updated_at) "
        "VALUES (?, 'traum', ?, 'act', ?, ?, ?, 'llm', ?, ?, ?)",
        (
            (
                a,
                cb_hash,
                LLM_CODER,
                ACTS[k],
                "greeting" if ACTS[k] == "other" else None,
                meta,
                stamp,
                stamp,
            )
            for a, k in zip(items, codes, strict=True)
        ),
    )


def build_project(path: Path, shape: Shape) -> None:
    """The project file of ``shape``, written to ``path`` in one transaction."""
    import numpy as np

    rng = np.random.default_rng(17)
    path.unlink(missing_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = OFF")
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("PRAGMA cache_size = -200000")
        conn.execute("BEGIN")
        _schema(conn)
        cb_hash = _codebook(conn)
        ids = _actions(conn, rng, shape.n_actions)
        picked = rng.permutation(shape.n_actions)
        sample = [ids[i] for i in picked[: shape.n_sample]]
        conn.execute(
            "INSERT INTO samples VALUES ('main', 7, ?, NULL, NULL, 'random', "
            "'2026-01-31T12:00:00.000Z')",
            (shape.n_sample,),
        )
        conn.executemany(
            "INSERT INTO sample_items VALUES ('main', ?, ?)", ((p, a) for p, a in enumerate(sample))
        )
        _labels(conn, rng, sample, cb_hash)
        # the LLM coded the sample's first items, then items outside it
        half = shape.n_llm // 2
        llm = sample[:half] + [ids[i] for i in picked[shape.n_sample :][: shape.n_llm - half]]
        _llm(conn, rng, llm, cb_hash)
        conn.execute("COMMIT")
        conn.execute("PRAGMA journal_mode = WAL")  # as the store leaves every file
    finally:
        conn.close()


def builder_hash() -> str:
    """A hash of the builder's code (its syntax tree: comments and layout do not count)."""
    source = "".join(
        ast.dump(ast.parse(textwrap.dedent(inspect.getsource(f))))
        for f in (_uuids, _schema, _actions, _codebook, _labels, _llm, build_project)
    )
    consts = repr((BASE_SCHEMA, CODERS, LLM_CODER, ACTS, ACT_P, TYPES, TYPE_P, PHRASES))
    return hashlib.sha256((source + consts).encode()).hexdigest()[:12]


def cached_project(shape: Shape) -> Path:
    """The cached file of ``shape`` (built when missing or made by another builder)."""
    SCALE_DIR.mkdir(parents=True, exist_ok=True)
    target = SCALE_DIR / f"{shape.name}-{shape.n_actions}-{shape.n_sample}-{builder_hash()}.db"
    if not target.exists():
        print(f"building {target} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        partial = target.with_suffix(f".building-{os.getpid()}")
        build_project(partial, shape)
        partial.rename(target)
        print(f"built in {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    link = shape.path
    if not (link.is_symlink() and os.readlink(link) == target.name):
        tmp_link = link.with_suffix(f".link-{os.getpid()}")
        tmp_link.unlink(missing_ok=True)
        tmp_link.symlink_to(target.name)
        tmp_link.replace(link)
    return target


def platform_files(n: int) -> Path:
    """``n`` platform-export actions in 2,000 JSONL files (one per participant), cached."""
    digest = hashlib.sha256(inspect.getsource(platform_files).encode()).hexdigest()[:8]
    folder = SCALE_DIR / f"platform-{n}-{digest}"
    if folder.exists():
        return folder
    partial = folder.with_suffix(f".building-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    n_files = 2000 if n >= 100_000 else 20
    per_session = 2 * n // n_files
    words = "go left right up down past the old mill lake bridge ok got it where now".split()  # noqa: SIM905
    for f in range(n_files):
        session, who = divmod(f, 2)
        role = "guide" if who == 0 else "follower"
        with (partial / f"p{session}{role[0]}.jsonl").open("w") as fh:
            for k in range(per_session // 2):
                i = session * per_session + 2 * k + who
                kind = "send_message" if k % 3 else "map_draw_stop"
                fh.write(
                    json.dumps(
                        {
                            "action_id": f"a{i}",
                            "timestamp": f"2026-04-{1 + session % 28:02d}T{10 + k // 3600:02d}:"
                            f"{k // 60 % 60:02d}:{k % 60:02d}.{i % 1000:03d}Z",
                            "session_id": f"s{session}",
                            "participant_id": f"p{session}{role[0]}",
                            "participant_name": role.capitalize(),
                            "role": role,
                            "condition": "visible" if session % 2 else "hidden",
                            "action_type": kind,
                            "action_content": " ".join(
                                words[(i + j) % len(words)] for j in range(8)
                            )
                            if kind == "send_message"
                            else "brush_release",
                            "metadata": {"message_type": "text"}
                            if kind == "send_message"
                            else {"stroke_tool": "brush"},
                            "session_elapsed_seconds": k * 3,
                        }
                    )
                    + "\n"
                )
    partial.rename(folder)
    return folder


# -- measuring one command ----------------------------------------------------------------------


def measure_child(argv: list[str], ready: str | None, out: str | None) -> None:
    """The wrapper process: run ``argv``, print its wall time and peak RSS as JSON.

    ``ready``: a regex the command's terminal shows when it is ready (a TUI, run on a
    pseudo-terminal and killed then). ``out``: where its standard output goes."""
    start = time.perf_counter()
    if ready is None:
        with open(out or os.devnull, "wb") as fh:
            proc = subprocess.run(argv, stdout=fh, stderr=subprocess.PIPE)
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            print(json.dumps({"error": proc.stderr.decode(errors="replace")[-800:]}))
            return
    else:
        seconds = _until_ready(argv, re.compile(ready.encode()))
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime
    print(json.dumps({"seconds": seconds, "peak_mb": usage.ru_maxrss / 1024, "cpu": cpu}))


def _until_ready(argv: list[str], ready: re.Pattern[bytes]) -> float:
    import fcntl
    import struct
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    env.pop("NO_COLOR", None)
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
    )
    os.close(slave)
    buf = b""
    try:
        while not ready.search(buf):
            if time.perf_counter() - start > 120:
                raise TimeoutError(f"{ready.pattern!r} not seen; last: {buf[-300:]!r}")
            if select.select([master], [], [], 1)[0]:
                with contextlib.suppress(OSError):
                    buf += os.read(master, 1 << 16)
            elif proc.poll() is not None:
                raise RuntimeError(f"exited {proc.returncode}: {buf[-300:]!r}")
        return time.perf_counter() - start
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        os.close(master)


def measure(
    argv: list[str], *, ready: str | None = None, out: Path | None = None, cwd: Path | None = None
) -> dict[str, float]:
    wrapper = [
        sys.executable,
        __file__,
        "--measure-child",
        json.dumps([argv, ready, str(out) if out else None]),
    ]
    # The copies made for this case (hundreds of MB) go to disk now, not while the command
    # runs: their writeback took a core and the disk from it (agree at 100k: 0.2-0.4 s of
    # wall time, in no CPU second of its own).
    os.sync()
    proc = subprocess.run(wrapper, capture_output=True, text=True, cwd=cwd, env=ENV)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        return {"error": (proc.stderr or proc.stdout)[-800:]}
    return json.loads(lines[-1])


# OPENAI_API_KEY: the test server's (llm-resume); nothing leaves the machine
ENV = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "100", "NO_COLOR": "1"}
ENV["OPENAI_API_KEY"] = "bench"
ENV.pop("ANNOTATE_DB", None)


def annotate(*args: str) -> list[str]:
    return [sys.executable, "-m", "annotate", *args]


def run(argv: list[str], cwd: Path | None = None) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=ENV)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {proc.stderr[-600:]}")


# -- the cases ----------------------------------------------------------------------------------


@dataclass
class Row:
    command: str
    seconds: float | None
    cpu: float | None
    peak_mb: float | None
    goal: str
    met: bool | None
    peer: str = ""
    note: str = ""


@dataclass
class Bench:
    shape: Shape
    work: Path
    rows: list[Row] = field(default_factory=list)
    rounds: int = 1
    """Alternated runs of a read-only case (export), each figure their median."""
    _fixtures: dict[str, Path] = field(default_factory=dict)

    def fixture(
        self, name: str, setup: Callable[[Path], None] | None = None, shape: Shape | None = None
    ) -> Path:
        """A working copy of the cached file (upgraded to this branch's schema, then
        ``setup``), made once per run; each case copies it again before writing to it."""
        key = f"{(shape or self.shape).name}-{name}"
        if key not in self._fixtures:
            path = self.work / f"{key}.db"
            shutil.copyfile(cached_project(shape or self.shape), path)
            run(annotate("status", "--db", str(path)))  # applies this branch's migrations
            if setup:
                setup(path)
            self._fixtures[key] = path
        return self._fixtures[key]

    def copy(self, source: Path, name: str) -> Path:
        dest = self.work / f"{name}.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{dest}{suffix}").unlink(missing_ok=True)
        shutil.copyfile(source, dest)
        return dest

    def add(
        self,
        command: str,
        result: dict[str, float],
        goal_s: float | None,
        goal_mb: float,
        *,
        peer: dict[str, float] | None = None,
        peer_name: str = "",
        ratio: float | None = None,
        note: str = "",
    ) -> None:
        if "error" in result:
            self.rows.append(
                Row(
                    command,
                    None,
                    None,
                    None,
                    "",
                    None,
                    note="FAILED: " + " ".join(result["error"].split())[-300:],
                )
            )
            print(f"  {command}: FAILED {result['error'][-300:]}", flush=True)
            return
        secs, mb = result["seconds"], result["peak_mb"]
        peer_text = ""
        ok = mb < goal_mb
        goal = []
        if goal_s is not None:
            goal.append(f"< {goal_s:g} s")
            ok = ok and secs < goal_s
        if peer and "error" not in peer:
            peer_text = f"{peer_name} {peer['seconds']:.2f} s" + (
                f" / {peer['peak_mb']:.0f} MB" if peer["peak_mb"] else ""
            )
            r = secs / peer["seconds"]
            peer_text += f" (x{r:.2f})"
            if ratio is not None:
                goal.append(f"<= {ratio:g}x peer")
                ok = ok and r <= ratio
        elif peer:
            peer_text = f"{peer_name} FAILED"
        goal.append(f"< {goal_mb:g} MB")
        row = Row(command, secs, result.get("cpu"), mb, ", ".join(goal), ok, peer_text, note)
        self.rows.append(row)
        print(
            f"  {command}: {secs:.2f} s, {mb:.0f} MB {'met' if ok else 'NOT met'} {peer_text}",
            flush=True,
        )


def _gold(path: Path) -> None:
    """Gold from the majority, and a few-shot split of 200 gold items (8 shots, 192 held
    out): what llm-label needs."""
    db = ("--db", str(path))
    run(annotate("adjudicate", "--codebook", "traum", "--majority-only", *db))
    run(
        annotate(
            "sample",
            "--n",
            "200",
            "--seed",
            "11",
            "--name",
            "val",
            "--where",
            "id IN (SELECT action_id FROM labels WHERE coder = 'gold')",
            *db,
        )
    )
    run(annotate("split", "--codebook", "traum", "--shots", "8", "--sample", "val", *db))


def peer_fleiss(db: Path) -> list[str]:
    """statsmodels' fleiss_kappa on the same labels, read from the same file."""
    code = f"""
import sqlite3, numpy as np
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa
conn = sqlite3.connect({str(db)!r})
coders = {list(CODERS)!r}
rows = conn.execute(
    "SELECT l.action_id, l.coder, l.value FROM labels l JOIN sample_items s "
    "ON s.sample = 'main' AND s.action_id = l.action_id WHERE l.codebook = 'traum' "
    "AND l.question = 'act' AND l.coder IN ('ana', 'ben', 'caro') AND l.value IS NOT NULL")
cells = {{}}
for a, c, v in rows:
    cells.setdefault(a, [None] * 3)[coders.index(c)] = v
full = np.array([r for r in cells.values() if None not in r], dtype=object)
codes, data = np.unique(full, return_inverse=True)
print(fleiss_kappa(aggregate_raters(data.reshape(full.shape))[0]))
"""
    return [sys.executable, "-c", code]


def sqlite3_csv(db: Path, query: str, out: Path) -> list[str]:
    script = f".headers on\n.mode csv\n.output {out}\n{query};\n"
    return ["sh", "-c", f"/usr/bin/sqlite3 {db} <<'EOF'\n{script}EOF"]


LABELS_QUERY = (
    "SELECT l.*, a.session, a.participant, a.role, a.seq, a.action_type, a.content, "
    "a.condition FROM labels l JOIN actions a ON a.id = l.action_id {where}"
    "ORDER BY l.action_id, l.question, l.coder"
)
EXPORT_QUERIES = {
    "actions": "SELECT * FROM actions ORDER BY session, seq",
    "labels": LABELS_QUERY.format(where=""),
    "gold": LABELS_QUERY.format(where="WHERE l.coder = 'gold' "),
}


def export_peer_query(db: Path, what: str) -> str:
    """What the sqlite3 shell exports beside ``annotate export --what WHAT``: the rows of
    the table with their action (for LLM replies, the command's own query, one column per
    field; it takes no parameters)."""
    if what in EXPORT_QUERIES:
        return EXPORT_QUERIES[what]
    from annotate.io.export import ExportWhat, build
    from annotate.store import Store

    with Store(db) as store:
        query = build(store, ExportWhat(what))
    assert not query.params
    return query.plain_sql()


def case_agree(b: Bench, shape: Shape | None = None) -> None:
    shape = shape or b.shape
    base = b.fixture("base", shape=shape)
    label = f"agree, {shape.n_sample // 1000}k items x 3 coders"
    db = b.copy(base, "agree")
    peer = measure(peer_fleiss(db))
    b.add(
        label,
        measure(annotate("agree", "--codebook", "traum", "--db", str(db))),
        1.0 if shape.n_sample <= 100_000 else 6.0,
        300,
        peer=peer,
        peer_name="statsmodels fleiss_kappa",
    )


GOLD_COLUMNS = "codebook, action_id, question, answer, revision, note, created_at, updated_at"


def gold_write_floor(base: Path, adjudicated: Path, work: Path) -> list[str]:
    """The sqlite3 shell writing the same gold into a copy of the same file, as
    ``adjudicate`` leaves it (same pragmas as the store: WAL, synchronous NORMAL, 64 MB
    page cache, foreign keys): the rows of ``gold_answers`` and of ``gold`` (migration 20)
    alone, with nothing read or decided. The rows are staged first in a file of their own,
    in key order (not measured)."""
    staged = work / "gold-staged.db"
    staged.unlink(missing_ok=True)
    target = work / "gold-floor.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(base, target)
    stage = (
        f"ATTACH '{adjudicated}' AS a;\nCREATE TABLE answers AS SELECT * FROM a.gold_answers;\n"
        f"CREATE TABLE gold AS SELECT {GOLD_COLUMNS} FROM a.gold "
        "ORDER BY codebook, action_id, question;\n"
    )
    run(["sh", "-c", f"/usr/bin/sqlite3 {staged} <<'EOF'\n{stage}EOF"])
    write = (
        ".bail on\nPRAGMA synchronous = NORMAL;\nPRAGMA cache_size = -65536;\n"
        f"PRAGMA foreign_keys = ON;\nATTACH '{staged}' AS s;\nBEGIN IMMEDIATE;\n"
        "INSERT INTO gold_answers SELECT * FROM s.answers;\n"
        f"INSERT INTO gold ({GOLD_COLUMNS}) SELECT {GOLD_COLUMNS} FROM s.gold;\nCOMMIT;\n"
    )
    return ["sh", "-c", f"/usr/bin/sqlite3 {target} <<'EOF'\n{write}EOF"]


def case_adjudicate(b: Bench, shape: Shape | None = None) -> None:
    shape = shape or b.shape
    base = b.fixture("base", shape=shape)
    db = b.copy(base, "adjudicate")
    label = f"adjudicate --majority-only, {shape.n_sample // 1000}k items"
    result = measure(
        annotate("adjudicate", "--codebook", "traum", "--majority-only", "--db", str(db))
    )
    floor = measure(gold_write_floor(base, db, b.work)) if "error" not in result else None
    b.add(
        label,
        result,
        1.0 if shape.n_sample <= 100_000 else 6.0,
        300,
        peer=floor,
        peer_name="the gold write alone (sqlite3 shell)",
    )


def case_agree_1m(b: Bench) -> None:
    case_agree(b, AGREE_1M)


def case_adjudicate_1m(b: Bench) -> None:
    case_adjudicate(b, AGREE_1M)


def case_sample(b: Bench) -> None:
    db = b.copy(b.fixture("base"), "sample")
    n = str(b.shape.n_sample)
    b.add(
        f"sample --n {n} on {b.shape.n_actions // 1000}k actions",
        measure(annotate("sample", "--n", n, "--seed", "3", "--name", "bench", "--db", str(db))),
        1.5,
        300,
    )
    # the condition checked by SQLite's compiler and authorizer, then run with the draw
    where = (
        "action_type = 'message' AND session IN (SELECT session FROM actions WHERE role = 'guide')"
    )
    argv = ["sample", "--n", n, "--seed", "3", "--name", "where", "--where", where]
    b.add(
        f"sample --n {n} --where (messages, subquery) on {b.shape.n_actions // 1000}k actions",
        measure(annotate(*argv, "--db", str(db))),
        1.5,
        300,
    )


def case_status(b: Bench) -> None:
    db = b.copy(b.fixture("base"), "status")
    b.add("status", measure(annotate("status", "--db", str(db))), 1.5, 300)


def case_code(b: Bench) -> None:
    db = b.copy(b.fixture("base"), "code")
    ready = r"item #\d"
    for who, extra in (
        ("new coder", ["--coder", "newbie", "--new-coder"]),
        (f"coder with {b.shape.n_sample // 1000}k labels", ["--coder", "ana"]),
    ):
        argv = annotate("code", "--codebook", "traum", *extra, "--db", str(db))
        b.add(f"code start-up, {who}", measure(argv, ready=ready), 1.5, 300)


def case_report(b: Bench) -> None:
    db = b.copy(b.fixture("base"), "report")
    out = b.work / "report"
    shutil.rmtree(out, ignore_errors=True)
    b.add(
        "report",
        measure(annotate("report", "--codebook", "traum", "--out", str(out), "--db", str(db))),
        5.0,
        500,
    )


def median_run(runs: list[dict[str, float]]) -> dict[str, float]:
    """The run of median wall time among ``runs``, with the highest peak of them all (a
    failed run, if any)."""
    failed = [r for r in runs if "error" in r]
    if failed:
        return failed[0]
    middle = sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]
    return {**middle, "peak_mb": max(r["peak_mb"] for r in runs)}


def case_export(b: Bench) -> None:
    """Every table in every format (the gold of the majority, and the LLM's replies of the
    cached file), each beside the sqlite3 shell's CSV of the same rows, measured just
    before. With ``--rounds N`` the shell and the three formats of a table run N times in
    turn, and each figure is the median run: on a shared machine the speed of a core can
    change between a peer and the command it is set beside."""
    db = b.copy(b.fixture("gold", _gold), "export")
    for what in ("actions", "labels", "gold", "llm"):
        peer_argv = sqlite3_csv(db, export_peer_query(db, what), b.work / "peer.csv")
        argvs = {}
        for fmt in ("csv", "jsonl", "parquet"):
            out = b.work / f"export.{fmt}"
            argv = ["export", "--what", what, "--format", fmt, "--out", str(out)]
            argvs[fmt] = annotate(*argv, "--db", str(db))
        runs: dict[str, list[dict[str, float]]] = {"peer": [], **{f: [] for f in argvs}}
        for _ in range(b.rounds):
            runs["peer"].append(measure(peer_argv))
            for fmt, argv in argvs.items():
                runs[fmt].append(measure(argv))
        peer = median_run(runs["peer"])
        for fmt in argvs:
            b.add(
                f"export --what {what} --format {fmt}",
                median_run(runs[fmt]),
                None,
                200,
                peer=peer,
                peer_name="sqlite3 .mode csv",
                ratio=1.5,
            )


def case_llm_dry_run(b: Bench) -> None:
    db = b.copy(b.fixture("gold", _gold), "llm")
    b.add(
        f"llm-label --dry-run, target all {b.shape.n_actions // 1000}k",
        measure(
            annotate(
                "llm-label",
                "--codebook",
                "traum",
                "--model",
                "bench",
                "--dry-run",
                "--target",
                "all",
                "--db",
                str(db),
            )
        ),
        10.0,
        300,
    )


def case_llm_resume(b: Bench) -> None:
    """llm-label over a sample of ``n_llm`` items against the test server, killed (-9) half
    way, then resumed: the resume is timed against the first run's rate for what was left."""
    gold = b.fixture("gold", _gold)
    n = b.shape.n_llm
    db = b.copy(gold, "llm-resume")
    run(annotate("sample", "--n", str(n), "--seed", "5", "--name", "llmtarget", "--db", str(db)))
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.chat_server", "--port", "0", "--label", "Acknowledge"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    try:
        line = server.stdout.readline() if server.stdout else ""
        base_url = line.split()[-1]
        argv = annotate(
            "llm-label",
            "--codebook",
            "traum",
            "--model",
            "bench",
            "--base-url",
            base_url,
            "--target",
            "llmtarget",
            "--force",
            "--concurrency",
            "32",
            "--db",
            str(db),
        )
        first = subprocess.Popen(
            argv,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=ENV,
            start_new_session=True,
        )
        start = time.perf_counter()
        done = 0
        while done < n // 2 and first.poll() is None:
            time.sleep(0.5)
            with contextlib.closing(sqlite3.connect(db, timeout=30)) as conn:
                done = conn.execute(
                    "SELECT count(*) FROM llm_items i JOIN llm_runs r ON r.id = i.run_id "
                    "WHERE r.model = 'bench' AND i.phase = 'label'"
                ).fetchone()[0]
        first_s = time.perf_counter() - start
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        rate = done / first_s if first_s else 0
        left = n - done
        result = measure(argv)
        expected = left / rate if rate else float("inf")
        b.add(
            f"llm-label resume after kill -9 ({done:,} of {n:,} done)",
            result,
            None,
            300,
            peer={"seconds": expected, "peak_mb": 0},
            peer_name="first run's rate x left",
            ratio=1.5,
        )
    finally:
        server.kill()
        server.wait()


def case_import(b: Bench) -> None:
    folder = platform_files(b.shape.n_actions)
    db = b.work / "import.db"
    peer_db = b.work / "import-peer.db"
    for p in (db, peer_db):
        for suffix in ("", "-wal", "-shm"):
            Path(f"{p}{suffix}").unlink(missing_ok=True)
    peer_code = (
        "import json, sys, pathlib, sqlite_utils\n"
        "db = sqlite_utils.Database(sys.argv[2])\n"
        "for f in sorted(pathlib.Path(sys.argv[1]).glob('*.jsonl')):\n"
        "    with open(f) as fh:\n"
        "        db['actions'].insert_all((json.loads(line) for line in fh), pk='action_id',"
        " alter=True, batch_size=1000)\n"
    )
    peer = measure([sys.executable, "-c", peer_code, str(folder), str(peer_db)])
    ours = measure(annotate("import", str(folder), "--db", str(db)))
    b.add(
        f"import {b.shape.n_actions // 1000}k platform actions (2,000 files)",
        ours,
        None,
        300,
        peer=peer,
        peer_name="sqlite-utils insert_all",
        ratio=0.6,
    )


TRACE_MAP = (
    "session=episode,participant=agent,action_type=action.name,content=message.text,"
    "meta.timestep=t,meta.object=action.object,meta.request=message.request,"
    "meta.verifier=verifier.feedback"
)
FLAT_MAP = "session=episode,participant=agent,action_type=type"


def trace_files(n: int) -> tuple[Path, Path]:
    """``n`` events of agent traces (issue 36) in 10 JSONL files, cached: nested as
    Collab-Overcooked logs are (action, message with a structured request, verifier
    feedback), and the same events flat (what the import read before dotted paths).
    Episodes of 200 events, two events a timestep: the chef asks for an action on an object
    every third event (the same ask again after 40: Redundant), the assistant does it next
    (corrected by the verifier one time in 17, then done again: Assisted) and then moves
    a dish."""
    digest = hashlib.sha256(inspect.getsource(trace_files).encode()).hexdigest()[:8]
    folder = SCALE_DIR / f"traces-{n}-{digest}"
    nested, flat = folder / "nested", folder / "flat"
    if folder.exists():
        return nested, flat
    partial = folder.with_suffix(f".building-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    (partial / "nested").mkdir(parents=True)
    (partial / "flat").mkdir()
    n_files, per_episode = 10, 200
    actions = ("pickup", "chop", "put_in", "cook", "plate")
    per_file = n // n_files
    for f in range(n_files):
        with (
            (partial / "nested" / f"t{f}.jsonl").open("w") as fn,
            (partial / "flat" / f"t{f}.jsonl").open("w") as ff,
        ):
            for k in range(per_file):
                i = f * per_file + k
                episode, step = divmod(i, per_episode)
                ask = step // 3
                a, o = actions[ask % 5], f"item_{ask % 40}"
                head = {"episode": f"e{episode}", "pairing": f"p{episode % 6}",
                        "level": 1 + episode % 3, "t": step // 2}  # fmt: skip
                feedback = ""
                if step % 3 == 0:
                    request = {"object": o, "action": a, "target": "assistant"}
                    text = f"assistant, please {a} {o}"
                    row = {**head, "agent": "chef", "action": None, "message": {"text": text,
                           "request": request}, "verifier": "", "recipe_relevant": True,
                           "tokens": 14}  # fmt: skip
                    flat_row = {**head, "agent": "chef", "type": "message", "content": text,
                                "timestep": step // 2, "request": request,
                                "recipe_relevant": True, "tokens": 14}  # fmt: skip
                else:
                    if step % 3 == 1 and i % 17 == 0:
                        feedback = f"{o} is not reachable"
                    if step % 3 == 2 and (i - 1) % 17 != 0:
                        a, o = "move", f"dish_{step}"
                    row = {**head, "agent": "assistant", "action": {"name": a, "object": o},
                           "message": "", "verifier": {"feedback": feedback} if feedback
                           else "", "recipe_relevant": True}  # fmt: skip
                    flat_row = {**head, "agent": "assistant", "type": a,
                                "timestep": step // 2, "object": o, "verifier": feedback,
                                "recipe_relevant": True}  # fmt: skip
                del flat_row["t"]
                fn.write(json.dumps(row) + "\n")
                ff.write(json.dumps(flat_row) + "\n")
    partial.rename(folder)
    return nested, flat


def case_trace(b: Bench) -> None:
    """Issue 36: a nested agent trace imported through dotted paths, against the same
    events flat (the import as it was), then `audit --rules tgco` over all of them."""
    n = b.shape.n_actions
    nested, flat = trace_files(n)
    dbs = {name: b.work / f"trace-{name}.db" for name in ("nested", "flat")}
    for db in dbs.values():
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
    peer = measure(annotate("import", str(flat), "--map", FLAT_MAP, "--db", str(dbs["flat"])))
    ours = measure(annotate("import", str(nested), "--map", TRACE_MAP, "--db", str(dbs["nested"])))
    b.add(
        f"import {n // 1000}k trace events (nested, --map dotted paths)",
        ours,
        None,
        400,
        peer=peer,
        peer_name="the same events flat",
        ratio=1.5,
    )
    audit = measure(annotate("audit", "--rules", "tgco", "--db", str(dbs["nested"])))
    messages = -(-n // 3)
    what = f"audit --rules tgco, {n // 1000}k events ({messages // 1000}k messages)"
    b.add(what, audit, 120, 500)


CASES: dict[str, Callable[[Bench], None]] = {
    "agree": case_agree,
    "adjudicate": case_adjudicate,
    "agree-1m": case_agree_1m,
    "adjudicate-1m": case_adjudicate_1m,
    "sample": case_sample,
    "status": case_status,
    "code": case_code,
    "report": case_report,
    "export": case_export,
    "llm-dry-run": case_llm_dry_run,
    "llm-resume": case_llm_resume,
    "import": case_import,
    "trace": case_trace,
}


def print_table(b: Bench, load: tuple[float, float]) -> None:
    print(
        f"\n{b.shape.n_actions:,} actions, sample of {b.shape.n_sample:,} items x 3 coders + "
        f"{b.shape.n_llm:,} LLM labels; {time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, "
        f"load average {load[0]:.1f} before / {load[1]:.1f} after\n"
    )
    print("| command | seconds | CPU s | peak MB | goal | met? | peer |")
    print("|---|---:|---:|---:|---|---|---|")
    for r in b.rows:
        if r.seconds is None:
            print(f"| {r.command} | | | | | | {r.note} |")
            continue
        met = "yes" if r.met else "**no**"
        cpu = f"{r.cpu:.2f}" if r.cpu is not None else ""
        print(
            f"| {r.command} | {r.seconds:.2f} | {cpu} | {r.peak_mb:.0f} | {r.goal} | {met} "
            f"| {r.peer} |"
        )
    print(
        "\nseconds: wall time of the new process, start-up included; CPU s: its user + system "
        "time (on a shared machine the wall time also holds the time it waited for a core)."
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the 100k-action file")
    parser.add_argument(
        "--only",
        action="append",
        choices=sorted(CASES),
        metavar="NAME",
        help="run only this case (repeatable): " + ", ".join(CASES),
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        metavar="N",
        help="export: N alternated runs of the shell and of each format, medians reported",
    )
    parser.add_argument("--list", action="store_true", help="list the cases")
    parser.add_argument("--build-only", action="store_true", help="build the cached files")
    parser.add_argument("--measure-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_child:
        measure_child(*json.loads(args.measure_child))
        return 0
    if args.list:
        print("\n".join(CASES))
        return 0
    shape = QUICK if args.quick else FULL
    if args.build_only:
        for s in (QUICK, FULL, AGREE_1M):
            print(cached_project(s))
        return 0
    names = args.only or [n for n in CASES if not (args.quick and n.endswith("-1m"))]
    SCALE_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-", dir=SCALE_DIR) as tmp:
        b = Bench(shape, Path(tmp), rounds=max(1, args.rounds))
        load_before = os.getloadavg()[0]
        for name in names:
            print(f"{name} ...", flush=True)
            try:
                CASES[name](b)
            except Exception as exc:  # one case failing is a finding; the others still run
                b.rows.append(Row(name, None, None, None, "", None, note=f"FAILED: {exc}"[:300]))
                print(f"  {name}: FAILED {exc}", flush=True)
        print_table(b, (load_before, os.getloadavg()[0]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
