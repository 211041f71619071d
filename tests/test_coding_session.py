"""The coding session core, without any UI: keys, storage, timing, resume, undo."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotate.codebook import LoadedCodebook, parse_codebook
from annotate.coding.context import format_offset
from annotate.coding.keys import command_keys
from annotate.coding.session import IDLE_CAP_S, CodingSession
from annotate.coding.session_inputs import check_coder, resolve_codebook
from annotate.errors import CodebookError, NotFoundError, UsageError
from annotate.store import Store
from tests.test_coding_support import answers, codebook, labels, project, sample_ids


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t

    def tick(self, s: float) -> None:
        self.t += s


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return project(tmp_path)


@pytest.fixture
def open_session(db: Path):
    stores: list[Store] = []

    def make(book: str = "traum", coder: str = "dora", **kw) -> CodingSession:
        store = Store(db)
        stores.append(store)
        return CodingSession(store, codebook(book), coder, kw.pop("sample", "main"), **kw)

    yield make
    for s in stores:
        s.close()


def test_single_question_key_stores_and_moves_on(db, open_session) -> None:
    clock = Clock()
    s = open_session(clock=clock)
    ids = sample_ids(db)
    assert s.n == len(ids) and s.index == 0
    clock.tick(4)
    assert s.handles("1") and not s.handles("z")
    assert s.press("1") is None
    assert s.index == 1
    clock.tick(6)
    s.press("3")
    got = answers(db, "dora", "traum")
    assert got == {
        (ids[0], "act"): ("Initiate", None, None),
        (ids[1], "act"): ("Acknowledge", None, None),
    }
    rows = {r["action_id"]: r for r in labels(db, "dora")}
    assert rows[ids[0]]["seconds"] == pytest.approx(4)
    assert rows[ids[1]]["seconds"] == pytest.approx(6)
    assert rows[ids[0]]["codebook_hash"] == codebook("traum").codebook.version_hash
    assert s.counts().coded == 2


def test_other_needs_text(db, open_session) -> None:
    s = open_session()
    fb = s.press("o")
    assert fb is not None and fb.kind == "need_text"
    assert s.index == 0 and answers(db, "dora", "traum") == {}
    assert s.answer_other("   ").kind == "warning"
    s.answer_other("greeting")
    assert answers(db, "dora", "traum") == {(sample_ids(db)[0], "act"): ("other", None, "greeting")}
    assert s.index == 1


def test_mental_model_questions_in_order_with_reasons(db, open_session) -> None:
    s = open_session("mental_model")
    first = s.item.action.id
    s.press("2")  # Q1 t2
    assert s.q_index == 1 and s.index == 0
    s.press("5")  # Q2 p5
    s.press("o")  # Q3 other -> text
    s.answer_other("checking the canvas")
    assert s.question.id == "Q4"
    fb = s.press("n")
    assert fb is None and s.toggles is not None
    assert s.confirm().kind == "warning"  # no reason yet
    s.press("2")
    s.press("4")
    s.press("2")  # toggled off again
    s.press("1")
    assert s.index == 0  # not stored until confirmed
    s.confirm()
    assert s.index == 1 and s.q_index == 0
    got = answers(db, "dora", "mental_model")
    assert got == {
        (first, "Q1"): ("t2", None, None),
        (first, "Q2"): ("p5", None, None),
        (first, "Q3"): ("other", None, "checking the canvas"),
        (first, "Q4"): ("no", json.dumps(["n1", "n4"]), None),
    }


def test_q4_yes_other_reason_and_escape(db, open_session) -> None:
    s = open_session("mental_model")
    for key in "111":
        s.press(key)
    s.press("n")
    assert s.press("o").kind == "need_text"  # ticking "other" asks for its text at once
    s.drop_other()  # the text field closed empty: "other" is unticked
    assert s.toggles is not None and s.toggles.codes == set()
    s.cancel()  # escape: nothing stored, still on Q4
    assert s.toggles is None and s.question.id == "Q4"
    s.press("n")
    assert s.press("o").kind == "need_text"
    assert s.answer_other("map glitch") is None  # kept with the ticks
    s.press("2")
    s.press("2")  # ticked and unticked again
    assert s.question.id == "Q4" and s.toggles.codes == {"other"}
    assert s.confirm() is None  # Enter stores the reasons and the text
    second = s.item.action.id
    for key in "111":
        s.press(key)
    s.press("y")
    got = answers(db, "dora", "mental_model")
    first = sample_ids(db)[0]
    assert got[(first, "Q4")] == ("no", json.dumps(["other"]), "map glitch")
    assert got[(second, "Q4")] == ("yes", None, None)


def test_resume_at_first_uncoded_and_blind(db, open_session) -> None:
    ids = sample_ids(db)
    with Store(db) as store:  # another coder's labels must never be read
        from annotate.codebook import Answer

        cb = codebook("traum").codebook
        for aid in ids:
            store.labels.save_answer(aid, cb, "act", "ana", Answer("Cancel"))
    s = open_session(new_coder=True)  # the file has a coder (ana): dora is new
    s.press("1")
    s.press("2")
    s.go(1)
    s.press("3")  # item 4; item 3 stays uncoded
    s2 = open_session()
    assert s2.index == 2
    assert s2.item.answers == {}
    assert [s2.items[i].answers["act"].value for i in (0, 1, 3)] == [
        "Initiate",
        "Continue",
        "Acknowledge",
    ]
    assert not any(it.answers.get("act") and it.answers["act"].value == "Cancel" for it in s2.items)


def test_undo_back_and_change(db, open_session) -> None:
    clock = Clock()
    s = open_session(clock=clock)
    ids = sample_ids(db)
    s.press("1")
    clock.tick(3)
    s.press("2")
    clock.tick(4)
    fb = s.undo()
    assert fb.kind == "info" and s.index == 1
    assert (ids[1], "act") not in answers(db, "dora", "traum")
    rows = {r["action_id"]: r for r in labels(db, "dora")}
    # the answer is gone; the time spent stays: 3 s on item 2, 4 s on item 3 before undo
    assert (rows[ids[1]]["value"], rows[ids[1]]["codes"]) == (None, None)
    assert rows[ids[1]]["seconds"] == pytest.approx(3)
    assert rows[ids[2]]["value"] is None and rows[ids[2]]["seconds"] == pytest.approx(4)
    s.go(-1)
    before = labels(db, "dora")[0]
    s.press("4")  # change item 1
    after = next(r for r in labels(db, "dora") if r["action_id"] == ids[0])
    assert after["value"] == "Repair"
    assert after["created_at"] == before["created_at"]
    s.undo()  # back to Initiate, the previous answer
    assert answers(db, "dora", "traum")[(ids[0], "act")][0] == "Initiate"
    assert s.undo().kind == "info"  # the first answer: back to nothing
    assert answers(db, "dora", "traum") == {}
    assert s.undo().message == "Nothing to undo."


def test_skip_flag_note_goto_and_next_uncoded(db, open_session) -> None:
    s = open_session()
    ids = sample_ids(db)
    s.skip()
    assert s.index == 1
    s.toggle_flag()
    s.set_note("ask the team")
    s.press("3")
    c = s.counts()
    assert (c.coded, c.skipped, c.flagged) == (1, 1, 1)
    rows = {r["action_id"]: r for r in labels(db, "dora")}
    assert rows[ids[0]]["skipped"] == 1 and rows[ids[0]]["value"] is None
    assert rows[ids[1]]["flagged"] == 1 and rows[ids[1]]["note"] == "ask the team"
    assert s.goto(99).kind == "warning"
    s.goto(1)
    assert s.index == 0
    s.next_uncoded()
    assert s.index == 2  # the next item neither coded nor skipped
    s.goto(1)
    s.press("5")  # answering a skipped item un-skips it
    rows = {r["action_id"]: r for r in labels(db, "dora")}
    assert rows[ids[0]]["skipped"] == 0 and rows[ids[0]]["value"] == "ReqRepair"
    s.undo()
    rows = {r["action_id"]: r for r in labels(db, "dora")}
    assert rows[ids[0]]["skipped"] == 1 and rows[ids[0]]["value"] is None


def test_finish_and_wrap_to_uncoded(db, open_session) -> None:
    s = open_session(sample="other")
    s.skip()
    s.press("1")
    fb = s.press("1")
    assert fb is not None and "#1" in fb.message
    fb = s.press("2")
    assert fb is not None and fb.kind == "done" and s.finished


def test_idle_time_is_capped_and_browsing_time_counts(db, open_session) -> None:
    clock = Clock()
    s = open_session(clock=clock)
    clock.tick(10_000)
    s.press("1")
    clock.tick(5)
    s.go(-1)  # 5 s on item 2 without answering: kept on a row without an answer
    clock.tick(7)
    s.go(1)  # 7 s reviewing item 1: added to its row
    ids = sample_ids(db)
    rows = {r["action_id"]: r for r in labels(db, "dora")}
    assert rows[ids[0]]["seconds"] == pytest.approx(IDLE_CAP_S + 7)
    assert rows[ids[1]]["seconds"] == pytest.approx(5)
    assert (rows[ids[1]]["value"], rows[ids[1]]["skipped"]) == (None, 0)
    clock.tick(2)
    s.skip()  # 2 + 2 s on item 2, then skipped
    clock.tick(6)
    s.goto(5)  # 6 s on item 3, passed over with g
    clock.tick(1)
    s.close()  # 1 s on item 5 when quitting
    rows = {r["action_id"]: r for r in labels(db, "dora")}
    assert rows[ids[1]]["seconds"] == pytest.approx(7) and rows[ids[1]]["skipped"] == 1
    assert rows[ids[2]]["seconds"] == pytest.approx(6)
    assert rows[ids[4]]["seconds"] == pytest.approx(1)
    assert answers(db, "dora", "traum") == {(ids[0], "act"): ("Initiate", None, None)}
    s2 = open_session()  # the time is read back, and browsing does not count as coding
    assert [it.seconds for it in s2.items[:5]] == pytest.approx([IDLE_CAP_S + 7, 7, 6, 0, 1])
    assert (s2.counts().coded, s2.counts().skipped, s2.index) == (1, 1, 2)


def test_pace_and_eta(db, open_session) -> None:
    clock = Clock()
    s = open_session(clock=clock)
    assert s.eta_seconds() is None
    for spent in (10, 20, 30):
        clock.tick(spent)
        s.press("1")
    assert s.pace_seconds() == 20
    assert s.eta_seconds() == 20 * (s.n - 3)


def test_codebook_change_warns_and_labels_keep_version(db, open_session, tmp_path) -> None:
    s = open_session()
    s.press("1")
    old_hash = s.codebook.version_hash
    text = codebook("traum").text.replace('version: "1.1"', 'version: "1.2"')
    changed = LoadedCodebook(parse_codebook(text, "traum.yaml"), text, "traum.yaml")
    store = Store(db)
    try:
        s2 = CodingSession(store, changed, "dora", "main")
        assert s2.version_warning and "v1.1" in s2.version_warning and "v1.2" in s2.version_warning
        s2.press("2")
    finally:
        store.close()
    hashes = [r["codebook_hash"] for r in labels(db, "dora")]
    assert set(hashes) == {old_hash, changed.codebook.version_hash}
    assert open_session(coder="erin", new_coder=True).version_warning is None


def test_coder_names(db) -> None:
    with Store(db) as store:
        assert check_coder(store, "traum", "dora") is True
        from annotate.codebook import Answer

        store.labels.save_answer(
            sample_ids(db)[0], codebook("traum").codebook, "act", "Ana", Answer("Cancel")
        )
        assert check_coder(store, "traum", "Ana") is False
        for bad, words in [
            ("ana", "only in case"),
            ("gold", "reserved"),
            ("llm:gpt", "reserved"),
            ("two words", "not allowed"),
        ]:
            with pytest.raises(UsageError) as exc:
                check_coder(store, "traum", bad)
            assert words in exc.value.message
            assert "Ana" in (exc.value.hint or "")


def test_unknown_coder_needs_new_coder(db) -> None:
    from annotate.codebook import Answer

    first = sample_ids(db)[0]
    with Store(db) as store:
        assert check_coder(store, "traum", "dora") is True  # no coder yet: anyone may start
        for coder in ("gold", "llm:gpt"):  # not human coders: still none known
            store.labels.save_answer(
                first, codebook("traum").codebook, "act", coder, Answer("Cancel")
            )
        assert check_coder(store, "traum", "dora") is True
        store.labels.save_answer(
            first, codebook("mental_model").codebook, "Q1", "ana", Answer("t1")
        )
        with pytest.raises(NotFoundError) as exc:
            check_coder(store, "traum", "dora")
        assert exc.value.message == "unknown coder 'dora' (existing coders: ana)"
        assert "--new-coder" in (exc.value.hint or "")
        with pytest.raises(NotFoundError):
            CodingSession(store, codebook("traum"), "dora", "main")
        assert check_coder(store, "traum", "dora", new_coder=True) is True
        assert check_coder(store, "traum", "ana") is True  # known from another codebook
        assert check_coder(store, "mental_model", "ana") is False
        browser = CodingSession(store, codebook("traum"), "eve", "main", new_coder=True)
        browser.go(1)
        browser.close()  # looked at two items, answered nothing: time rows only
        assert store.db.query("SELECT count(*) FROM labels WHERE coder = 'eve'")[0][0] > 0
        assert "eve" not in store.labels.coders()  # browsing does not make a coder
        with pytest.raises(NotFoundError):
            check_coder(store, "traum", "eve")
        s = CodingSession(store, codebook("traum"), "dora", "main", new_coder=True)
        s.press("1")
        assert check_coder(store, "traum", "dora") is False  # known from now on


def test_answer_goes_to_the_first_open_question(db, open_session) -> None:
    s = open_session("mental_model")
    first = s.item.action.id
    s.step_question(-1)  # Shift+Tab from Q1: Q4
    assert s.question.id == "Q4"
    s.press("y")
    assert (s.index, s.question.id) == (0, "Q1")  # back to the first unanswered question
    s.press("2")
    s.step_question(1)  # Tab past Q2 to Q3
    s.press("3")
    assert (s.index, s.question.id) == (0, "Q2")
    assert not s.item.coded and s.counts().coded == 0
    s.press("1")  # the last open question: the item is done
    assert (s.index, s.q_index) == (1, 0)
    got = {q: v[0] for (a, q), v in answers(db, "dora", "mental_model").items() if a == first}
    assert got == {"Q1": "t2", "Q2": "p1", "Q3": "r3", "Q4": "yes"}
    s.go(-1)
    s.step_question(1)
    s.press("4")  # changing one answer of a coded item moves on
    assert (s.index, s.q_index) == (1, 0)
    assert answers(db, "dora", "mental_model")[(first, "Q2")][0] == "p4"


def test_missing_sample_and_codebook(db, tmp_path) -> None:
    with Store(db) as store:
        store.db.conn.execute("DELETE FROM sample_items")
        store.db.conn.execute("DELETE FROM samples WHERE name = 'main'")
        with pytest.raises(NotFoundError) as exc:
            CodingSession(store, codebook("traum"), "dora")
        assert "no sample named 'main'" in exc.value.message
        assert "annotate sample" in exc.value.hint and "other" in exc.value.hint
        with pytest.raises(CodebookError) as exc:
            resolve_codebook(store, "traumm")
        assert "traum" in exc.value.hint
    empty = tmp_path / "empty.db"
    with Store(empty) as store:
        with pytest.raises(NotFoundError) as exc:
            CodingSession(store, codebook("traum"), "dora")
        assert exc.value.hint.startswith("draw one first")


def test_codebook_not_applying_is_left_out(db, tmp_path) -> None:
    text = codebook("traum").text.replace(
        "applies_to: [message, draw, erase, undo, reset]", "applies_to: [message]"
    )
    loaded = LoadedCodebook(parse_codebook(text, "x.yaml"), text, "x.yaml")
    with Store(db) as store:
        s = CodingSession(store, loaded, "dora", "main")
        assert s.n + s.not_applicable == len(sample_ids(db))
        assert {it.action.action_type for it in s.items} == {"message"}


def test_context_rows_and_offsets(db, open_session) -> None:
    s = open_session(context=3, lookahead=2)
    rows = s.context_rows()
    items = [r for r in rows if r.is_item]
    assert len(items) == 1 and items[0].offset_s == 0.0
    before = [r for r in rows if not r.is_item and not r.after]
    assert len(before) <= 3 and all((r.offset_s or 0) <= 0 for r in before)
    assert len(s.context_rows(more=5)) >= len(rows)
    assert format_offset(-65) == "-1:05" and format_offset(8) == "+0:08"
    assert format_offset(0) == "now" and format_offset(None) == ""


def test_command_keys_move_off_codebook_letters() -> None:
    keys = command_keys(codebook("traum").codebook)
    assert keys["skip"] == "s" and keys["define"] == "question_mark"
    text = codebook("traum").text.replace('key: "7"', 'key: "s"')
    clashing = parse_codebook(text, "x.yaml")
    assert command_keys(clashing)["skip"] == "ctrl+s"


def test_answering_a_revisited_item_moves_to_the_next_in_order(db, open_session) -> None:
    """Reviewing: `g 2`, then a change to item 3 goes to item 4, not to the first uncoded
    item further on (issue 14); a first answer still goes to the next item still to do."""
    s = open_session()
    for key in "1234":  # items 1 to 4 coded
        s.press(key)
    s.goto(9)
    s.press("5")  # item 9 coded out of order
    assert s.index == 9  # a new answer: the next item still to code
    s.goto(2)
    s.press("2")  # item 2 changed: item 3, though item 5 is the first still open
    assert s.index == 2
    s.press("3")  # item 3 changed
    assert s.index == 3
    s.goto(8)
    s.press("6")  # item 8 coded: item 10, the next still to code after it
    assert s.index == 9
    s.goto(8)
    s.press("6")  # item 8 changed: item 9, coded, is next in order
    assert s.index == 8
    s.goto(s.n)
    s.press("7")  # the last item, new: wraps to the first still to code
    assert s.index == 4
    mm = open_session("mental_model", sample="six")
    for key in "123y":
        mm.press(key)
    assert mm.index == 1
    mm.go(-1)
    mm.step_question(1)
    mm.press("1")  # Q2 of the coded item 1 changed
    assert mm.index == 1 and mm.q_index == 0


def _recounted(s: CodingSession) -> tuple:
    """Counts, pace and time left counted over every item, as the status line did."""
    import statistics

    coded = [it for it in s.items if it.coded]
    times = [it.seconds for it in coded if it.seconds > 0]
    pace = statistics.median(times) if len(times) >= 3 else None
    counts = (
        len(coded),
        sum(1 for it in s.items if not it.coded and it.skipped),
        sum(1 for it in s.items if it.flagged),
    )
    return counts, pace, None if pace is None else pace * (s.n - len(coded))


@pytest.mark.parametrize("book", ["traum", "mental_model"])
def test_counts_kept_item_by_item_match_a_recount(db, open_session, book) -> None:
    """The counts, pace and time left shown at each render are kept up to date at each
    change (not counted over a 100k-item sample each time): after every step of a random
    walk through answers, skips, flags, undos and moves they equal a recount, and a session
    opened again reads the same counts back."""
    import random

    rng = random.Random(7)
    clock = Clock()
    s = open_session(book, clock=clock)
    steps = [
        lambda: s.press(rng.choice("1234")),
        lambda: s.press("n") or s.press("1") or s.confirm(),
        s.skip,
        s.toggle_flag,
        s.undo,
        lambda: s.go(rng.choice((-1, 1))),
        lambda: s.goto(rng.randint(1, s.n)),
        s.next_uncoded,
    ]
    for _ in range(300):
        clock.tick(rng.choice((0, 1, 4, 9)))
        s.toggles = None  # a step left half done (reasons being ticked) is dropped
        rng.choice(steps)()
        c = s.counts()
        assert ((c.coded, c.skipped, c.flagged), s.pace_seconds(), s.eta_seconds()) == _recounted(s)
    assert s.counts().coded > 3 and s.counts().flagged > 0
    s.close()
    again = open_session(book)
    assert again.counts() == s.counts()
    assert (again.pace_seconds(), again.eta_seconds()) == _recounted(again)[1:]
