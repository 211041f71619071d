"""`annotate code` refuses to start with a clear one-line error and the choices."""

from __future__ import annotations

import socket
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
    _import_ana_ben_caro(cli, demo_db)
    r = cli("code", "--codebook", "traum", "--coder", "Ana", "--db", str(demo_db), db=None)
    assert r.exit_code == 1
    assert "only in case" in _err(r) and "--coder ana" in _err(r)
    assert "existing coders: ana, ben, caro" in _err(r)


def _import_ana_ben_caro(cli, db) -> None:
    r = cli(
        "import-labels",
        str(REPO / "data" / "demo_labels.csv"),
        "--codebook",
        "traum",
        "--db",
        str(db),
        db=None,
    )
    assert r.exit_code == 0, _err(r)


def _busy_port():
    """A socket listening on 127.0.0.1 (the caller closes it); its port is in use."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s


def test_unknown_coder_lists_coders_and_new_coder_starts_one(cli, demo_db) -> None:
    _import_ana_ben_caro(cli, demo_db)
    # --web on a busy port: the step after the coder check fails at once (never a TUI here)
    with _busy_port() as busy:
        port = busy.getsockname()[1]
        code = ("code", "--codebook", "traum", "--coder", "zed", "--web", "--port", str(port))
        r = cli(*code, "--db", str(demo_db), db=None)
        assert r.exit_code == 1
        lines = _err(r).strip().splitlines()
        assert lines[0] == "error: unknown coder 'zed' (existing coders: ana, ben, caro)"
        assert lines[1].startswith("hint:") and "--new-coder" in lines[1] and len(lines) == 2
        r = cli(*code, "--new-coder", "--db", str(demo_db), db=None)  # passes the coder check
        assert r.exit_code == 1
        assert "unknown coder" not in _err(r)
        assert f"port {port} on 127.0.0.1 is already in use" in _err(r)
        # the failed start stored nothing under the new name: it is still unknown
        r = cli(*code, "--db", str(demo_db), db=None)
        assert r.exit_code == 1 and "error: unknown coder 'zed'" in _err(r)


def test_web_on_a_busy_port_is_one_line(cli, demo_db) -> None:
    with _busy_port() as busy:
        port = busy.getsockname()[1]
        code = ("code", "--codebook", "traum", "--coder", "dora", "--web", "--port", str(port))
        r = cli(*code, "--db", str(demo_db), db=None)
    assert r.exit_code == 1
    lines = _err(r).strip().splitlines()
    assert lines == [
        f"error: port {port} on 127.0.0.1 is already in use",
        f"hint: pass another port, e.g. --port {port + 1}",
    ]
    assert "Serving" not in r.stdout
    r = cli(*code[:-1], "0", "--db", str(demo_db), db=None)
    assert r.exit_code == 1 and "--port 0 is not a port number" in _err(r)


def test_web_command_keeps_new_coder() -> None:
    from annotate.tui.app import web_command

    argv = web_command("p.db", "traum", "zed", None, context=8, lookahead=0, new_coder=True)
    assert argv.endswith("--new-coder")
    assert "--new-coder" not in web_command("p.db", "traum", "ana", None, context=8, lookahead=0)


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
    assert "resumes at your first item neither coded nor skipped" in text
    assert "--new-coder" in text and "Start a new coder" in text
    assert "Backspace undo" in text
    assert all(k in text for k in ("Space", "Esc", "Tab/Shift+Tab", "PgUp/PgDn"))


def test_core_stays_free_of_textual() -> None:
    code = (
        "import sys, annotate.coding.session, annotate.commands.code, annotate.cli\n"
        "print('textual' in {m.split('.')[0] for m in sys.modules})"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_coder_defaults_to_the_environment_then_the_login_name(cli, demo_db, monkeypatch) -> None:
    """`annotate code --codebook traum` as typed: the coder is $ANNOTATE_CODER, else the
    login name, said in the first line and the header; the typo guard still holds."""
    from annotate.coders import default_coder
    from annotate.tui.app import make_app

    monkeypatch.setenv("ANNOTATE_CODER", "dora")
    with _busy_port() as busy:
        web = ("--web", "--port", str(busy.getsockname()[1]), "--db", str(demo_db))
        r = cli("code", "--codebook", "traum", *web, db=None)
        assert r.stdout.splitlines()[0] == (
            "Coding as dora ($ANNOTATE_CODER; --coder NAME to code as someone else)."
        )
        assert "is already in use" in _err(r)  # past the coder check: a new file's first coder
        _import_ana_ben_caro(cli, demo_db)
        monkeypatch.delenv("ANNOTATE_CODER")
        for variable in ("LOGNAME", "USER", "LNAME", "USERNAME"):
            monkeypatch.setenv(variable, "zed")
        r = cli("code", "--codebook", "traum", *web, db=None)
        assert r.stdout.splitlines()[0].startswith("Coding as zed (the login name;")
        assert r.exit_code == 1 and "error: unknown coder 'zed'" in _err(r)  # the typo guard
        r = cli("code", "--codebook", "traum", "--new-coder", *web, db=None)
        assert "unknown coder" not in _err(r) and "is already in use" in _err(r)
    app = make_app(demo_db, "traum", default_coder()[0], new_coder=True)
    try:
        assert app.sub_title == "traum · zed · main"  # the header names the coder
    finally:
        app.close_session(count_time=False)
