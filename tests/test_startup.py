"""A command imports what it needs and no more: each test runs the CLI in a new process, as a
user does, and looks at what that process imported (`annotate.cli` loads command modules
lazily from its COMMANDS table)."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

import annotate.commands
from annotate.cli import COMMANDS, app, load_commands

DEMO = Path(__file__).resolve().parents[1] / "data" / "demo"
COMMANDS_DIR = Path(annotate.commands.__file__).parent

# What only some commands need (the LLM coder, statistics, the TUI, data frames).
HEAVY = {
    "llm_coder",
    "openai",
    "asyncio",
    "numpy",
    "pandas",
    "textual",
    "pyarrow",
    "statsmodels",
    "scipy",
    "matplotlib",
    "sqlite_utils",
    "agreement",
}


def _run_in_new_process(*args: str) -> tuple[str, set[str]]:
    """`annotate ARGS` in a new interpreter: its stdout and the modules it imported."""
    code = (
        "import json, sys\n"
        "from annotate.cli import main\n"
        f"sys.argv = ['annotate', *{list(args)!r}]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    out, _, modules = r.stdout.rstrip("\n").rpartition("\n")
    return out, set(json.loads(modules))


def _top(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def _commands_loaded(modules: set[str]) -> set[str]:
    return {m.rpartition(".")[2] for m in modules if m.startswith("annotate.commands.")}


@pytest.fixture
def demo_db(cli, db_path: Path) -> Path:
    assert cli("import", str(DEMO)).exit_code == 0
    return db_path


def test_root_help_lists_every_command_and_imports_none(tmp_path: Path) -> None:
    out, modules = _run_in_new_process("--help")
    listed = [line.split()[1] for line in out.splitlines() if line.startswith("│ ")]
    assert listed[-len(COMMANDS) :] == list(COMMANDS)
    assert "List the stored samples with their sizes." in out
    assert not _commands_loaded(modules)
    assert not _top(modules) & (HEAVY | {"pydantic"})


def test_a_command_help_imports_its_module_alone() -> None:
    out, modules = _run_in_new_process("status", "--help")
    assert "What the project file holds" in out
    assert _commands_loaded(modules) == {"common", "status"}
    # neither the store nor typer's pydantic checks: --help needs neither
    assert "annotate.store" not in modules
    assert not _top(modules) & (HEAVY | {"pydantic"})


def test_status_loads_no_heavy_library(demo_db: Path) -> None:
    out, modules = _run_in_new_process("status", "--db", str(demo_db))
    assert "Sessions and actions by condition" in out and "Next:" in out
    assert _commands_loaded(modules) == {"common", "status"}
    assert not _top(modules) & HEAVY


def test_export_to_csv_loads_no_heavy_library(demo_db: Path, tmp_path: Path) -> None:
    target = tmp_path / "actions.csv"
    _, modules = _run_in_new_process(
        "export", "--what", "actions", "--out", str(target), "--db", str(demo_db)
    )
    lines = target.read_text().splitlines()
    assert lines[0].startswith("id,session,") and len(lines) > 100
    assert _commands_loaded(modules) == {"common", "export"}
    assert not _top(modules) & HEAVY
    assert "annotate.io.importers" not in modules  # export has a module of its own


def test_agree_loads_the_statistics_but_not_the_llm_or_the_screens(demo_db: Path) -> None:
    _, modules = _run_in_new_process("agree", "--help")
    assert _commands_loaded(modules) == {"common", "agree"}
    assert not _top(modules) & {"llm_coder", "openai", "asyncio", "textual", "pandas", "scipy"}


def test_the_table_lists_what_each_module_registers() -> None:
    """COMMANDS names every command once, with the module that registers it, in the order
    the commands were listed when they were registered together."""
    by_module: dict[str, list[str]] = {}
    for name, listed in COMMANDS.items():
        by_module.setdefault(listed.module, []).append(name)
    for module, names in by_module.items():
        assert list(load_commands(module)) == names, module
    registering = {p.stem for p in COMMANDS_DIR.glob("*.py") if "def register(" in p.read_text()}
    assert registering == set(by_module)


def test_each_summary_is_the_first_paragraph_of_the_command_help() -> None:
    """`annotate --help` shows the table's summaries; `annotate CMD --help` the command's own
    help: they must say the same."""
    group = typer.main.get_command(app)
    for name, listed in COMMANDS.items():
        command = group.commands[name]
        first = inspect.cleandoc(command.short_help or command.help or "").split("\n\n")[0]
        assert " ".join(first.split()) == listed.summary, name


def test_the_coding_screen_starts_without_the_statistics(cli, demo_db: Path) -> None:
    """`annotate code` up to its first item: neither NumPy nor pandas, the statistics
    (agreement, annotate.reliability), the LLM coder nor the screenshot renderer (0.2 s of
    imports together; the screen shows none of them)."""
    assert cli("sample", "--n", "20", "--seed", "1", "--name", "main").exit_code == 0
    code = (
        "import asyncio, json, sys\n"
        "from annotate.tui.app import make_app\n"
        f"app = make_app({str(demo_db)!r}, 'traum', 'ana', new_coder=True)\n"
        "async def first_item():\n"
        "    async with app.run_test(size=(100, 30)) as pilot:\n"
        "        await pilot.pause()\n"
        "        assert 'item #1' in app.screen.query_one('#context').border_title\n"
        "asyncio.run(first_item())\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    modules = set(json.loads(r.stdout.splitlines()[-1]))
    assert "textual" in _top(modules)
    heavy = {"numpy", "pandas", "agreement", "llm_coder", "openai", "scipy", "textual_image"}
    assert not _top(modules) & heavy
    assert not {m for m in modules if m.startswith("annotate.reliability")}


def _seen_while_running(spy: str, argv: list[str]) -> dict:
    """Run ``annotate ARGV`` in a new process after ``spy`` (code that fills the dict
    ``seen``, with ``gc`` imported), and return ``seen``."""
    code = (
        "import gc, json, sys\n"
        "from annotate.cli import main\n"
        "seen = {}\n"
        f"{spy}"
        f"sys.argv = {['annotate', *argv]!r}\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "print(json.dumps(seen))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.splitlines()[-1])


def test_code_builds_its_session_out_of_the_collectors_way(cli, demo_db: Path) -> None:
    """`annotate code` builds the app with the garbage collector paused, then freezes what
    it built (0.3 s of 0.8 s at start-up with 100k items: each collection scanned them all
    again), and runs the app with the collector on."""
    assert cli("sample", "--n", "20", "--seed", "1", "--name", "main").exit_code == 0
    spy = (
        "from textual.app import App\n"
        "def run(self, *args, **kwargs):\n"
        "    seen.update(on=gc.isenabled(), frozen=gc.get_freeze_count(), n=self.session.n)\n"
        "App.run = run\n"
    )
    argv = ["code", "--codebook", "traum", "--coder", "ana", "--new-coder", "--db", str(demo_db)]
    seen = _seen_while_running(spy, argv)
    assert seen["on"] and seen["n"] == 20
    assert seen["frozen"] > 10_000  # the session and every module imported to build it


def test_a_command_module_is_imported_out_of_the_collectors_way(demo_db: Path) -> None:
    """The command's module (and what it imports) is loaded with the garbage collector
    paused, then frozen (kept out of its scans); the command runs with the collector on."""
    spy = (
        "import annotate.status\n"
        "def spy(store, *args):\n"
        "    seen.update(on=gc.isenabled(), frozen=gc.get_freeze_count())\n"
        "    return real(store, *args)\n"
        "real, annotate.status.project_status = annotate.status.project_status, spy\n"
    )
    seen = _seen_while_running(spy, ["status", "--db", str(demo_db)])
    assert seen["on"]
    assert seen["frozen"] > 10_000  # the command module, the store, typer's checks...
