"""Pilot tests: complete coding sessions driven by keys, checked in the SQLite file."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from annotate.codebook import Answer
from annotate.store import Store
from annotate.tui.app import CodingApp, make_app
from annotate.tui.screens.coding import CodingScreen
from annotate.tui.screens.prompt import TextPrompt
from annotate.tui.widgets.keybar import key_label
from tests.test_coding_support import answers, codebook, labels, project, sample_ids

SIZE = (80, 24)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return project(tmp_path)


async def keys(pilot, *presses: str) -> None:
    """Press keys one by one; a string longer than one key name is typed as text."""
    for p in presses:
        if len(p) > 1 and p not in KEY_NAMES and "+" not in p:
            for ch in p:
                await pilot.press("space" if ch == " " else ch)
        else:
            await pilot.press(p)
    await pilot.pause()


KEY_NAMES = {
    "enter",
    "escape",
    "backspace",
    "left",
    "right",
    "up",
    "down",
    "tab",
    "shift+tab",
    "space",
    "question_mark",
    "f1",
    "pageup",
    "pagedown",
}


def screen_text(app: CodingApp) -> str:
    """The text on screen (tags of the SVG screenshot stripped)."""
    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


async def test_traum_complete_session(db) -> None:
    ids = sample_ids(db)
    app = make_app(db, "traum", "dora")
    async with app.run_test(size=SIZE) as pilot:
        s = app.session
        await keys(pilot, "1")  # 1 Initiate
        await keys(pilot, "o")  # 2 Other: a text field opens
        assert isinstance(app.screen, TextPrompt)
        await keys(pilot, "enter")  # empty text is refused, the field stays
        assert isinstance(app.screen, TextPrompt)
        await keys(pilot, "hello", "enter")
        await keys(pilot, "s")  # 3 skipped
        await keys(pilot, "f", "3")  # 4 flagged, Acknowledge
        await keys(pilot, "m", "unsure", "enter", "down", "down", "enter")  # 5 note, Acknowledge
        await keys(pilot, "7")  # 6 Cancel
        await keys(pilot, "2", "backspace", "4")  # 7 Continue, undone, Repair
        await keys(pilot, "5", "6")  # 8 ReqRepair, 9 ReqAck
        await keys(pilot, "1", "left", "2")  # 10 Initiate, back, changed to Continue
        await keys(pilot, "g", "12", "enter")  # jump over 11 to 12
        assert s.index == 11
        await keys(pilot, "3")  # 12 Acknowledge -> back to 11, the first still to code
        assert s.index == 10
        await keys(pilot, "4")  # 11 Repair -> the skipped item 3
        assert s.index == 2
        await keys(pilot, "1")  # 3 Initiate: all coded
        assert s.finished
        assert "All 12 items are coded" in screen_text(app)
        await keys(pilot, "q")
    expected = [
        "Initiate",
        "other",
        "Initiate",
        "Acknowledge",
        "Acknowledge",
        "Cancel",
        "Repair",
        "ReqRepair",
        "ReqAck",
        "Continue",
        "Repair",
        "Acknowledge",
    ]
    got = answers(db, "dora", "traum")
    assert {k[0]: v[0] for k, v in got.items()} == dict(zip(ids, expected, strict=True))
    assert got[(ids[1], "act")] == ("other", None, "hello")
    rows = {r["action_id"]: r for r in labels(db, "dora")}
    assert [rows[i]["flagged"] for i in ids] == [0, 0, 0, 1] + [0] * 8
    assert [rows[i]["note"] for i in ids] == [None] * 4 + ["unsure"] + [None] * 7
    assert all(rows[i]["skipped"] == 0 for i in ids)
    assert rows[ids[9]]["created_at"] < rows[ids[9]]["updated_at"]  # changed later
    assert all(rows[i]["source"] == "tui" for i in ids)
    assert all(rows[i]["seconds"] is not None and rows[i]["seconds"] >= 0 for i in ids)


async def test_mental_model_complete_session(db) -> None:
    ids = sample_ids(db, "six")
    app = make_app(db, "mental_model", "dora", "six")
    async with app.run_test(size=SIZE) as pilot:
        s = app.session
        await keys(pilot, "1", "2", "3", "y")  # item 1
        await keys(pilot, "o", "test", "enter", "2", "3")  # item 2, Q1 other
        await keys(pilot, "n", "1", "3", "enter")  # Q4 no: n1 + n3
        await keys(pilot, "1", "1", "1", "n", "o")  # item 3: Q4 no, reason other
        assert isinstance(app.screen, TextPrompt)  # the text field opens at once
        await keys(pilot, "lag m", "enter")  # 'm' is text here, not the note command
        assert not isinstance(app.screen, TextPrompt) and s.index == 2  # still on the reasons
        assert "Other: lag m" in screen_text(app)
        await keys(pilot, "enter")  # the reasons are stored
        await keys(pilot, "1", "2", "backspace")  # item 4: Q2 undone
        assert (s.index, s.q_index) == (3, 1)
        await keys(pilot, "3", "3", "y")
        await keys(pilot, "2", "2", "2", "n", "escape", "y")  # item 5: reasons dropped, yes
        await keys(pilot, "n", "5")  # item 6: neither is a key of Q1
        assert s.index == 5 and s.q_index == 0
        await keys(pilot, "4", "4", "4", "y")  # item 6, the last
        assert s.finished
    got = answers(db, "dora", "mental_model")
    q = {(ids.index(a), qid): v for (a, qid), v in got.items()}
    assert q[(0, "Q1")] == ("t1", None, None) and q[(0, "Q4")] == ("yes", None, None)
    assert q[(1, "Q1")] == ("other", None, "test")
    assert q[(1, "Q4")] == ("no", json.dumps(["n1", "n3"]), None)
    assert q[(2, "Q4")] == ("no", json.dumps(["other"]), "lag m")
    assert q[(3, "Q2")] == ("p3", None, None) and q[(3, "Q3")] == ("r3", None, None)
    assert q[(4, "Q4")] == ("yes", None, None)
    assert q[(5, "Q1")] == ("t4", None, None)  # the '5' went unanswered, then 4 4 4 y
    assert len(got) == 6 * 4


async def test_resume_at_first_uncoded_and_kept_answers(db) -> None:
    app = make_app(db, "traum", "dora")
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "1", "2", "right", "3", "q")
    app = make_app(db, "traum", "dora")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert app.session.index == 2  # item 3 was passed over, not coded
        assert "item #3" in (app.screen.query_one("#context").border_title or "")
        await keys(pilot, "left")
        assert app.session.is_selected(app.session.choices()[1])  # own answer shown: Continue


async def test_blind_never_shows_other_coders(db) -> None:
    ids = sample_ids(db)
    cb = codebook("traum").codebook
    with Store(db) as store:
        for aid in ids:
            store.save_answer(aid, cb, "act", "zzsecret", Answer("other", other_text="SECRETLABEL"))
            store.set_note(aid, cb, "zzsecret", ["act"], "SECRETNOTE")
    app = make_app(db, "traum", "dora", new_coder=True)
    async with app.run_test(size=SIZE) as pilot:
        shots = []
        for _ in range(len(ids)):
            await pilot.pause()
            shots.append(screen_text(app))
            assert not any(app.session.is_selected(c) for c in app.session.choices())
            await keys(pilot, "right")
        await keys(pilot, "question_mark")
        shots.append(screen_text(app))
        await keys(pilot, "escape", "f1")
        shots.append(screen_text(app))
    assert not any("SECRET" in s or "zzsecret" in s for s in shots)


async def test_two_coders_at_once_on_one_file(db) -> None:
    ids = sample_ids(db)
    a = make_app(db, "traum", "dora")
    b = make_app(db, "traum", "erin")
    async with a.run_test(size=SIZE) as pa, b.run_test(size=SIZE) as pb:
        for _ in range(4):
            await keys(pa, "1")
            await keys(pb, "2")
        await keys(pb, "3")
    got_a, got_b = answers(db, "dora", "traum"), answers(db, "erin", "traum")
    assert {k[0] for k in got_a} == set(ids[:4])
    assert {v[0] for v in got_a.values()} == {"Initiate"}
    assert {k[0] for k in got_b} == set(ids[:5])
    assert [got_b[(i, "act")][0] for i in ids[:5]] == ["Continue"] * 4 + ["Acknowledge"]


async def test_goto_next_uncoded_help_and_definition(db) -> None:
    app = make_app(db, "traum", "dora", lookahead=2)
    async with app.run_test(size=SIZE) as pilot:
        s = app.session
        await keys(pilot, "g")
        assert "Enter: go" in screen_text(app) and "save" not in screen_text(app)
        await keys(pilot, "99", "enter")  # out of range: stays
        assert s.index == 0
        await keys(pilot, "g", "5", "enter", "1")
        assert s.index == 5
        await keys(pilot, "j")
        assert s.index == 6  # the next item still to code
        await keys(pilot, "down", "down", "question_mark")
        assert type(app.screen).__name__ == "DefinitionScreen"
        assert "Shows that the actor understood" in screen_text(app)  # Acknowledge
        assert "Acknowledge (Acknowledge)" not in screen_text(app)  # the label once
        await keys(pilot, "right")
        assert "Corrects the content" in screen_text(app)  # Repair
        await keys(pilot, "escape", "f1")
        assert type(app.screen).__name__ == "HelpScreen"
        assert "act: Initiate" in screen_text(app)
        help_text = screen_text(app)
        assert "Highlight an option" in help_text  # every row in one style (issue 14)
        await keys(pilot, "escape", "pageup", "pageup")
        assert type(app.screen).__name__ == "CodingScreen"


async def test_click_chooses_an_option(db) -> None:
    app = make_app(db, "traum", "dora")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.screen.action_choose("4")  # what a click on "4 Repair" runs
        await pilot.pause()
    assert list(answers(db, "dora", "traum").values()) == [("Repair", None, None)]


async def test_codebook_key_clash_moves_the_command(db, tmp_path, monkeypatch) -> None:
    text = codebook("traum").text.replace('key: "7"', 'key: "s"')
    (tmp_path / "codebooks").mkdir()
    (tmp_path / "codebooks" / "traum.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    app = make_app(db, "traum", "dora")
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "s")  # the option, not skip
        await keys(pilot, "ctrl+s")  # skip moved here
        assert app.session.items[1].skipped
    assert list(answers(db, "dora", "traum").values()) == [("Cancel", None, None)]


async def test_changed_codebook_is_flagged_on_screen(db, tmp_path, monkeypatch) -> None:
    app = make_app(db, "traum", "dora")
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "1", "q")
    text = codebook("traum").text.replace('version: "1.1"', 'version: "1.2"')
    assert 'version: "1.2"' in text
    (tmp_path / "codebooks").mkdir()
    (tmp_path / "codebooks" / "traum.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    app = make_app(db, "traum", "dora")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "traum v1.2 ⚠ changed" in screen_text(app)
        assert any("changed since you started" in n.message for n in app._notifications)
        await keys(pilot, "2")
    hashes = {r["codebook_hash"] for r in labels(db, "dora")}
    assert len(hashes) == 2  # the first label keeps the version it was made under


async def test_pageup_at_the_top_shows_earlier_turns(db) -> None:
    app = make_app(db, "traum", "dora", context=1)
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "g", "3", "enter")
        before = app.screen.query_one("#before")
        shown = len(before.rows)
        await keys(pilot, "pageup", "pageup", "pageup")
        assert len(before.rows) > shown or before.session_start


async def test_shift_tab_to_q4_then_the_open_questions(db) -> None:
    ids = sample_ids(db)
    app = make_app(db, "mental_model", "dora")
    async with app.run_test(size=SIZE) as pilot:
        s = app.session
        await keys(pilot, "shift+tab", "y")  # Q4 first
        assert (s.index, s.question.id) == (0, "Q1")  # not moved on: Q1-Q3 are open
        assert "Q4 Yes" in (app.screen.query_one("#question").border_title or "")
        await keys(pilot, "1", "tab", "2")  # Q1, then Tab past Q2 to Q3
        assert (s.index, s.question.id) == (0, "Q2")
        strip = next(line for line in screen_text(app).splitlines() if "▸Q2" in line)
        assert "Q1 Still figuring" in strip and "Q3 Exploring" in strip  # labels, not codes
        assert "Q4 Yes" in strip and len(strip.strip()) <= SIZE[0]
        await keys(pilot, "3")
        assert (s.index, s.q_index) == (1, 0)
    got = {q: v[0] for (a, q), v in answers(db, "dora", "mental_model").items() if a == ids[0]}
    assert got == {"Q1": "t1", "Q2": "p3", "Q3": "r2", "Q4": "yes"}


def _bar_text(app: CodingApp) -> str:
    bar = app.screen.query_one("#keys")
    return bar.render().plain


@pytest.mark.parametrize("book", ["traum", "mental_model"])
async def test_every_binding_is_in_the_key_bar_and_the_help(db, book) -> None:
    from textual.actions import parse

    app = make_app(db, book, "dora")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        bar = _bar_text(app)
        on_screen = screen_text(app)
        await pilot.resize_terminal(100, 70)  # tall enough for the whole help screen
        await keys(pilot, "f1")
        assert type(app.screen).__name__ == "HelpScreen"
        help_text = screen_text(app)
        await keys(pilot, "escape")
        shown = []
        for binding in CodingScreen.BINDINGS:
            _, action, params = parse(binding.action)
            if not screen.check_action(action, params):
                continue
            command = binding.id.removeprefix("annotate.") if binding.id else None
            key = app.session.keys[command] if command else binding.key
            label = key_label(key)
            shown.append(label)
            assert binding.show, binding
            assert label in bar, (label, bar)
            assert label in help_text, label
        assert {"Space", "PgUp", "PgDn", "↑", "↓", "Enter"} <= set(shown)
        if book == "mental_model":
            assert {"Esc", "Tab", "⇧Tab"} <= set(shown)
            assert "Esc cancel" in on_screen and "Tab/⇧Tab question" in on_screen
        else:  # nothing to cancel and no other question: Esc and Tab are not bound
            assert "Esc" not in shown and "Tab" not in shown
        assert "PgUp/PgDn scroll" in on_screen
        assert all(line.rstrip() for line in bar.splitlines())  # the bar fits: no empty line
        assert len(bar.splitlines()) <= 3


async def test_context_says_pgup_shows_earlier_turns(db) -> None:
    app = make_app(db, "traum", "dora", context=2)
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "g", "7", "enter")
        context = app.screen.query_one("#context")
        context.scroll_home(animate=False, immediate=True)
        await pilot.pause()
        before = app.screen.query_one("#before")
        assert not before.session_start
        assert "── PgUp: earlier turns ──" in screen_text(app)
        for _ in range(40):  # back to the start of the session
            if before.session_start:
                break
            await keys(pilot, "pageup")
        context.scroll_home(animate=False, immediate=True)
        await pilot.pause()
        text = screen_text(app)
        assert "── start of the session ──" in text and "PgUp: earlier" not in text


async def test_instructions_are_reflowed_to_the_width(db) -> None:
    app = make_app(db, "traum", "dora")
    async with app.run_test(size=(160, 50)) as pilot:
        await keys(pilot, "question_mark")
        text = screen_text(app)
    # "... Grounding is the work\npartners do ..." in the YAML: one line on a wide screen
    assert "Grounding is the work partners do" in text
    # "... is Acknowledge\n  (acting on content ...": a list item's lines are joined too
    assert "is Acknowledge (acting on content" in text


async def test_two_hundred_options_scroll_to_the_highlighted_one(db, tmp_path, monkeypatch) -> None:
    options = "".join(
        f'      - {{code: c{i}, label: "Option number {i:03d}, long enough to take a row", '
        f"key: {chr(0x100 + i)}}}\n"
        for i in range(200)
    )
    (tmp_path / "codebooks").mkdir()
    (tmp_path / "codebooks" / "big.yaml").write_text(
        'name: big\ntitle: Big\nversion: "1"\nquestions:\n  - id: q\n    prompt: Which?\n'
        "    options:\n" + options
    )
    monkeypatch.chdir(tmp_path)
    app = make_app(db, "big", "dora")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        panel = app.screen.query_one("#question")
        assert panel.size.height < 20 and panel.max_scroll_y > 150  # 200 rows in a short panel
        assert "Option number 000" in screen_text(app)
        await keys(pilot, *["down"] * 40)
        assert app.session.highlight == 40
        text = screen_text(app)
        assert "Option number 040" in text and "Option number 000" not in text
        await keys(pilot, "enter")  # the highlighted option, scrolled into view, is stored
    assert list(answers(db, "dora", "big").values()) == [("c40", None, None)]


async def test_the_header_names_the_project_file(db, tmp_path, monkeypatch) -> None:
    """ANNOTATE_DB or --db: the file being coded into is always on screen (issue 14)."""
    monkeypatch.chdir(tmp_path)
    app = make_app(db, "traum", "dora")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        top = screen_text(app).split("item 1 of")[0]
        assert "project.db │ traum v1.1 │ coder dora" in top
    elsewhere = tmp_path / "a" / "rather" / "long" / "folder" / "name" / "for" / "it"
    elsewhere.mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    app = make_app(db, "traum", "dora")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        line = next(x for x in screen_text(app).splitlines() if "item 1 of" in x)
        assert "…" in line and "/project.db │ traum" in line and "sample main" in line


async def test_text_prompts_leave_no_fragments_beside_their_border(db) -> None:
    """The note and "other" fields span the width: no cut-off words of the screen beside
    their border (`╯ent`, `│the`), and the item above stays in view."""
    from tests.test_tui_first_screen import screen_lines

    app = make_app(db, "traum", "dora")
    async with app.run_test(size=SIZE) as pilot:
        for key in ("m", "o"):
            await keys(pilot, key)
            assert isinstance(app.screen, TextPrompt)
            rows = screen_lines(app)
            box = [r for r in rows if r[:1] in "╭│╰"]
            assert len(box) >= 3 and all(r.rstrip()[-1] in "╮│╯" for r in box)
            assert all(len(r.rstrip()) == SIZE[0] for r in box)
            assert any("   now " in r for r in rows)  # the item is still on screen
            await keys(pilot, "escape")


@pytest.mark.parametrize(
    ("book", "named", "foreign"), [("hcrc_moves", "Instruct", "Repair"), ("traum", "Initiate", "")]
)
async def test_the_note_field_gives_an_example_in_the_codebooks_words(db, book, named, foreign):
    """An HCRC session's note field names HCRC moves, not Traum's acts."""
    from textual.widgets import Input

    app = make_app(db, book, "dora")
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "m")
        assert isinstance(app.screen, TextPrompt)
        placeholder = app.screen.query_one("#prompt-input", Input).placeholder
        assert named in placeholder and (not foreign or foreign not in placeholder)


async def test_a_message_about_an_item_goes_when_the_next_item_opens(db) -> None:
    """"Note saved." is said on the item noted, and not shown on the next one."""
    from annotate.tui.widgets.status import StatusBar

    app = make_app(db, "traum", "dora")
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "m", "unsure", "enter")
        assert "Note saved." in screen_text(app)
        await keys(pilot, "1")  # answered: the next item opens at once
        assert app.session.index == 1
        assert "Note saved." not in screen_text(app)
        assert app.screen.query_one(StatusBar).message is None  # gone before its 4 seconds
        await keys(pilot, "left")
        assert "Note saved." not in screen_text(app)  # nor when the noted item opens again
