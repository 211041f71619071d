"""The adjudication screen at 80x24 (issue 14): the same keys, help and labels as
`annotate code`; whole option labels; messages never over the options. Read from the
rendered rows; SVG snapshots of the screen (regenerate with --snapshot-update and look at
them before committing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotate.reliability.majority_pass import adjudicate_majority
from annotate.reliability.selection import select
from annotate.store import Store
from annotate.tui.screens.adjudicate import AdjudicationScreen, make_app
from tests.conftest import DEMO, REPO
from tests.test_tui_first_screen import screen_lines

SIZE = (80, 24)


@pytest.fixture
def demo(cli, db_path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli("import", str(DEMO)).exit_code == 0
    r = cli("import-labels", str(REPO / "data" / "demo_labels.csv"), "--codebook", "traum")
    assert r.exit_code == 0, r.output
    return db_path


@pytest.fixture
def q4(demo, tmp_path: Path, cli) -> Path:
    """Two mental_model Q4 cases the coders split on, with reasons."""
    with Store(demo) as store:
        ids = [r["id"] for r in store.actions.action_rows()][:2]
    rows = ["action_id,coder,question,value,codes,other_text"]
    rows += [f"{ids[0]},ana,Q4,yes,,", f"{ids[0]},ben,Q4,no,n1;n3,", f"{ids[0]},caro,Q4,no,n2,"]
    rows += [f"{ids[1]},ana,Q4,no,n4,", f"{ids[1]},ben,Q4,yes,,", f"{ids[1]},caro,Q4,yes,,"]
    path = tmp_path / "q4.csv"
    path.write_text("\n".join(rows) + "\n")
    r = cli("import-labels", str(path), "--codebook", "mental_model")
    assert r.exit_code == 0, r.output
    return demo


def _app(db: Path, codebook: str):
    store = Store(db)
    plan, _ = adjudicate_majority(store, select(store, codebook=codebook), "zoe", read_cases=True)
    return make_app(store, plan, "zoe")


async def test_q4_reasons_whole_labels_and_answers_by_label(q4) -> None:
    app = _app(q4, "mental_model")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        text = "\n".join(screen_lines(app))
        assert "ben    No: Different understanding of the task goal + One of us" in text
        assert "n1+n3" not in text  # codes: never shown
        await pilot.press("n")
        await pilot.pause()
        text = "\n".join(screen_lines(app))
        flat = " ".join(text.split())
        assert "Different understanding of the task goal" in flat
        assert "Different understanding of the current state" in flat
        assert "…" not in text.split("Q4:")[-1]  # no option label cut off
        keys = screen_lines(app)[-3:]
        assert all(len(line) <= SIZE[0] for line in screen_lines(app))
        assert any("? define" in line for line in keys) and any("q quit" in line for line in keys)
    app.session.store.close()


async def test_same_keys_as_code_help_definition_and_quit(demo) -> None:
    app = _app(demo, "traum")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        rows = screen_lines(app)
        top = next(i for i, r in enumerate(rows) if r.startswith("─session"))
        end = next(i for i in range(top + 1, len(rows)) if rows[i].startswith("───"))
        assert "   now " in rows[end - 1]  # the item on the context's last row
        await pilot.press("down", "down", "question_mark")
        assert type(app.screen).__name__ == "DefinitionScreen"
        assert "Shows that the actor understood" in "\n".join(screen_lines(app))
        await pilot.press("escape", "f1")
        assert type(app.screen).__name__ == "HelpScreen"
        assert "act: Initiate (stored as gold)" in "\n".join(screen_lines(app))
        await pilot.press("escape")
        assert isinstance(app.screen, AdjudicationScreen)
        first = app.session.case.action.id
        await pilot.press("down", "enter")  # the highlighted option: Repair (after 3 downs)
        await pilot.pause()
        rows = screen_lines(app)
        assert rows[1].lstrip().startswith("» Gold for #1: Repair")  # in the status, not a toast
        assert not any("Gold for" in line for line in rows[2:])
        await pilot.press("q")
    assert app.return_value == 1
    gold = {
        g["action_id"]: g for g in app.session.store.labels.label_rows("traum", coders=["gold"])
    }
    assert gold[first]["value"] == "Repair"
    app.session.store.close()


def test_snapshot_traum_tie(snap_compare, demo) -> None:
    app = _app(demo, "traum")
    assert snap_compare(app, press=["down"], terminal_size=SIZE)


def test_snapshot_q4_reasons(snap_compare, q4) -> None:
    app = _app(q4, "mental_model")
    assert snap_compare(app, press=["n", "1"], terminal_size=SIZE)


async def test_other_reason_asks_for_its_text_at_once(q4) -> None:
    """As in `annotate code`: ticking "other" opens its text field; typed text goes there;
    Esc unticks only "other"; Enter on the reasons stores them with the text."""
    from annotate.tui.screens.adjudicate import OtherPrompt

    app = _app(q4, "mental_model")
    async with app.run_test(size=SIZE) as pilot:
        first = app.session.case.action.id
        await pilot.press("n", "1", "o")
        await pilot.pause()
        assert isinstance(app.screen, OtherPrompt)
        await pilot.press("escape")
        await pilot.pause()
        assert app.session.toggles == {"n1"}
        await pilot.press("o", *"map m", "enter")  # 'm' is text, not a command
        await pilot.pause()
        assert isinstance(app.screen, AdjudicationScreen)
        assert "Other: map m" in "\n".join(screen_lines(app))
        await pilot.press("enter")
        await pilot.pause()
        gold = {g["action_id"]: g for g in app.session.store.labels.label_rows("mental_model")
                if g["coder"] == "gold"}  # fmt: skip
        assert gold[first]["value"] == "no"
        assert tuple(gold[first]["codes"]) == ("n1", "other")
        assert gold[first]["other_text"] == "map m"
    app.session.store.close()


@pytest.fixture
def maptask4(cli, shared, db_path, tmp_path, monkeypatch) -> Path:
    """A Map Task dialogue (no times) with its corpus coding and three other coders, one
    of them on a third of the items and one with a long note on every seventh: answers
    tables of different heights from case to case (issue 31, item 7)."""
    import csv
    import random

    from annotate.codebook import find_codebook

    monkeypatch.chdir(tmp_path)
    dialogue = shared / "maptask" / "dialogues" / "q1ec1.txt"
    r = cli("import", str(dialogue), "--labels-as", "hcrc", "--codebook", "hcrc_moves")
    assert r.exit_code == 0, r.output
    cb = find_codebook("hcrc_moves").codebook
    moves = [o.code for o in cb.questions[0].options]
    with Store(db_path) as s:
        corpus = [(r["action_id"], r["value"]) for r in s.labels.label_rows("hcrc_moves")]
    rows = []
    coders = (("ann", 0.3, 1, 1), ("bob", 0.4, 2, 1), ("sheet", 0.4, 5, 3))
    for coder, p, seed, every in coders:
        rng = random.Random(seed)
        for k, (action_id, label) in enumerate(corpus):
            if k % every == 0:
                wrong = rng.choice([m for m in moves if m != label])
                value = label if rng.random() >= p else wrong
                rows.append(
                    {"action_id": action_id, "coder": coder, "question": "move", "value": value}
                )
    path = tmp_path / "coders.csv"
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, ["action_id", "coder", "question", "value"])
        writer.writeheader()
        writer.writerows(rows)
    assert cli("import-labels", str(path), "--codebook", "hcrc_moves").exit_code == 0
    with Store(db_path) as s:
        for action_id, _ in corpus[::7]:
            s.labels.set_note(action_id, cb, "ann", ["move"], "instructs or explains? not sure")
    return db_path


def _context_box(app) -> list[str]:
    """The context box's rows as drawn, each with its words joined by one space (without
    the scrollbar and the item's left border)."""
    rows = screen_lines(app)
    top = next(i for i, r in enumerate(rows) if r.startswith("─"))
    end = next(i for i in range(top + 1, len(rows)) if rows[i].startswith("───"))
    blocks = str.maketrans({chr(c): " " for c in range(0x2580, 0x25A0)})  # bars, the item's
    return [" ".join(r.translate(blocks).split()) for r in rows[top + 1 : end]]


async def test_the_item_and_the_turn_before_it_stay_in_view_on_every_case(maptask4) -> None:
    """Going through the cases, then deciding case after case at 80x24 (the status line
    flashes each time, the answers table grows and shrinks): the context box shows the item
    being decided whole, with the turn before it above, and its title names the session,
    on every case; a case short of votes says so, with the --coders that would decide it."""
    from annotate.models import describe

    app = _app(maptask4, "hcrc_moves")
    hidden = []
    short = 0
    async with app.run_test(size=SIZE) as pilot:
        for key in ["right"] * 10 + ["1"] * 20:  # look, then decide: on to the next case
            await pilot.pause()
            case = app.session.case
            box = _context_box(app)
            item = " ".join(describe(case.action).split())
            before = app.session.store.actions.context(case.action, before=1, after=0)
            before = [a for a in before if a.seq < case.action.seq]
            seen = " ".join(box)
            # the item whole (its rows follow who said it), and the end of the turn before
            # it above it
            at = seen.rfind(item)
            above = " ".join(describe(before[-1]).split())[-12:] if before else ""
            if at < 0 or (above and not 0 <= seen.rfind(above, 0, at) < at):
                hidden.append((app.session.index + 1, item[:30], box[-1]))
            status, title = screen_lines(app)[1:3]
            assert "session q1ec1" in title, title
            if key == "right" and "short of votes" in case.short_reason:  # no message shown
                assert "short of votes, 3 of 4 answered: --coders ann,bob,hcrc decides it" in status
                short += 1
            await pilot.press(key)
    assert hidden == [] and short
    app.session.store.close()


async def test_pgdn_brings_the_turns_after_the_item_and_keeps_it_in_view(maptask4) -> None:
    from annotate.models import describe

    app = _app(maptask4, "hcrc_moves")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("right", "right")
        await pilot.pause()
        case = app.session.case
        item = " ".join(describe(case.action).split())
        after = app.session.store.actions.context(case.action, before=0, after=1)
        following = " ".join(describe(next(a for a in after if a.seq > case.action.seq)).split())
        assert following[:20] not in " ".join(_context_box(app)).split(item)[-1]
        await pilot.press("pagedown")
        await pilot.pause()
        seen = " ".join(_context_box(app))
        assert item in seen and following[:20] in seen.split(item)[-1]
        await pilot.press("right")  # the next case: its item on the last row again
        await pilot.pause()
        box = _context_box(app)
        assert " ".join(describe(app.session.case.action).split()).endswith(box[-1].split()[-1])
    app.session.store.close()
