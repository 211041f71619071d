"""Self-annotation (`annotate code --self NAME`): a participant codes their own actions in
time order with a rationale first, an anchor line and their screenshots. Driven through
Textual's pilot on the demo session of data/demo_self (made by data/make_demo.py), checked
in the SQLite file."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from annotate.coding.self_mode import SelfCodingSession
from annotate.coding.session import CodingSession
from annotate.coding.session_inputs import resolve_codebook
from annotate.errors import NotFoundError, UsageError
from annotate.io.importing import import_files
from annotate.media import MediaLocator
from annotate.store import Store
from annotate.tui.screens.rationale import TextAnswerPrompt
from annotate.tui.self_app import make_self_app
from annotate.tui.widgets.screenshot import ScreenshotPanel
from tests.test_coding_support import REPO, labels
from tests.test_tui_app import keys, screen_text

DEMO_SELF = REPO / "data" / "demo_self"
SHOTS = MediaLocator.from_options(
    None, [f"s3://demo-bucket/annotation/={DEMO_SELF / 'screens'}"]
)
SIZE = (100, 30)
RATIONALE = "I wanted to check which side of the lake"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "self.db"
    with Store(path) as store:
        import_files(store, sorted((DEMO_SELF / "log").glob("*.jsonl")))
    return path


def _log(who: str) -> list[dict]:
    """The participant's actions in the export, checkpoints aside, in time order."""
    rows = [
        json.loads(line)
        for f in (DEMO_SELF / "log").glob("*.jsonl")
        for line in f.read_text().splitlines()
    ]
    own = [r for r in rows if r["participant_name"] == who and r["action_type"] != "checkpoint"]
    return sorted(own, key=lambda r: r["timestamp"])


def test_items_are_the_participants_own_actions_in_time_order(db: Path) -> None:
    with Store(db) as store:
        session = SelfCodingSession(store, resolve_codebook(store, "mental_model_self"), "Tom")
        assert session.coder == "self:Tom"
        assert [it.action.id for it in session.items] == [r["action_id"] for r in _log("Tom")]
        assert [q.id for q in session.item.questions] == ["R", "Q1", "Q2", "Q3", "Q4"]
        # by role within the session, too
        sid = session.item.action.session
        by_role = SelfCodingSession(
            store, resolve_codebook(store, "mental_model_self"), "follower", session=sid
        )
        assert by_role.coder == "self:Tom" and by_role.n == session.n
        with pytest.raises(NotFoundError, match="no participant or role 'Zed'"):
            SelfCodingSession(store, resolve_codebook(store, "mental_model_self"), "Zed")


async def test_rationale_first_then_q1_to_q4_in_order_and_resume(db: Path) -> None:
    app = make_self_app(db, "mental_model_self", "Tom", media=SHOTS)
    first, second = (r["action_id"] for r in _log("Tom")[:2])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, TextAnswerPrompt)  # the rationale's field is open at once
        status = app.screen_stack[-2].query_one("#status").region
        assert app.screen.query_one("#dialog").region.y >= status.bottom  # it stays in view
        await keys(pilot, "short", "enter")  # under min_chars (10): refused, the field stays
        assert isinstance(app.screen, TextAnswerPrompt)
        assert "Write at least 10 characters first (5 so far)" in screen_text(app)
        assert labels(db, "self:Tom") == []
        await keys(pilot, " of it", "enter")
        assert not isinstance(app.screen, TextAnswerPrompt)
        assert app.session.question.id == "Q1"
        await keys(pilot, "2", "1", "4", "y")  # Q1 t2, Q2 p1, Q3 r4, Q4 yes
        assert app.session.index == 1
        await pilot.pause()
        assert isinstance(app.screen, TextAnswerPrompt)  # the next item's rationale
        await keys(pilot, RATIONALE, "enter", "3")  # rationale and Q1 of item 2, then quit
        await keys(pilot, "escape") if isinstance(app.screen, TextAnswerPrompt) else None
        await keys(pilot, "q")
    rows = {(r["action_id"], r["question"]): r for r in labels(db, "self:Tom")}
    r = rows[(first, "R")]
    assert (r["value"], r["codes"], r["other_text"]) == ("short of it", None, None)
    assert [rows[(first, q)]["value"] for q in ("Q1", "Q2", "Q3", "Q4")] == [
        "t2", "p1", "r4", "yes",
    ]  # fmt: skip
    assert rows[(second, "R")]["value"] == RATIONALE and rows[(second, "Q1")]["value"] == "t3"

    again = make_self_app(db, "mental_model_self", "Tom", media=SHOTS)
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        s = again.session
        assert (s.index, s.question.id) == (1, "Q2")  # resumed at the first open question
        assert not isinstance(again.screen, TextAnswerPrompt)
        await keys(pilot, "backspace")  # undo (of this sitting): nothing yet
        await keys(pilot, "1", "backspace")  # Q2 answered, then undone
        assert s.question.id == "Q2" and "Q2" not in s.item.answers
        await keys(pilot, "m", "unsure about the lake", "enter", "q")
    rows = {(r["action_id"], r["question"]): r for r in labels(db, "self:Tom")}
    assert (second, "Q2") not in rows or rows[(second, "Q2")]["value"] is None
    assert rows[(second, "R")]["note"] == "unsure about the lake"


async def test_anchor_line_shows_the_closest_checkpoint(db: Path) -> None:
    app = make_self_app(db, "mental_model_self", "Rosa", media=SHOTS)
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "escape")  # close the rationale's field
        text = screen_text(app)
        assert "anchor: checkpoint 25% (1:30 after): Q1: Working toward a shared" in text
        await keys(pilot, "up", "down", "question_mark")  # no options to move among
        assert "Press Enter and write the answer in your own words" in screen_text(app)
        await keys(pilot, "escape")
        await keys(pilot, "g", "6", "enter", "escape")  # item 6 at 3:10: 50% is 0:15 before
        assert "anchor: checkpoint 50% (0:15 before): Q1: Clear on what to do" in screen_text(
            app
        )


async def test_anchor_from_a_checkpoints_file(db: Path, tmp_path: Path) -> None:
    app = make_self_app(
        db, "mental_model_self", "Tom", checkpoints=DEMO_SELF / "checkpoints.csv", media=SHOTS
    )
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "escape")
        text = screen_text(app)
        assert "anchor: checkpoint 25% (1:18 after): Q1: Something was unclear" in text
        assert "Q4: No, One of us was missing key" in text
    bad = tmp_path / "cp.csv"
    bad.write_text("session,participant,time,answers\ns1,Tom,soon,Q1=t1\n")
    with pytest.raises(UsageError, match=r"cp.csv:2: time 'soon' is neither"):
        make_self_app(db, "mental_model_self", "Tom", checkpoints=bad)
    without = make_self_app(db, "mental_model_self", "Tom")
    async with without.run_test(size=SIZE) as pilot:
        await keys(pilot, "escape")
        assert "anchor: no checkpoint answer in this session" in screen_text(without)


async def test_screenshot_shown_and_a_missing_one_says_so(db: Path) -> None:
    app = make_self_app(db, "mental_model_self", "Tom", media=SHOTS)
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "escape")
        assert "▣ screenshot" in app.screen.query_one("#context").border_title
        panel = app.screen.query_one(ScreenshotPanel)
        assert not panel.display
        await keys(pilot, "v")
        assert panel.display and panel.shot is not None and panel.shot.path is not None
        assert "screenshot: " + panel.shot.path.name[:8] in screen_text(app)
        missing = next(i for i, r in enumerate(_log("Tom")) if r["action_content"] == "Like this?")
        await keys(pilot, "g", str(missing + 1), "enter", "escape")
        assert "screenshot missing" in app.screen.query_one("#context").border_title
        assert panel.shot is not None and panel.shot.missing
        text = screen_text(app)
        assert "screenshot missing\n" in text and "s3://demo-bucket/annotation/" in text
        await keys(pilot, "v")
        assert not panel.display


async def test_no_media_options_means_every_screenshot_is_missing(db: Path) -> None:
    app = make_self_app(db, "mental_model_self", "Tom", media=MediaLocator())
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "escape", "v")
        assert "│screenshot missing\n" in screen_text(app)


def test_media_locator_maps_prefixes_and_roots(tmp_path: Path) -> None:
    (tmp_path / "run1").mkdir()
    (tmp_path / "run1" / "a.png").write_bytes(b"x")
    loc = MediaLocator.from_options([tmp_path], ["s3://b/x/=" + str(tmp_path / "run1")])
    assert loc.locate("s3://b/x/a.png") == tmp_path / "run1" / "a.png"
    assert loc.locate("run1/a.png") == tmp_path / "run1" / "a.png"
    assert loc.locate("s3://other/a.png") is None and loc.locate("run1/b.png") is None
    with pytest.raises(UsageError, match="is not PREFIX=DIR"):
        MediaLocator.from_options(None, ["s3://b/x/"])


async def test_kill_9_in_a_real_terminal_loses_nothing_and_resumes(db: Path) -> None:
    from tests.test_tui_process import Terminal, _until

    def answered() -> int:
        return sum(r["value"] is not None for r in labels(db, "self:Tom"))

    prefix = f"s3://demo-bucket/annotation/={DEMO_SELF / 'screens'}"
    term = Terminal(
        "code", "--codebook", "mental_model_self", "--self", "Tom", "--db", str(db),
        "--media-prefix", prefix, cwd=db.parent,
    )  # fmt: skip
    try:
        term.wait_for(b"anchor")
        term.wait_for(b"characters")  # the rationale's field is open
        term.send("v")  # typed into the field, not the screenshot key
        term.send("ery first: greet Rosa\r")
        _until(lambda: answered() == 1)
        for n, key in enumerate("214", start=2):
            term.send(key)
            _until(lambda n=n: answered() == n)
    finally:
        term.kill()
    rows = {r["question"]: r["value"] for r in labels(db, "self:Tom")}
    assert rows == {"R": "very first: greet Rosa", "Q1": "t2", "Q2": "p1", "Q3": "r4"}
    again = make_self_app(db, "mental_model_self", "Tom", media=SHOTS)
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert (again.session.index, again.session.question.id) == (0, "Q4")
        await keys(pilot, "y")
        assert again.session.index == 1
    assert {r["question"] for r in labels(db, "self:Tom") if r["value"]} >= {"Q4"}


def test_code_self_refuses_wrong_options_with_one_line(db: Path) -> None:
    from typer.testing import CliRunner

    from annotate.cli import app as cli

    def run(*args: str):
        return CliRunner().invoke(cli, ["code", "--codebook", "mental_model_self", *args,
                                        "--db", str(db)])  # fmt: skip

    r = run("--self", "Tom", "--coder", "ana")
    assert r.exit_code == 1 and "--self codes your own actions: leave out --coder" in r.stderr
    r = run("--coder", "ana", "--checkpoints", "cp.csv")
    assert r.exit_code == 1 and "--session and --checkpoints go with --self" in r.stderr
    r = run("--self", "Zed")
    assert r.exit_code == 1
    assert r.stderr.startswith("error: no participant or role 'Zed' in the project file")
    assert "participants: Rosa, Tom" in r.stderr
    r = run("--self", "Tom", "--media-root", str(db.parent / "nowhere"))
    assert r.exit_code == 1 and "--media-root" in r.stderr and "no such folder" in r.stderr


def test_generic_import_keeps_a_screenshot_column(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from annotate.cli import app as cli

    (tmp_path / "shots").mkdir()
    (tmp_path / "shots" / "a.png").write_bytes((next((DEMO_SELF / "screens").rglob("*.png")))
                                               .read_bytes())  # fmt: skip
    log = tmp_path / "log.csv"
    log.write_text("dialogue,text,screenshot\nd1,go left,shots/a.png\nd1,ok,shots/b.png\n")
    db = tmp_path / "p.db"
    r = CliRunner().invoke(
        cli, ["import", str(log), "--map", "session=dialogue,content=text", "--db", str(db)]
    )
    assert r.exit_code == 0, r.output
    locator = MediaLocator.from_options([tmp_path], None)
    with Store(db) as store:
        shots = [locator.screenshot(a) for a in store.actions.session_actions("d1")]
    found = [(s.ref, s.missing) for s in shots if s]
    assert found == [("shots/a.png", False), ("shots/b.png", True)]


async def test_sampled_coding_marks_and_shows_screenshots_too(db: Path) -> None:
    from annotate.tui.app import make_app, web_command

    with Store(db) as store:
        ids = [r[0] for r in store.db.query("SELECT id FROM actions WHERE participant = 'Tom'")]
        store.samples.create_sample("main", ids[:3], seed=1)
    app = make_app(db, "traum", "dora", media=SHOTS)
    async with app.run_test(size=SIZE) as pilot:
        assert "▣ screenshot" in app.screen.query_one("#context").border_title
        await keys(pilot, "v")
        assert "screenshot: " in screen_text(app)
    plain = make_app(db, "traum", "dora")  # no media options: no panel, no key, no mark
    async with plain.run_test(size=SIZE):
        assert "screenshot" not in plain.screen.query_one("#context").border_title
        assert not plain.screen.query(ScreenshotPanel)
    command = web_command(
        db, "traum", "dora", "main", context=8, lookahead=0, extra=SHOTS.options()
    )
    assert shlex.split(command)[-2:] == [
        "--media-prefix", f"s3://demo-bucket/annotation/={DEMO_SELF / 'screens'}",
    ]  # fmt: skip


def test_a_sample_names_screenshots_when_one_of_its_items_does(db: Path) -> None:
    """Read from the actions that mention a screenshot (a partial index), then checked as
    the screen checks an action: a key of meta that is a non-blank text."""
    with Store(db) as store:
        ids = [r[0] for r in store.db.query("SELECT id FROM actions WHERE participant = 'Tom'")]
        named = json.loads(store.db.query("SELECT meta FROM actions WHERE id = ?", [ids[-1]])[0][0])
        assert named.get("screenshot")
        plain = ids[:3]  # mentions a screenshot, names none: a blank one, another key, a value
        for aid, meta in zip(
            plain,
            [{"screenshot": "  "}, {"screenshot_of": "x.png"}, {"note": "no screenshot"}],
            strict=True,
        ):
            store.db.conn.execute(
                "UPDATE actions SET meta = ? WHERE id = ?", (json.dumps(meta), aid)
            )
        store.samples.create_sample("none", plain, seed=1)
        store.samples.create_sample("some", [*plain, ids[-1]], seed=1)
        traum = resolve_codebook(store, "traum")
        assert not CodingSession(store, traum, "dora", "none").names_screenshots
        assert CodingSession(store, traum, "dora", "some").names_screenshots
        mine = SelfCodingSession(store, resolve_codebook(store, "mental_model_self"), "Tom")
        assert mine.names_screenshots


def test_the_screenshot_index_holds_every_key_that_names_one() -> None:
    """The partial index the coding screen reads (`actions_screenshot`, migration 16) holds
    the actions whose meta contains SCREENSHOT_WORD: every key that names a screenshot must
    contain it, or its actions would be missed."""
    from annotate.media import SCREENSHOT_KEYS
    from annotate.store.migrations import SCREENSHOT_WORD

    assert all(SCREENSHOT_WORD in key for key in SCREENSHOT_KEYS)
