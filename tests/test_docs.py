"""README and every page of docs/ are a contract: every command in their ``sh`` blocks runs
here, page by page, in order, as written.

Each page starts in a fresh empty folder with its own project file (``annotate.db``), laid out
as the pages assume: the repo's ``data/`` at ``data/`` and the shared data at ``../shared``
(the Map Task corpus cut to a few dialogues, so that labelling "the rest" stays quick). Each
line runs in its own ``bash -c`` in that folder (a line ending in a backslash goes on on the next
one), so only ``export NAME=VALUE`` lines carry over to the lines after them; ``cd`` would do
nothing and is refused. The files a user brings (``log.csv``, ``codings.csv`` ...) are
written by :data:`USER_FILES` just before the first line that names them.
``export OPENAI_BASE_URL=...`` points at the project's chat server (``tests/chat_server.py``),
answering the gold (or expert) answer of each item: the real llama.cpp server runs the same commands
in ``tests/test_llm_real_server.py``. Lines that cannot run here are listed in :data:`NOT_RUN`
with the reason; vLLM's ``run_batch`` is stood in for by a writer of its documented output
(:func:`run_batch_stand_in`); any other line must exit 0.

The site itself is built with ``mkdocs build --strict`` (a warning, such as a broken link, is
an error), and the CLI reference it generates (``docs/hooks/cli_reference.py``) is checked to
name every command.
"""

from __future__ import annotations

import csv
import importlib.util
import os
import re
import shlex
import sqlite3
import subprocess
import sys
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest

from annotate.codebook import find_codebook
from tests.chat_server import ServerState, question_ids
from tests.conftest import REPO, SHARED
from tests.llm_fixtures import running_chat_server
from tests.test_llm_batch import run_offline

README = REPO / "README.md"
DOCS = REPO / "docs"
SH_BLOCK = re.compile(r"^( *)```sh\n(.*?)^\1```$", re.M | re.S)
DIALOGUES = ("q1ec1.txt", "q8nc2.txt", "q4ec1.txt", "q3ec6.txt", "q1nc3.txt", "q2nc1.txt")
CODERS = ("ana", "ben", "caro")

NOT_RUN: dict[str, str] = {
    "make demo": "a set-up command: its annotate lines run in test_make_demo_runs_as_written",
    "make test": "a set-up command: the test suite itself (.ci/run)",
    "make docs": "a set-up command: the site's build runs in test_site_builds_without_warnings",
    "annotate code": "interactive: the coding screen is tested through Textual's pilot",
    "annotate adjudicate": "interactive without --majority-only: tested through the pilot",
    "pip install": "the local server's install: ../shared/llm/serve.sh provides one",
    "python -m llama_cpp.server": "the local server: ../shared/llm/serve.sh provides one",
}


def pages() -> list[Path]:
    """README and every Markdown page of docs/, README first."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def page_id(page: Path) -> str:
    return str(page.relative_to(REPO))


@dataclass(frozen=True)
class Line:
    page: str
    number: int
    text: str

    @property
    def words(self) -> list[str]:
        return shlex.split(self.text, comments=True)

    def __str__(self) -> str:
        return f"{self.page}:{self.number}: {self.text.strip()}"


def sh_lines(text: str, page: str = "README.md") -> Iterator[Line]:
    """The command lines of every ``sh`` block, in order; a line ending in ``\\`` is joined
    with the next (the line keeps the number of its first part)."""
    for block in SH_BLOCK.finditer(text):
        first = text.count("\n", 0, block.start(2)) + 1
        indent = len(block.group(1))
        pending: tuple[int, str] | None = None
        for offset, raw in enumerate(block.group(2).splitlines()):
            number, part = first + offset, raw[indent:]
            if pending is not None:
                number, part = pending[0], pending[1] + " " + part.lstrip()
            if part.endswith("\\"):
                pending = (number, part[:-1].rstrip())
                continue
            pending = None
            line = Line(page, number, part)
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


def lay_out(tmp_path: Path) -> Path:
    """A fresh empty folder holding data/ and, beside it, ../shared (Map Task cut)."""
    if not SHARED.is_dir():
        pytest.skip("../shared (real Map Task and platform data) is not beside this checkout")
    work = tmp_path / "work"
    work.mkdir()
    (work / "data").symlink_to(REPO / "data")
    shared = tmp_path / "shared"
    shared.mkdir()
    for entry in SHARED.iterdir():
        if entry.name != "maptask":
            (shared / entry.name).symlink_to(entry)
    dialogues = shared / "maptask" / "dialogues"
    dialogues.mkdir(parents=True)
    for name in DIALOGUES:
        (dialogues / name).symlink_to(SHARED / "maptask" / "dialogues" / name)
    return work


def gold_by_text(db: Path, codebook: str | None) -> dict[str, tuple[str, str | None]]:
    """The reference answer (code, Other's text) of each item's text, as the chat server
    gives it: the adjudicated gold of the codebook, else a corpus coding (``hcrc``)."""
    if not db.exists() or codebook is None:
        return {}
    rows = query(
        db,
        "SELECT a.content, l.value, l.other_text FROM labels l "
        "JOIN actions a ON a.id = l.action_id "
        f"WHERE l.coder IN ('gold', 'hcrc') AND l.codebook = '{codebook}' "
        "ORDER BY l.coder = 'gold'",
    )
    return {" ".join((text or "").split()): (value, other) for text, value, other in rows}


def answer_like_gold(gold: dict[str, tuple[str, str | None]]) -> Callable[[str, dict], dict]:
    """The chat server's answer to an item: its text's gold, else the commonest gold code."""
    codes = Counter(code for code, _ in gold.values())
    fallback = (codes.most_common(1)[0][0] if codes else "acknowledge", None)

    def answer(text: str, body: dict) -> dict:
        code, other = gold.get(text, fallback)
        if code == "other" and not other:
            other = "as the gold has it"
        return {qid: {"code": code, "other_text": other} for qid in question_ids(body)}

    return answer


def option(words: list[str], name: str) -> str | None:
    """The value of ``--name VALUE`` on a command line."""
    return words[words.index(name) + 1] if name in words[:-1] else None


def run_page(page: Path, work: Path) -> tuple[list[Line], list[str]]:
    """Every line of the page's sh blocks, in order: (the lines run, the NOT_RUN prefixes)."""
    lines = list(sh_lines(page.read_text(), page_id(page)))
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANNOTATE_"))
    } | {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "COLUMNS": "80",
        "NO_COLOR": "1",
    }
    state = ServerState(keep_bodies=False)
    ran: list[Line] = []
    not_run: list[str] = []
    with running_chat_server(state) as server:
        for line in lines:
            words = line.words
            if words[0] == "export":
                for assignment in words[1:]:
                    name, _, value = assignment.partition("=")
                    env[name] = server.base_url if name == "OPENAI_BASE_URL" else value
                continue
            assert words[0] != "cd", f"{line}: each line runs in its own shell; cd does nothing"
            if (prefix := not_run_prefix(words)) is not None:
                not_run.append(prefix)
                continue
            if words[:3] == ["python", "-m", VLLM_RUN_BATCH]:
                run_batch_stand_in(work, words, state)
                continue
            for name, write in USER_FILES.items():
                if name in words and not (work / name).exists():
                    write(work)
            if "llm-label" in words:
                db = work / (option(words, "--db") or "annotate.db")
                state.answer_for = answer_like_gold(gold_by_text(db, option(words, "--codebook")))
            out = subprocess.run(
                ["bash", "-c", line.text],
                cwd=work,
                env=env,
                capture_output=True,
                text=True,
                timeout=900,
            )
            assert out.returncode == 0, f"{line}\nexit {out.returncode}\n{out.stdout}{out.stderr}"
            ran.append(line)
    return ran, not_run


def readme_made_its_files(work: Path) -> None:
    """The tour ends with the user's labels exported for analysis."""
    assert query(work / "annotate.db", "SELECT count(*) FROM actions")[0][0] > 0
    assert (work / "labels.csv").stat().st_size > 0


# What a page leaves behind, checked after its last line (beyond every line's exit 0).
AFTER: dict[str, Callable[[Path], None]] = {"README.md": readme_made_its_files}

RUNNABLE = [p for p in pages() if any(True for _ in sh_lines(p.read_text()))]


@pytest.mark.parametrize("page", RUNNABLE, ids=page_id)
def test_page_runs_as_written(page: Path, tmp_path: Path):
    work = lay_out(tmp_path)
    ran, not_run = run_page(page, work)
    assert ran or not_run
    if (check := AFTER.get(page_id(page))) is not None:
        check(work)


def test_every_not_run_reason_covers_a_line():
    """A reason in NOT_RUN that covers no line of any page is stale."""
    covered = {
        not_run_prefix(line.words)
        for page in pages()
        for line in sh_lines(page.read_text(), page_id(page))
    }
    assert set(NOT_RUN) <= covered, f"cover no line: {sorted(set(NOT_RUN) - covered)}"


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


# -- the site ---------------------------------------------------------------------------


def load_hook() -> object:
    spec = importlib.util.spec_from_file_location(
        "cli_reference", DOCS / "hooks" / "cli_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_site_builds_without_warnings(tmp_path: Path):
    """`mkdocs build --strict`: a broken link or anchor, or a page in nav that is missing,
    fails the build (and so `make test`)."""
    out = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO,
        env=os.environ | {"NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "reference" / "cli" / "index.html").is_file()
    for page in pages()[1:]:
        if page.parent.name != "hooks":
            html = tmp_path / page.relative_to(DOCS).with_suffix("") / "index.html"
            if page.name == "index.md":
                html = tmp_path / page.relative_to(DOCS).with_name("index.html")
            assert html.is_file(), f"{page_id(page)} was not built"


def test_cli_reference_has_every_command_and_option():
    """The generated reference names every command, subcommand and option of --help."""
    import typer
    import typer._click as click

    from annotate.cli import COMMANDS, app

    text = load_hook().cli_reference()
    root = typer.main.get_command(app)
    ctx = click.Context(root, info_name="annotate")
    headings = re.findall(r"^#+ `annotate ([a-z -]+)`$", text, re.M)
    assert [h for h in headings if " " not in h] == list(COMMANDS)

    def check(name: str, command: object) -> None:
        assert name in headings
        for param in command.params:  # type: ignore[attr-defined]
            for opt in param.opts if param.param_type_name == "option" else ():
                assert f"`{opt}`" in text, f"annotate {name} {opt}"
        if hasattr(command, "list_commands"):
            for sub in command.list_commands(ctx):
                check(f"{name} {sub}", command.get_command(ctx, sub))

    for name in COMMANDS:
        check(name, root.get_command(ctx, name))


def test_project_file_page_names_every_table(tmp_path: Path):
    """docs/reference/project-file.md describes every table and view a project file has."""
    (tmp_path / "data").symlink_to(REPO / "data")
    run_annotate(tmp_path, ["import", "data/demo", "--db", "blank.db"])  # every migration run
    names = [
        name
        for (name,) in query(
            tmp_path / "blank.db",
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
            "AND name NOT LIKE 'sqlite_%'",
        )
    ]
    page = (DOCS / "reference" / "project-file.md").read_text()
    assert [n for n in names if f"`{n}`" not in page] == []


def test_readme_is_a_short_front_door():
    text = README.read_text()
    assert len(text.splitlines()) <= 150
    assert len(text.split()) <= 1600
    links = re.findall(r"\]\(((?:docs|benchmarks)/[^)#]+)", text)
    assert len(links) >= 10
    assert [link for link in links if not (REPO / link).is_file()] == []


def test_help_lists_the_commands_in_the_workflows_order():
    """`annotate --help` lists the commands in the order of the workflow table of
    docs/index.md: import first, then sample, code, agree, gold, the LLM, report, export."""
    out = subprocess.run(
        [sys.executable, "-m", "annotate", "--help"],
        capture_output=True,
        text=True,
        env=os.environ | {"COLUMNS": "100", "NO_COLOR": "1"},
    )
    listed = re.findall(r"^│ ([a-z][a-z-]+) ", out.stdout.split("Commands", 1)[1], re.M)
    table = [row for row in (DOCS / "index.md").read_text().splitlines() if row.startswith("| ")]
    workflow = [name for row in table for name in re.findall(r"`annotate ([a-z-]+)`", row)]
    assert listed == workflow


def test_benchmarks_page_is_the_current_table_with_its_history_beside():
    """benchmarks/README.md: the current figures (each row with its goal, and a date and
    commit), short; the notebook's history in dated files it links to."""
    page = REPO / "benchmarks" / "README.md"
    text = page.read_text()
    assert len(text.split()) <= 2000
    links = re.findall(r"\]\((history/[^)]+)\)", text)
    assert links and all((page.parent / link).is_file() for link in links)
    history = sorted((page.parent / "history").glob("*.md"))
    assert {f"history/{p.name}" for p in history} <= set(links)
    assert all(re.match(r"\d{4}-\d\d-\d\d-", p.name) for p in history)
    rows = [r for r in text.splitlines() if r.startswith("| ") and not r.startswith("| figure")]
    dated = [r for r in rows if re.search(r"\| 20\d\d-\d\d-\d\d \| [0-9a-f]{7} \|", r)]
    assert len(rows) >= 30 and len(dated) >= 15
