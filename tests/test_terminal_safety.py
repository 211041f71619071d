"""Log content is untrusted: escape sequences in it are shown, never sent to the terminal
(the coding screen, the adjudication screen, `agree --disagreements`), and a huge message is
cut for display only (the stored text stays whole)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from annotate.render.terminal import for_display, shown
from annotate.store import Store
from annotate.tui.app import make_app
from tests.conftest import DEMO, REPO
from tests.test_coding_support import project, sample_ids
from tests.test_tui_app import SIZE, screen_text

ESC = "\x1b"
EVIL = f"hi {ESC}]0;OWNED\x07 {ESC}]52;c;aGk=\x07 {ESC}[2J bye"


def set_content(db: Path, action_id: str, text: str) -> None:
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(
            "UPDATE actions SET content = ?, action_type = 'message' WHERE id = ?",
            (text, action_id),
        )


def test_shown_escapes_every_control_character_but_newline_and_tab() -> None:
    assert shown(EVIL) == "hi \\x1b]0;OWNED\\x07 \\x1b]52;c;aGk=\\x07 \\x1b[2J bye"
    assert shown("a\tb\nc\rd\x00\x7f\x9b\u202eé中") == "a\tb\nc\\x0dd\\x00\\x7f\\x9b\\u202eé中"
    assert for_display("x" * 12, limit=5) == (
        "xxxxx … [truncated for display: 12 characters, the first 5 shown]"
    )


async def test_coding_screen_shows_escape_sequences_as_text(tmp_path: Path) -> None:
    db = project(tmp_path)
    first = sample_ids(db)[0]
    set_content(db, first, EVIL)
    app = make_app(db, "traum", "dora")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        text = screen_text(app)
        assert ESC not in text and "\x07" not in text
        assert "\\x1b]0;OWNED\\x07" in text and "\\x1b[2J" in text


async def test_a_3_mb_unbroken_message_is_cut_for_display_only(tmp_path: Path) -> None:
    db = project(tmp_path)
    first = sample_ids(db)[0]
    set_content(db, first, "x" * 3_000_000)
    app = make_app(db, "traum", "dora")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("end")  # nothing bound: the screen simply has to be up
        shown_text = " ".join(screen_text(app).replace("█", " ").split())  # no scrollbar
        assert "[truncated for display: 3,000,000 characters, the first 10,000 shown]" in (
            shown_text
        )
        await pilot.press("1")  # the long item is coded like any other
        await pilot.pause()
    with Store(db) as store:
        rows = store.query(
            "SELECT value FROM labels WHERE action_id = ? AND coder = 'dora'", (first,)
        )
    assert [tuple(r) for r in rows] == [("Initiate",)]


@pytest.fixture
def evil_demo(cli, db_path: Path) -> Path:
    assert cli("import", str(DEMO)).exit_code == 0
    r = cli("import-labels", str(REPO / "data" / "demo_labels.csv"), "--codebook", "traum")
    assert r.exit_code == 0, r.output
    with closing(sqlite3.connect(db_path)) as conn, conn:
        conn.execute("UPDATE actions SET content = ?, action_type = 'message'", (EVIL,))
    return db_path


@pytest.mark.parametrize("fmt", ["table", "markdown", "csv"])
def test_agree_disagreements_shows_escape_sequences_as_text(cli, evil_demo, fmt) -> None:
    r = cli("agree", "--codebook", "traum", "--disagreements", "--format", fmt)
    assert r.exit_code == 0, r.output
    assert ESC not in r.stdout and "\x07" not in r.stdout
    assert "\\x1b]0;OWNED" in r.stdout


def test_the_bytes_sent_to_a_real_terminal_hold_no_sequence_from_the_log(tmp_path: Path) -> None:
    """`annotate code` in a pty: what reaches the terminal is the escaped text, never the
    title (OSC 0), clipboard (OSC 52) or clear-screen sequence of the message."""
    from tests.test_tui_process import Terminal

    db = project(tmp_path)
    set_content(db, sample_ids(db)[0], EVIL)
    term = Terminal("code", "--codebook", "traum", "--coder", "dora", "--db", str(db), cwd=tmp_path)
    try:
        term.wait_for(b"OWNED")
        term.wait_for(b"bye")
    finally:
        term.kill()
    out = bytes(term.output)
    assert b"\x1b]0;OWNED" not in out and b"\x1b]52;c;aGk=" not in out
    assert b"\\x1b]0;OWNED\\x07" in out
    assert b"\\x1b[2J" in out


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_agree_disagreements_cuts_a_3_mb_message_for_display(cli, db_path, fmt) -> None:
    """Laid out whole, a 3 MB message took a minute; cut as the screens cut it, it is one
    screenful (CSV and JSON still carry every character)."""
    assert cli("import", str(DEMO)).exit_code == 0
    r = cli("import-labels", str(REPO / "data" / "demo_labels.csv"), "--codebook", "traum")
    assert r.exit_code == 0, r.output
    r = cli("agree", "--codebook", "traum", "--disagreements", "--format", "csv")
    first = r.stdout.splitlines()[1].split(",")[1]  # the first item the coders differ on
    with closing(sqlite3.connect(db_path)) as conn, conn:
        conn.execute("UPDATE actions SET content = ? WHERE id = ?", ("y" * 3_000_000, first))
    r = cli("agree", "--codebook", "traum", "--disagreements", "--format", fmt, "--context", "1")
    assert r.exit_code == 0, r.output
    assert "truncated for display: 3,000,000 characters" in r.stdout
    assert "y" * 10_001 not in r.stdout  # each text at most the first 10,000 characters
    r = cli("agree", "--codebook", "traum", "--disagreements", "--format", "csv")
    assert r.exit_code == 0 and "y" * 3_000_000 in r.stdout
