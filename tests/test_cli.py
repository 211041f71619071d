"""Status, export, codebooks commands and --help of every command."""

from __future__ import annotations

import inspect
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import typer.main
from typer.testing import CliRunner

from annotate.cli import app
from annotate.codebook import BUILTIN_DIR as CODEBOOKS
from tests.conftest import REPO


@pytest.fixture
def coded_db(cli, shared, db_path, tmp_path):
    cli("import", str(shared / "platform"))
    cli("sample", "--n", "20", "--seed", "3")
    from annotate.store import Store

    with Store(db_path) as s:
        ids = s.samples.sample_ids("main")
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


def test_status_next_step_is_one_command_for_the_step_not_yet_done(
    cli, coded_db, db_path, shared, tmp_path
) -> None:
    def next_step() -> str:
        return json.loads(cli("status", "--format", "json").stdout)["next"]

    on_db = f"--db {db_path}"
    assert next_step() == f"annotate agree --codebook traum --sample main {on_db}"
    assert cli("agree", "--codebook", "traum").exit_code == 0
    assert next_step() == f"annotate adjudicate --codebook traum --sample main {on_db}"
    from annotate.store import Store

    with Store(db_path) as s:
        ids = s.samples.sample_ids("main")
    gold = tmp_path / "gold.csv"
    gold.write_text("action_id,coder,value\n" + "".join(f"{i},gold,Initiate\n" for i in ids))
    assert cli("import-labels", str(gold), "--codebook", "traum").exit_code == 0
    split = "annotate split --codebook traum --sample main --shots 8 --seed 7"
    assert next_step() == f"{split} {on_db}"

    fresh = tmp_path / "fresh.db"
    assert cli("import", str(shared / "platform"), db=fresh).exit_code == 0
    status = json.loads(cli("status", "--format", "json", db=fresh).stdout)
    # only 33 exist
    assert status["next"] == f"annotate sample --n 33 --seed 7 --name main --db {fresh}"


def test_status_next_line_runs_as_pasted(tmp_path) -> None:
    """The `Next:` line names the file status was asked about (quoted), so pasted into a shell
    it works on that file; on ./annotate.db it needs no --db."""
    (tmp_path / "data").symlink_to(REPO / "data")
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("ANNOTATE_DB", None)

    def sh(line: str) -> str:
        out = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True,
                             text=True)  # fmt: skip
        assert out.returncode == 0, f"{line}: {out.stderr}"
        return out.stdout

    def pasted(status_line: str) -> str:
        lines = sh(status_line).splitlines()
        return lines[-1].removeprefix("Next:").strip()

    sh("annotate import data/demo --db 'my project.db'")
    sh("annotate import-labels data/demo_labels.csv --codebook traum --db 'my project.db'")
    first = pasted("annotate status --db 'my project.db'")
    assert first == "annotate sample --n 180 --seed 7 --name main --db 'my project.db'"
    sh(first)
    second = pasted("annotate status --db 'my project.db'")
    assert second == "annotate agree --codebook traum --sample main --db 'my project.db'"
    assert "Fleiss' kappa" in sh(second)
    sh("annotate import data/demo")
    assert pasted("annotate status") == "annotate sample --n 180 --seed 7 --name main"


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


def test_export_keeps_each_actions_meta_and_nests_json_in_json_lines(cli, tmp_path) -> None:
    """`--what actions` gives each action's meta (a generic import's extra columns, the
    screenshot reference); JSON lines nest every JSON cell (meta, gold's provenance) as
    JSON, not as a string holding JSON; CSV keeps it as the text stored."""
    log = tmp_path / "log.csv"
    log.write_text("dialogue,text,screenshot,mood\nd1,go left,shots/1.png,calm\nd1,ok,,tense\n")
    assert cli("import", str(log), "--map", "session=dialogue,content=text").exit_code == 0
    lines = cli("export", "--what", "actions", "--format", "jsonl").stdout.splitlines()
    metas = [json.loads(line)["meta"] for line in lines]
    assert [m["mood"] for m in metas] == ["calm", "tense"]
    assert metas[0]["screenshot"] == "shots/1.png"
    frame = pd.read_csv(io.StringIO(cli("export", "--what", "actions").stdout))
    assert [json.loads(m)["mood"] for m in frame["meta"]] == ["calm", "tense"]
    out = tmp_path / "actions.parquet"
    parquet = cli("export", "--what", "actions", "--format", "parquet", "--out", str(out))
    assert parquet.exit_code == 0
    assert json.loads(pd.read_parquet(out)["meta"][1])["mood"] == "tense"

    labels = tmp_path / "gold.csv"
    ids = [json.loads(line)["id"] for line in lines]
    labels.write_text("action_id,coder,value\n" + "".join(f"{i},{c},Initiate\n" for i in ids
                                                         for c in ("ana", "ben")))  # fmt: skip
    assert cli("import-labels", str(labels), "--codebook", "traum").exit_code == 0
    assert cli("adjudicate", "--codebook", "traum", "--majority-only",
               "--adjudicator", "zoe").exit_code == 0  # fmt: skip
    gold = [json.loads(line) for line in cli("export", "--what", "gold", "--format", "jsonl")
            .stdout.splitlines()]  # fmt: skip
    assert [g["meta"]["adjudicator"] for g in gold] == ["zoe", "zoe"]
    assert gold[0]["meta"]["votes"] == {"ana": "Initiate", "ben": "Initiate"}


def test_export_refuses_what_would_give_an_empty_or_lost_table(cli, coded_db, tmp_path) -> None:
    r = cli("export", "--codebook", "traun")
    assert r.exit_code == 1
    assert "--codebook: no labels of codebook 'traun' in this file" in r.stderr
    assert "codebooks with labels: traum" in r.stderr
    r = cli("export", "--coders", "ana,bob")
    assert r.exit_code == 1 and "--coders: no labels by 'bob'" in r.stderr and "ben" in r.stderr
    missing = tmp_path / "nowhere" / "labels.csv"
    r = cli("export", "--out", str(missing))
    assert r.exit_code == 1 and f"--out {missing}: folder {missing.parent} does not exist" in (
        r.stderr
    )
    out = tmp_path / "labels.csv"
    assert cli("export", "--out", str(out)).exit_code == 0
    assert len(pd.read_csv(out)) == 30
    assert not list(tmp_path.glob(".*.partial"))  # written beside, then renamed


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


def test_codebooks_show_and_list_with_db_read_the_versions_stored(
    cli, tmp_path, monkeypatch, db_path
) -> None:
    """`--db`, as on every other command: the version the project's labels were made under,
    also after the file changed; without it, the file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "codebooks").mkdir()
    mine = tmp_path / "codebooks" / "mine.yaml"
    text = (CODEBOOKS / "traum.yaml").read_text().replace("name: traum", "name: mine", 1)
    mine.write_text(text)
    assert cli("import", str(REPO / "data" / "demo")).exit_code == 0
    labels = tmp_path / "l.csv"
    labels.write_text("".join(
        line for line in (REPO / "data" / "demo_labels.csv").read_text().splitlines(True)[:4]
    ))  # fmt: skip
    assert cli("import-labels", str(labels), "--codebook", "mine").exit_code == 0
    mine.write_text(text.replace('title: "Traum grounding acts"', 'title: "Renamed acts"'))

    stored = cli("codebooks", "show", "mine").stdout  # the cli fixture passes --db
    assert stored.startswith("Traum grounding acts (mine v1.1, hash ")
    assert cli("codebooks", "show", "mine", db=None).stdout.startswith("Renamed acts (mine v1.1")
    listed = json.loads(cli("codebooks", "list", "--format", "json").stdout)
    assert [(c["name"], c["title"], c["labels"]) for c in listed] == [
        ("mine", "Traum grounding acts", 3)
    ]
    r = cli("codebooks", "show", "traum")
    assert r.exit_code == 1 and "codebook 'traum' is not in this database" in r.stderr


def test_codebooks_validate_reports_every_mistake_of_every_file(cli, tmp_path, monkeypatch):
    two_mistakes = tmp_path / "two.yaml"
    two_mistakes.write_text(
        "name: two\ntitle: T\nversion: '1'\nquestions:\n  - id: q\n    prompt: p\n"
        "    options:\n      - {code: a, label: A, key: '1'}\n"
        "      - {code: a, label: B, key: '1'}\n"
    )
    renamed = tmp_path / "traum_copy.yaml"
    renamed.write_text((CODEBOOKS / "traum.yaml").read_text())
    good = CODEBOOKS / "traum.yaml"
    r = cli("codebooks", "validate", str(two_mistakes), str(renamed), str(good), db=None)
    assert r.exit_code == 1
    assert "error: two.yaml: questions[0].options[1].code: duplicate code 'a'" in r.stderr
    assert "error: two.yaml: questions[0].options[1].key: duplicate key '1'" in r.stderr
    assert "error: traum_copy.yaml: name: 'traum' differs from the file name" in r.stderr
    assert "traum.yaml: ok" in r.stdout and "2 of 3 file(s) have mistakes" in r.stderr

    # `list` names a bad file in ./codebooks and still lists the rest
    monkeypatch.chdir(tmp_path)
    (tmp_path / "codebooks").mkdir()
    two_mistakes.rename(tmp_path / "codebooks" / "two.yaml")
    r = cli("codebooks", "list", "--format", "json", db=None)
    assert r.exit_code == 0 and "skipped" in r.stderr and "two.yaml" in r.stderr
    assert {c["name"] for c in json.loads(r.stdout)} >= {"traum", "mental_model"}


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


def _option_rows(name: tuple[str, ...]) -> list[list[str]]:
    """The words of each line of `annotate NAME --help`, after the panel's border."""
    r = CliRunner().invoke(app, [*name, "--help"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, (name, r.output)
    assert "<bool>" not in r.stdout, name
    return [line.split()[1:] for line in r.stdout.splitlines() if line.startswith("│")]


def test_help_shows_no_type_after_a_flag() -> None:
    """A flag takes no value: no ``<bool>`` after it, in every command, group and the root."""
    group = typer.main.get_command(app)
    for name in [(), ("codebooks",), *_commands(group)]:
        assert ["--help", "Show", "this", "message", "and", "exit.", "│"] in _option_rows(name)
    agree = _option_rows(("agree",))
    assert ["--runs", "List", "the", "stored", "runs.", "│"] in agree
    assert ["--ci", "<float>", "Confidence", "level", "of", "the", "intervals.", "│"] in agree
    assert ["--version", "Show", "the", "version", "and", "exit.", "│"] in _option_rows(())


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
