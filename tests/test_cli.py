"""Status, export, codebooks commands and --help of every command."""

from __future__ import annotations

import inspect
import io
import json
import subprocess
import sys

import pandas as pd
import pytest
import typer.main
from typer.testing import CliRunner

from annotate.cli import app


@pytest.fixture
def coded_db(cli, shared, db_path, tmp_path):
    cli("import", str(shared / "platform"))
    cli("sample", "--n", "20", "--seed", "3")
    from annotate.store import Store

    with Store(db_path) as s:
        ids = s.sample_ids("main")
    rows = (
        ["action_id,coder,value"]
        + [f"{i},ana,Initiate" for i in ids]
        + [f"{i},ben,{'Initiate' if k % 2 else 'Continue'}" for k, i in enumerate(ids[:10])]
    )
    f = tmp_path / "l.csv"
    f.write_text("\n".join(rows) + "\n")
    assert cli("import-labels", str(f), "--codebook", "traum").exit_code == 0
    return db_path


def test_status_tells_where_you_are(cli, coded_db) -> None:
    r = cli("status", "--format", "json")
    assert r.exit_code == 0, r.output
    status = json.loads(r.stdout)
    assert status["actions"] == 33
    assert [s["name"] for s in status["samples"]] == ["main"]
    progress = {p["coder"]: p for p in status["progress"]}
    assert (progress["ana"]["coded"], progress["ana"]["n"]) == (20, 20)
    assert progress["ben"]["coded"] == 10
    assert status["codebooks"][0]["name"] == "traum"
    assert status["next"].startswith("annotate agree --codebook traum")
    table = cli("status").stdout
    assert "Coding progress" in table and "10/20" in table and "Next:" in table


def test_status_on_empty_project_points_to_import(cli, db_path) -> None:
    cli("import", "--help")
    r = cli("status")
    assert r.exit_code == 1 and "no such database" in r.stderr


def test_export_labels_joined_with_actions(cli, coded_db, tmp_path) -> None:
    r = cli("export", "--what", "labels", "--format", "csv")
    frame = pd.read_csv(io.StringIO(r.stdout))
    assert len(frame) == 30
    assert {"action_id", "coder", "question", "value", "session", "role", "content"} <= set(frame)
    out = tmp_path / "labels.parquet"
    assert cli("export", "--format", "parquet", "--out", str(out), "--coders", "ben").exit_code == 0
    assert len(pd.read_parquet(out)) == 10
    actions = cli("export", "--what", "actions", "--format", "jsonl", "--sample", "main").stdout
    assert len(actions.strip().splitlines()) == 20
    r = cli("export", "--format", "parquet")
    assert r.exit_code == 1 and "--format parquet needs --out FILE" in r.stderr


def test_codebooks_commands(cli, tmp_path) -> None:
    listed = cli("codebooks", "list", "--format", "json", db=None)
    assert {c["name"] for c in json.loads(listed.stdout)} >= {"traum", "mental_model", "hcrc_moves"}
    shown = cli("codebooks", "show", "mental_model", db=None).stdout
    assert "At this moment, my partner and I were on the same page:" in shown
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: x\ntitle: X\nversion: '1'\nquestions:\n  - id: q\n    prompt: p\n"
        "    options:\n      - {code: a, label: A, key: '1'}\n"
        "      - {code: b, label: B, key: '1'}\n"
    )
    r = cli("codebooks", "validate", str(bad), db=None)
    assert r.exit_code == 1
    assert "error: bad.yaml: questions[0].options[1].key: duplicate key '1'" in r.stderr
    r = cli("codebooks", "show", "nosuch", db=None)
    assert r.exit_code == 1 and "unknown codebook 'nosuch'" in r.stderr and "traum" in r.stderr


def _commands(group, prefix=()):
    for name, cmd in group.commands.items():
        if hasattr(cmd, "commands"):
            yield from _commands(cmd, (*prefix, name))
        else:
            yield (*prefix, name)


def test_every_command_has_complete_help() -> None:
    group = typer.main.get_command(app)
    names = list(_commands(group))
    assert len(names) >= 9
    for name in names:
        r = CliRunner().invoke(app, [*name, "--help"], env={"COLUMNS": "120"})
        assert r.exit_code == 0, (name, r.output)
        assert "Usage:" in r.stdout
        cmd = group
        for part in name:
            cmd = cmd.commands[part]
        assert cmd.help and cmd.help.strip(), f"{name} has no help text"
        for param in cmd.params:
            if (
                param.name not in {"help"}
                and getattr(param, "help", "x") is None
                and param.param_type_name == "option"
            ):
                pytest.fail(f"{' '.join(name)} {param.opts[0]} has no help")


def test_help_paragraphs_reflow_to_the_terminal_width() -> None:
    """A docstring's hard line breaks must not reach the screen: each paragraph is one line
    in a terminal wide enough to hold it."""
    group = typer.main.get_command(app)
    for name in _commands(group):
        cmd = group
        for part in name:
            cmd = cmd.commands[part]
        r = CliRunner().invoke(app, [*name, "--help"], env={"COLUMNS": "1000"})
        lines = [" ".join(line.split()) for line in r.stdout.splitlines()]
        for paragraph in inspect.cleandoc(cmd.help or "").split("\n\n"):
            text = " ".join(paragraph.replace("`", "").split())
            assert any(text in line for line in lines), (name, text)


def test_python_dash_m_runs_the_cli() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "annotate", "--version"], capture_output=True, text=True
    )
    assert r.returncode == 0 and r.stdout.startswith("annotate ")
