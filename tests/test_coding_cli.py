"""`annotate code` refuses to start with a clear one-line error and the choices."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.test_coding_support import DEMO, REPO, project


@pytest.fixture
def demo_db(tmp_path):
    return project(tmp_path)


def _err(result) -> str:
    return result.stderr if hasattr(result, "stderr") else result.output


def test_unknown_codebook_lists_choices(cli, demo_db) -> None:
    r = cli("code", "--codebook", "traumm", "--coder", "dora", "--db", str(demo_db), db=None)
    assert r.exit_code == 1
    assert "error: unknown codebook 'traumm'" in _err(r)
    assert "traum" in _err(r) and "mental_model" in _err(r)


def test_reserved_and_case_clash_coders(cli, demo_db) -> None:
    r = cli("code", "--codebook", "traum", "--coder", "gold", "--db", str(demo_db), db=None)
    assert r.exit_code == 1 and "reserved" in _err(r) and "existing coders: none yet" in _err(r)
    r = cli(
        "import-labels",
        str(REPO / "data" / "demo_labels.csv"),
        "--codebook",
        "traum",
        "--db",
        str(demo_db),
        db=None,
    )
    assert r.exit_code == 0, _err(r)
    r = cli("code", "--codebook", "traum", "--coder", "Ana", "--db", str(demo_db), db=None)
    assert r.exit_code == 1
    assert "only in case" in _err(r) and "--coder ana" in _err(r)
    assert "existing coders: ana, ben, caro" in _err(r)


def test_missing_sample_says_how_to_make_one(cli, demo_db) -> None:
    r = cli(
        "code",
        "--codebook",
        "traum",
        "--coder",
        "dora",
        "--sample",
        "nope",
        "--db",
        str(demo_db),
        db=None,
    )
    assert r.exit_code == 1
    assert "no sample named 'nope'" in _err(r) and "samples: main, other, six" in _err(r)


def test_no_main_sample_and_no_database(cli, tmp_path) -> None:
    r = cli("import", str(DEMO), "--db", str(tmp_path / "p.db"), db=None)
    assert r.exit_code == 0
    r = cli(
        "code", "--codebook", "traum", "--coder", "dora", "--db", str(tmp_path / "p.db"), db=None
    )
    assert r.exit_code == 1
    assert "no sample named 'main'" in _err(r)
    assert "annotate sample --n 180 --seed 7 --name main" in _err(r)
    r = cli(
        "code", "--codebook", "traum", "--coder", "dora", "--db", str(tmp_path / "x.db"), db=None
    )
    assert r.exit_code == 1 and "no such database" in _err(r)
    assert not (tmp_path / "x.db").exists()


def test_help_documents_coders_and_keys(cli) -> None:
    r = cli("code", "--help", db=None)
    assert r.exit_code == 0
    text = " ".join(r.output.split())
    assert "A new name starts a new coder" in text
    assert "resumes at your first uncoded item" in text
    assert "Backspace undo" in text


def test_core_stays_free_of_textual() -> None:
    code = (
        "import sys, annotate.coding_session, annotate.commands.code, annotate.cli\n"
        "print('textual' in {m.split('.')[0] for m in sys.modules})"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
