"""Does `annotate import` store exactly what another version of the code stores?

`python benchmarks/compare_import.py [--ref main] [--folder PATH ...]` extracts the git ref
(`git archive`, into a temp dir) and imports the same inputs with it and with this checkout,
each in a new process (`python -m annotate import ...`), then compares, case by case: the
exit code, stdout and stderr (temp paths replaced), every column of `actions` with its
rowid, `imports` (but the time), the labels an import stored (but their times), and the
indexes of `actions`. Inputs: 12 generated folders of platform files (sessions over one to
three participants' files with tied times, offsets, naive and fractional times, odd
metadata, extra fields, roles or none, a copied file), each imported whole, half then all,
and at group sizes 20,000, 50 and 7 (`importing.GROUP_ROWS`); folders with a bad line, a
clashing id, a non-UTF-8 file, an empty file, a generic JSONL file sharing a session and bad
times; `../shared/platform` with and without `--role`/`--condition` and the Map Task
dialogues with their labels, when `../shared` is there; and each `--folder` (group size
20,000 only; the benchmark's 2,000-file folder takes about a minute a side).

Prints one line per case and exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
from contextlib import closing
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
REQUIRED = ("action_id", "timestamp", "session_id", "participant_id", "action_type")

RUNNER = """
import sys
from annotate.io import importing
importing.GROUP_ROWS = int(sys.argv[1])
from annotate.cli import main
sys.argv = ["annotate", *sys.argv[2:]]
main()
"""


def _stamp(rng: random.Random, second: int) -> str:
    minute, sec = divmod(second, 60)
    base = f"2026-04-10T10:{minute % 60:02d}:{sec:02d}"
    return rng.choice(
        [
            base + "Z",
            base + ".5Z",
            base + f".{rng.randint(0, 999999):06d}Z",
            base + f".{rng.randint(0, 999):03d}",
            base,
            f"2026-04-10T12:{minute % 60:02d}:{sec:02d}+02:00",
            f"2026-04-10T05:{minute % 60:02d}:{sec:02d}.25-05:00",
            base + "+00:00",
        ]
    )


def generated_folder(folder: Path, seed: int) -> Path:
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    n = 0
    files = []
    for s in range(rng.randint(3, 12)):
        roles = rng.random() < 0.5
        for p in range(rng.choice([1, 2, 2, 2, 3])):
            lines = []
            for _ in range(rng.randint(1, 60)):
                n += 1
                kind, content = rng.choice(
                    [
                        ("send_message", "hi"),
                        ("send_message", "ça va?\u2028"),
                        ("map_draw_stop", "brush_release"),
                        ("map_draw_start", "eraser"),
                        ("map_tool_click", "undo"),
                        ("map_tool_click", "Reset"),
                        ("map_tool_click", "zoom"),
                        ("page_view", None),
                        ("send_message", 7),
                    ]
                )
                line = {
                    "action_id": f"a{n}",
                    "timestamp": _stamp(rng, rng.randint(0, 40)),
                    "session_id": f"s{seed}-{s}",
                    "participant_id": f"s{s}p{p}",
                    "participant_name": rng.choice([f"P{p}", f"P{p}", "", None]),
                    "action_type": kind,
                    "action_content": content,
                    "metadata": rng.choice(
                        [
                            None,
                            {},
                            {"stroke_tool": "eraser"},
                            {"message_type": "text"},
                            {"n": 1.5, "b": True, "z": None, "u": 'é"q'},
                            {"nested": {"a": [1, 2.0, {"b": None}]}},
                        ]
                    ),
                    "session_elapsed_seconds": rng.choice([0, 3, 2.5, None, 10**20, "4"]),
                    "condition": rng.choice(["hidden", "visible", None]),
                }
                if roles:
                    line["role"] = rng.choice(["guide", "follower", None])
                if rng.random() < 0.2:
                    line["screenshot"] = f"s3://b/{n}.jpg"
                if rng.random() < 0.1:
                    line["is_human"] = True
                for key in list(line):
                    if key not in REQUIRED and rng.random() < 0.03:
                        del line[key]
                lines.append(json.dumps(line, ensure_ascii=rng.random() < 0.5))
            path = folder / f"s{s}p{p}.jsonl"
            path.write_text("\n".join(lines) + "\n")
            files.append(path)
    copy = rng.choice(files)
    (folder / f"zz-copy-{copy.name}").write_bytes(copy.read_bytes())
    return folder


def bad_folders(root: Path) -> dict[str, Path]:
    """Folders whose import stops at a file (or, with --skip-invalid, skips lines)."""
    out = {}
    for name, text in {
        "bad-json": '{"action_id": "b1", "timestamp": "2026-04-10T10:00:00Z"\n',
        "bad-times": "".join(
            json.dumps(
                {
                    "action_id": f"t{k}",
                    "timestamp": t,
                    "session_id": "s0-0",
                    "participant_id": "px",
                    "action_type": "send_message",
                }
            )
            + "\n"
            for k, t in enumerate(
                [
                    "2026-02-30T10:00:00Z",
                    "yesterday",
                    "0001-01-01T00:00:00+01:00",
                    "2026-04-10T24:00:00Z",
                    " 2026-04-10T10:00:00Z",
                    "",
                    5,
                ]
            )
        ),
        "clash": json.dumps(
            {
                "action_id": "a1",
                "timestamp": "2026-04-10T10:00:00Z",
                "session_id": "other",
                "participant_id": "px",
                "action_type": "send_message",
            }
        )
        + "\n",
        "empty": "",
    }.items():
        folder = generated_folder(root / name, 100 + len(out))
        (folder / "s1p9.jsonl").write_text(text)
        out[name] = folder
    folder = generated_folder(root / "not-utf8", 120)
    (folder / "s1p9.jsonl").write_bytes(b'{"action_id": "\xff"}\n')
    out["not-utf8"] = folder
    folder = generated_folder(root / "generic", 121)
    (folder / "s1p9.jsonl").write_text(
        json.dumps({"id": "g1", "session": "s121-0", "content": "x", "seq": 99}) + "\n"
    )
    out["generic"] = folder
    return out


def cases(root: Path, folders: list[Path]) -> list[tuple[str, int, list[list[str]]]]:
    """(name, group rows, the argument lists of one or more imports into one file)."""
    out = []
    for seed in range(1, 13):
        folder = generated_folder(root / f"gen{seed}", seed)
        files = sorted(str(f) for f in folder.iterdir())
        for rows in (20_000, 50, 7):
            out.append((f"gen{seed}", rows, [[str(folder)]]))
        out.append((f"gen{seed} half then all", 50, [files[::2], [str(folder)]]))
    for name, folder in bad_folders(root).items():
        for rows in (20_000, 50, 7):
            out.append((name, rows, [[str(folder)]]))
        out.append((f"{name} --skip-invalid", 50, [[str(folder), "--skip-invalid"]]))
    if SHARED.is_dir():
        platform = str(SHARED / "platform")
        out.append(("shared platform", 20_000, [[platform]]))
        out.append(
            (
                "shared platform, roles",
                7,
                [[platform, "--role", "Alice=guide", "--condition", "visible"]],
            )
        )
        out.append(
            (
                "maptask with labels",
                20_000,
                [
                    [
                        str(SHARED / "maptask" / "dialogues"),
                        "--labels-as",
                        "hcrc",
                        "--codebook",
                        "hcrc_moves",
                    ]
                ],
            )
        )
    for folder in folders:
        out.append((str(folder), 20_000, [[str(folder)]]))
    return out


def _dump(db: Path) -> dict[str, str]:
    """Each table as compared, hashed (1M rows are not held twice)."""
    if not db.exists():
        return {}
    queries = {
        "actions": "SELECT rowid, * FROM actions ORDER BY rowid",
        "imports": "SELECT id, path, sha256, format, n_actions, n_new FROM imports ORDER BY id",
        "labels": "SELECT action_id, question, coder, codebook, value, source FROM labels"
        " ORDER BY action_id, coder, question",
        "indexes": "SELECT name, sql FROM sqlite_master WHERE tbl_name = 'actions'"
        " AND type = 'index' ORDER BY name",
    }
    out = {}
    with closing(sqlite3.connect(db)) as conn:
        for table, sql in queries.items():
            digest = hashlib.sha256()
            count = 0
            try:
                for row in conn.execute(sql):
                    digest.update(repr(row).encode())
                    count += 1
            except sqlite3.OperationalError as exc:
                out[table] = f"error: {exc}"
                continue
            out[table] = f"{count} rows {digest.hexdigest()[:16]}"
    return out


def run_side(code: Path, root: Path, work: Path, rows: int, runs: list[list[str]]) -> dict:
    db = work / "p.db"
    outputs = []
    env = {**os.environ, "PYTHONPATH": str(code), "COLUMNS": "200", "NO_COLOR": "1"}
    env.pop("ANNOTATE_DB", None)
    for args in runs:
        proc = subprocess.run(
            [sys.executable, "-c", RUNNER, str(rows), "import", *args, "--db", str(db)],
            capture_output=True,
            text=True,
            env=env,
            cwd=work,
        )
        clean = [
            " ".join(text.replace(str(work), "WORK").replace(str(root), "ROOT").split())
            for text in (proc.stdout, proc.stderr)
        ]
        outputs.append((proc.returncode, *clean))
    return {"outputs": outputs, "tables": _dump(db)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref", default="main", help="the git ref to compare with (default main)")
    ap.add_argument("--folder", type=Path, action="append", default=[], help="also this folder")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="compare-import-") as tmp:
        tmp_path = Path(tmp)
        ref = tmp_path / "ref"
        ref.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", args.ref], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(ref)], input=archive.stdout, check=True)
        root = tmp_path / "inputs"
        differ = 0
        for name, rows, runs in cases(root, [f.resolve() for f in args.folder]):
            sides = []
            for side, code in (("ref", ref), ("this", REPO)):
                work = tmp_path / "work" / side
                work.mkdir(parents=True, exist_ok=True)
                for f in work.iterdir():
                    f.unlink()
                sides.append(run_side(code, root, work, rows, runs))
            same = sides[0] == sides[1]
            differ += not same
            codes = ",".join(str(o[0]) for o in sides[1]["outputs"])
            actions = sides[1]["tables"].get("actions", "-")
            print(
                f"{'same' if same else 'DIFFERENT'}: {name}, group {rows}, exit {codes}, {actions}"
            )
            if not same:
                for key in ("outputs", "tables"):
                    if sides[0][key] != sides[1][key]:
                        print(f"  {args.ref}: {sides[0][key]}\n  this: {sides[1][key]}")
        print(f"{differ} case(s) differ" if differ else "every case the same")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
