"""The adjudication screen at 80x24 (issue 14): the same keys, help and labels as
`annotate code`; whole option labels; messages never over the options. Read from the
rendered rows; SVG snapshots of the screen (regenerate with --snapshot-update and look at
them before committing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotate.reliability.agreement_data import select
from annotate.reliability.majority_pass import adjudicate_majority
from annotate.store import Store
from annotate.tui.adjudicate import AdjudicationScreen, make_app
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
        ids = [r["id"] for r in store.action_rows()][:2]
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
        top = next(i for i, r in enumerate(rows) if r.startswith("─Context"))
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
    gold = {g["action_id"]: g for g in app.session.store.label_rows("traum", coders=["gold"])}
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
    from annotate.tui.adjudicate import OtherPrompt

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
        gold = {g["action_id"]: g for g in app.session.store.label_rows("mental_model")
                if g["coder"] == "gold"}  # fmt: skip
        assert gold[first]["value"] == "no"
        assert tuple(gold[first]["codes"]) == ("n1", "other")
        assert gold[first]["other_text"] == "map m"
    app.session.store.close()
