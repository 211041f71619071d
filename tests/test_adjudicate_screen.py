"""The adjudication screen, driven with Textual's pilot: ties and flagged items, one key per
decision, "Other" with text, yes/no reasons, and the gold it stores."""

from __future__ import annotations

import pytest

from annotate.codebook import find_codebook
from annotate.reliability.majority_pass import adjudicate_majority
from annotate.reliability.selection import select
from annotate.store import Store
from annotate.tui.screens.adjudicate import AdjudicationScreen, OtherPrompt, make_app
from tests.conftest import DEMO, REPO

TRAUM = find_codebook("traum").codebook


@pytest.fixture
def demo(cli, db_path):
    assert cli("import", str(DEMO)).exit_code == 0
    r = cli("import-labels", str(REPO / "data" / "demo_labels.csv"), "--codebook", "traum")
    assert r.exit_code == 0, r.output
    return db_path


def _plan(store: Store, codebook: str = "traum"):
    plan, _ = adjudicate_majority(store, select(store, codebook=codebook), "zoe", read_cases=True)
    return plan


def _gold(store: Store, codebook: str = "traum") -> dict[str, dict]:
    return {g["action_id"]: g for g in store.labels.label_rows(codebook, coders=["gold"])}


def _screen_text(app) -> str:
    return app.export_screenshot().replace("&#160;", " ")


async def test_ties_are_decided_with_one_key(demo) -> None:
    with Store(demo) as store:
        plan = _plan(store)
        ties = [c.action.id for c in plan.to_decide]
        app = make_app(store, plan, "zoe")
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            assert isinstance(app.screen, AdjudicationScreen)
            text = _screen_text(app)
            assert f"case 1 of {len(ties)}" in text and "tie" in text and "to decide" in text
            first = app.session.case
            assert "Initiate" in text and "Other (describe it)" in text
            await pilot.press("4")  # Repair
            await pilot.pause()
            gold = _gold(store)[first.action.id]
            assert gold["value"] == "Repair" and gold["source"] == "adjudicate"
            assert gold["meta"]["method"] == "decided" and gold["meta"]["adjudicator"] == "zoe"
            assert gold["meta"]["votes"] == {a.coder: a.text for a in first.answers}
            assert gold["meta"]["reason"].startswith("tie: ")
            assert app.session.index == 1 and app.session.decisions == 1
            # back to the first case: it shows the decision and can be changed
            await pilot.press("left")
            assert app.session.index == 0
            assert "decided" in _screen_text(app)
            await pilot.press("2")
            assert _gold(store)[first.action.id]["value"] == "Continue"
            assert app.session.index == 1  # on to the next case still to decide


async def test_status_messages_show_control_characters_escaped(demo) -> None:
    """A message can carry stored text (an answer's Other text, a refusal): never executed."""
    with Store(demo) as store:
        plan = _plan(store)
        app = make_app(store, plan, "zoe")
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            app.screen.flash("Gold: other (\x1b]0;owned\x07\x1b[2J)")
            await pilot.pause()
            text = _screen_text(app)
            assert "\\x1b]0;owned\\x07\\x1b[2J" in text
            assert "\x1b" not in text and "\x07" not in text


async def test_other_needs_a_text_and_escape_stores_nothing(demo) -> None:
    with Store(demo) as store:
        plan = _plan(store)
        app = make_app(store, plan, "zoe")
        async with app.run_test(size=(80, 24)) as pilot:
            item = app.session.case.action.id
            await pilot.press("o")
            await pilot.pause()
            assert isinstance(app.screen, OtherPrompt)
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, AdjudicationScreen)
            assert item not in _gold(store)
            await pilot.press("o")
            await pilot.pause()
            await pilot.press("enter")  # empty: refused
            assert isinstance(app.screen, OtherPrompt)
            await pilot.press(*"greeting", "enter")
            await pilot.pause()
            gold = _gold(store)[item]
            assert (gold["value"], gold["other_text"]) == ("other", "greeting")


async def test_last_decision_closes_the_screen_with_the_count(demo) -> None:
    with Store(demo) as store:
        plan = _plan(store)
        n = len(plan.to_decide)
        app = make_app(store, plan, "zoe")
        async with app.run_test(size=(100, 30)) as pilot:
            for _ in range(n):
                await pilot.press("3")
                await pilot.pause()
        assert app.return_value == n
        gold = _gold(store)
        assert sum(g["meta"]["method"] == "decided" for g in gold.values()) == n
        assert len(gold) == 343
        assert (
            adjudicate_majority(store, select(store, codebook="traum"), "zoe", read_cases=True)[
                0
            ].undecided
            == []
        )


async def test_flagged_item_shows_notes_and_quit_keeps_decisions(demo) -> None:
    with Store(demo) as store:
        item = sorted(r["action_id"] for r in store.labels.label_rows("traum", coders=["ana"]))[0]
        store.labels.set_flag(item, TRAUM, "caro", ["act"])
        store.labels.set_note(item, TRAUM, "caro", ["act"], "ask the group")
        plan = _plan(store)
        position = next(i for i, c in enumerate(plan.to_decide) if c.action.id == item)
        app = make_app(store, plan, "max")
        async with app.run_test(size=(100, 30)) as pilot:
            for _ in range(position):
                await pilot.press("right")
            await pilot.pause()
            assert app.session.case.action.id == item
            text = _screen_text(app)
            assert "flagged by caro" in text and "ask the group" in text and "caro ⚑" in text
            await pilot.press("1")
            await pilot.press("ctrl+q")
        assert app.return_value == 1
        gold = _gold(store)[item]
        assert gold["meta"]["method"] == "decided" and gold["meta"]["reason"] == "flagged by caro"


async def test_yes_no_reasons(demo, tmp_path, cli) -> None:
    with Store(demo) as store:
        ids = [r["id"] for r in store.actions.action_rows()][:2]
    rows = ["action_id,coder,question,value,codes"]
    rows += [f"{ids[0]},ana,Q4,yes,", f"{ids[0]},ben,Q4,no,n1", f"{ids[0]},caro,Q4,no,n2"]
    rows += [f"{ids[1]},ana,Q4,no,n3", f"{ids[1]},ben,Q4,yes,", f"{ids[1]},caro,Q4,no,n4;n5"]
    path = tmp_path / "q4.csv"
    path.write_text("\n".join(rows) + "\n")
    assert cli("import-labels", str(path), "--codebook", "mental_model").exit_code == 0
    with Store(demo) as store:
        plan = _plan(store, "mental_model")
        assert [c.action.id for c in plan.to_decide] == sorted(ids) or len(plan.to_decide) == 2
        app = make_app(store, plan, "zoe")
        async with app.run_test(size=(80, 24)) as pilot:
            first = app.session.case.action.id
            await pilot.press("n")  # no: then the reasons
            assert app.session.toggles == set()
            assert "Enter stores them" in _screen_text(app)
            await pilot.press("enter")  # no reason yet: refused
            assert first not in _gold(store, "mental_model")
            await pilot.press("1", "2", "2", "4", "enter")
            await pilot.pause()
            gold = _gold(store, "mental_model")[first]
            assert (gold["value"], gold["codes"]) == ("no", ("n1", "n4"))
            await pilot.press("y")
        gold = _gold(store, "mental_model")
        assert {g["value"] for g in gold.values()} == {"no", "yes"}
        assert app.return_value == 2


def test_nothing_to_decide_opens_no_screen(cli, demo) -> None:
    with Store(demo) as store:
        plan = _plan(store)
        from annotate.reliability.adjudication import decide

        for case in plan.to_decide:
            decide(store, plan, case, case.answers[0].answer, "zoe")
    r = cli("adjudicate", "--adjudicator", "zoe")
    assert r.exit_code == 0, r.output
    assert "0 to decide (ties and flagged); " in r.stdout
    # the rule, the coders answering each item, the summary
    assert r.stdout.count("\n") == 3 and r.stdout.startswith("majority: ")
