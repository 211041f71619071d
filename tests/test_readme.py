"""The README is a contract: every command in its ``sh`` blocks runs here, in order, as written.

Each line runs in its own ``bash -c`` in a temp folder laid out as the README assumes: the
demo data at ``data/demo``, real data at ``../shared`` (the Map Task corpus cut to a few
dialogues, so that labelling "the rest" stays quick), and the files a user brings
(``log.csv``, ``codings.csv`` ...) written by :data:`USER_FILES` just before the line that
needs them. ``export OPENAI_BASE_URL=...`` points at the project's chat server
(``tests/chat_server.py``), answering the expert move of each utterance: the real llama.cpp
server runs the same commands in ``tests/test_llm_real_server.py``. Lines that cannot run
here are listed in :data:`NOT_RUN` with the reason; vLLM's ``run_batch`` is stood in for by a
writer of its documented output (:func:`run_batch_stand_in`); any other line must exit 0.
"""

from __future__ import annotations

import csv
import os
import re
import shlex
import sqlite3
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest

from annotate.codebook import find_codebook
from tests.chat_server import ServerState
from tests.conftest import REPO, SHARED
from tests.llm_fixtures import running_chat_server
from tests.test_llm_batch import run_offline

README = REPO / "README.md"
SH_BLOCK = re.compile(r"^( *)```sh\n(.*?)^\1```$", re.M | re.S)
DIALOGUES = ("q1ec1.txt", "q8nc2.txt", "q4ec1.txt", "q3ec6.txt", "q1nc3.txt", "q2nc1.txt")
CODERS = ("ana", "ben", "caro")

NOT_RUN: dict[str, str] = {
    "make demo": "a set-up command: its annotate lines run in test_make_demo_runs_as_written",
    "make test": "a set-up command: the test suite itself (.ci/run)",
    "annotate code": "interactive: the coding screen is tested through Textual's pilot",
    "annotate adjudicate": "interactive without --majority-only: tested through the pilot",
    "pip install": "the local server's install: ../shared/llm/serve.sh provides one",
    "python -m llama_cpp.server": "the local server: ../shared/llm/serve.sh provides one",
}


@dataclass(frozen=True)
class Line:
    number: int
    text: str

    @property
    def words(self) -> list[str]:
        return shlex.split(self.text, comments=True)

    def __str__(self) -> str:
        return f"README.md:{self.number}: {self.text.strip()}"


def sh_lines(text: str) -> Iterator[Line]:
    for block in SH_BLOCK.finditer(text):
        first = text.count("\n", 0, block.start(2)) + 1
        indent = len(block.group(1))
        for offset, raw in enumerate(block.group(2).splitlines()):
            line = Line(first + offset, raw[indent:])
            if line.words:
                yield line


def not_run_prefix(words: list[str]) -> str | None:
    """The :data:`NOT_RUN` entry that covers this line, if any."""
    if words[:2] == ["annotate", "adjudicate"] and "--majority-only" in words:
        return None
    for prefix in NOT_RUN:
        if words[: len(prefix.split())] == prefix.split():
            return prefix
    return None


# -- the files a user brings ------------------------------------------------------------


def query(db: Path, sql: str) -> list[tuple]:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute(sql).fetchall()


def pick(key: str, options: tuple[str, ...] | list[str]) -> str:
    return options[zlib.crc32(key.encode()) % len(options)]


def coder_answer(action_id: str, coder: str, codes: list[str]) -> str:
    """A coder agrees with the item's 'true' code on about 4 items in 5."""
    if zlib.crc32(f"{action_id}/{coder}".encode()) % 5 == 0:
        return pick(f"{action_id}/{coder}/slip", codes)
    return pick(action_id, codes)


def write_log_csv(work: Path) -> None:
    rows = [
        ("d1", "guide", "start at the well"),
        ("d1", "follower", "ok"),
        ("d1", "guide", "now go left of the lake"),
        ("d2", "guide", "head north"),
        ("d2", "follower", "past the mill?"),
        ("d2", "guide", "yes"),
    ]
    with (work / "log.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["dialogue", "speaker", "text"])
        w.writerows(rows)


def write_codings_csv(work: Path) -> None:
    """Three coders' traum codes of every message, draw and erase in the file."""
    codes = [c for c in find_codebook("traum").codebook.questions[0].codes if c != "other"]
    ids = query(
        work / "annotate.db",
        "SELECT id FROM actions WHERE action_type IN ('message', 'draw', 'erase') ORDER BY id",
    )
    with (work / "codings.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["action_id", "coder", "question", "value"])
        for (aid,) in ids:
            for coder in CODERS:
                w.writerow([aid, coder, "act", coder_answer(aid, coder, codes)])


def write_fixes_csv(work: Path) -> None:
    """ana's second thoughts on two of her traum answers."""
    codes = [c for c in find_codebook("traum").codebook.questions[0].codes if c != "other"]
    rows = query(
        work / "annotate.db",
        "SELECT action_id, value FROM labels WHERE coder = 'ana' AND question = 'act' "
        "ORDER BY action_id LIMIT 2",
    )
    assert len(rows) == 2
    with (work / "fixes.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["action_id", "coder", "question", "value"])
        for aid, value in rows:
            w.writerow([aid, "ana", "act", codes[(codes.index(value) + 1) % len(codes)]])


def write_survey_csv(work: Path) -> None:
    """Three coders' mental-model answers (Q1-Q4) for every action the survey applies to."""
    book = find_codebook("mental_model").codebook
    types = "', '".join(book.applies_to) if book.applies_to else None
    where = f"WHERE action_type IN ('{types}')" if types else ""
    ids = query(work / "annotate.db", f"SELECT id, action_type FROM actions {where} ORDER BY id")
    with (work / "survey.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["action_id", "coder", "question", "value", "codes"])
        for aid, action_type in ids:
            for q in book.questions_for(action_type):
                for coder in CODERS:
                    if q.kind == "yes_no_reasons":
                        value = coder_answer(aid + q.id, coder, ["yes", "no"])
                        reasons = [c for c in q.set_codes if c != "other"]
                        codes = pick(aid + coder, reasons) if value == "no" else ""
                        w.writerow([aid, coder, q.id, value, codes])
                    else:
                        codes = [c for c in q.codes if c != "other"]
                        w.writerow([aid, coder, q.id, coder_answer(aid + q.id, coder, codes), ""])


def write_my_yaml(work: Path) -> None:
    text = (REPO / "codebooks" / "traum.yaml").read_text()
    (work / "my.yaml").write_text(text.replace("name: traum", "name: my", 1))


def write_coder_files(work: Path) -> None:
    """Two coders who coded the demo data in files of their own."""
    codes = [c for c in find_codebook("traum").codebook.questions[0].codes if c != "other"]
    for coder, db in (("dana", "coder_a.db"), ("eli", "coder_b.db")):
        run_annotate(work, ["import", "data/demo", "--db", db])
        ids = query(work / db, "SELECT id FROM actions WHERE action_type = 'message'")
        labels = work / f"{coder}.csv"
        with labels.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["action_id", "coder", "question", "value"])
            w.writerows([aid, coder, "act", coder_answer(aid, coder, codes)] for (aid,) in ids)
        run_annotate(work, ["import-labels", labels.name, "--codebook", "traum", "--db", db])


USER_FILES: dict[str, Callable[[Path], None]] = {
    "log.csv": write_log_csv,
    "codings.csv": write_codings_csv,
    "survey.csv": write_survey_csv,
    "fixes.csv": write_fixes_csv,
    "my.yaml": write_my_yaml,
    "coder_a.db": write_coder_files,
}


def run_annotate(work: Path, args: list[str]) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "annotate", *args], cwd=work, capture_output=True, text=True
    )
    assert out.returncode == 0, f"annotate {' '.join(args)}: {out.stderr}"


# -- vLLM's run_batch (a GPU program) ---------------------------------------------------

VLLM_RUN_BATCH = "vllm.entrypoints.openai.run_batch"


def run_batch_stand_in(work: Path, words: list[str], state: ServerState) -> None:
    """``run_batch -i IN -o OUT``: the documented output lines (tests/test_llm_batch.py),
    each answered as the chat server answers the same request."""
    args = dict(zip(words[3::2], words[4::2], strict=False))
    run_offline(state, work / args["-i"], work / args["-o"])


# -- the walk ---------------------------------------------------------------------------


@pytest.fixture
def work(tmp_path: Path) -> Path:
    if not SHARED.is_dir():
        pytest.skip("../shared (real Map Task and platform data) is not beside this checkout")
    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    (work / "data" / "demo").symlink_to(REPO / "data" / "demo")
    for name in ("demo_self_reports.jsonl", "demo_self_report_mapping.yaml"):
        (work / "data" / name).symlink_to(REPO / "data" / name)
    (work / "data" / "demo_self").symlink_to(REPO / "data" / "demo_self")
    dialogues = tmp_path / "shared" / "maptask" / "dialogues"
    dialogues.mkdir(parents=True)
    for name in DIALOGUES:
        (dialogues / name).symlink_to(SHARED / "maptask" / "dialogues" / name)
    (tmp_path / "shared" / "platform").symlink_to(SHARED / "platform")
    return work


def gold_by_text(db: Path) -> dict[str, str]:
    rows = query(
        db,
        "SELECT a.content, l.value FROM labels l JOIN actions a ON a.id = l.action_id "
        "WHERE l.coder = 'hcrc'",
    )
    return {" ".join((text or "").split()): value for text, value in rows}


def test_readme_runs_as_written(work: Path):
    lines = list(sh_lines(README.read_text()))
    assert len(lines) > 20
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANNOTATE_"))
    } | {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "COLUMNS": "80",
        "NO_COLOR": "1",
    }
    state = ServerState(keep_bodies=False)
    ran, not_run = [], []
    with running_chat_server(state) as server:
        for line in lines:
            words = line.words
            if words[0] == "export":
                for assignment in words[1:]:
                    name, _, value = assignment.partition("=")
                    env[name] = server.base_url if name == "OPENAI_BASE_URL" else value
                continue
            if (prefix := not_run_prefix(words)) is not None:
                not_run.append(prefix)
                continue
            if words[:3] == ["python", "-m", VLLM_RUN_BATCH]:
                run_batch_stand_in(work, words, state)
                continue
            assert words[0] == "annotate", f"{line}: the README test cannot run this line"
            for name, write in USER_FILES.items():
                if name in words and not (work / name).exists():
                    write(work)
            if "llm-label" in words:
                gold = gold_by_text(work / "annotate.db")
                state.label_for = lambda text, body, gold=gold: gold.get(text, "acknowledge")
            out = subprocess.run(
                ["bash", "-c", line.text], cwd=work, env=env, capture_output=True, text=True
            )
            assert out.returncode == 0, f"{line}\nexit {out.returncode}\n{out.stdout}{out.stderr}"
            ran.append(line)
    assert set(not_run) == set(NOT_RUN), "a reason in NOT_RUN covers no README line: drop it"
    assert (work / "reliability.md").read_text().startswith("#")
    assert (work / "labels.csv").stat().st_size > 0
    assert len(ran) >= 25


def test_first_screen_has_the_two_set_up_commands():
    first = next(sh_lines(README.read_text()))
    block = README.read_text().split("```sh\n", 1)[1].split("```", 1)[0]
    assert [shlex.split(x, comments=True) for x in block.splitlines()] == [
        ["make", "demo"],
        ["make", "test"],
    ]
    assert first.number < 12  # on the first screen


def test_make_demo_runs_as_written(tmp_path: Path):
    """`make demo`'s annotate lines, as the Makefile has them (without building .venv)."""
    recipe = re.search(r"^demo:.*\n((?:\t.*\n)+)", (REPO / "Makefile").read_text(), re.M)
    assert recipe is not None
    (tmp_path / "data").symlink_to(REPO / "data")
    lines = [
        line.strip().replace("$(BIN)/annotate", "annotate").replace("$(DEMO_DB)", "demo.db")
        for line in recipe.group(1).splitlines()
        if "$(BIN)/annotate" in line
    ]
    assert len(lines) >= 5
    for line in lines:
        run_annotate(tmp_path, shlex.split(line)[1:])
    assert (tmp_path / "demo_report").is_dir()
