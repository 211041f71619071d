"""Adjudication's one planner (`adjudicate_majority`: vote patterns in SQL, the majority
gold written in bulk, the cases read back from what it staged) must plan and store exactly
what the per-case rule (one `Case` per item from dict rows, one `LabelWrite` per majority
case through `save_gold`: the reference below) does, on a mixed project: ties, flags (with
and without answers), notes, skips, "Other" texts, multi-select and yes/no questions with
reasons, kept decided and imported gold, stale majority gold, an item one coder answered,
with and without a sample (dense positions or not)."""

from __future__ import annotations

import random
import shutil
import sqlite3
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

import annotate.store.gold
import annotate.store.gold_votes
import annotate.store.labels
from annotate.codebook import Answer, find_codebook
from annotate.io.importing import import_files
from annotate.reliability import adjudication as adj
from annotate.reliability import majority_pass
from annotate.reliability.majority_pass import adjudicate_majority
from annotate.reliability.majority_rule import majority_rule
from annotate.reliability.selection import select
from annotate.store import LabelWrite, Store
from annotate.store.agreement_runs import GOLD_CODER, GOLD_SOURCE
from annotate.store.gold_votes import PATTERN_BITS, VoteScope
from annotate.store.label_cells import LabelScope
from tests.conftest import DEMO

MIXED = """
name: mixed
title: Mixed
version: "1"
questions:
  - id: act
    prompt: Which act?
    allow_other: true
    options:
      - {code: a, label: A, key: "1"}
      - {code: b, label: B, key: "2"}
      - {code: c, label: C, key: "3"}
  - id: tags
    prompt: Which tags?
    kind: multi
    allow_other: true
    options:
      - {code: x, label: X, key: "1"}
      - {code: y, label: Y, key: "2"}
      - {code: z, label: Z, key: "3"}
  - id: ok
    prompt: Is it clear?
    kind: yes_no_reasons
    allow_other: true
    options:
      - {code: n1, label: Vague, key: "1"}
      - {code: n2, label: Wrong, key: "2"}
"""

CODERS = ("ana", "ben", "caro")


def _answer(rng: random.Random, question: str) -> Answer:
    if question == "act":
        value = rng.choice(["a", "a", "a", "b", "c", "other"])
        return Answer(value, (), rng.choice(["hi", "hello"]) if value == "other" else None)
    if question == "tags":
        codes = tuple(sorted(rng.sample(["x", "y", "z", "other"], rng.choice([1, 1, 2]))))
        return Answer(None, codes, "misc" if "other" in codes else None)
    if rng.random() < 0.6:
        return Answer("yes")
    codes = tuple(sorted(rng.sample(["n1", "n2", "other"], rng.choice([1, 2]))))
    return Answer("no", codes, "odd" if "other" in codes else None)


def _mixed_project(path: Path, tmp_path: Path, *, sample: bool | str) -> list[str]:
    book = tmp_path / "mixed.yaml"
    book.write_text(MIXED)
    loaded = find_codebook(str(book))
    cb = loaded.codebook
    rng = random.Random(11)
    with Store(path) as s:
        import_files(s, sorted(DEMO.glob("*.jsonl")))
        s.codebooks.register_codebook(loaded)
        every = [r["id"] for r in s.actions.action_rows()]
        ids = every[:70]
        for i, action_id in enumerate(ids):
            for q in cb.questions:
                truth = _answer(rng, q.id)
                for coder in CODERS:
                    if i % 17 == 5 and coder != "ana":
                        continue  # answered by one coder: left for later
                    if rng.random() < 0.1:
                        continue  # not answered
                    answer = truth if rng.random() < 0.7 else _answer(rng, q.id)
                    s.labels.save_answer(action_id, cb, q.id, coder, answer)
                    if rng.random() < 0.08:
                        s.labels.set_note(action_id, cb, coder, [q.id], f"note {i}")
                    if rng.random() < 0.04:
                        s.labels.set_skipped(action_id, cb, coder, [q.id])
        for action_id in ids[:6]:
            s.labels.set_flag(action_id, cb, "ben", ["act"])
        for action_id in ids[60:62]:  # flagged without an answer by anyone
            s.labels.clear_answer(action_id, cb.name, "tags", "ana")
            s.labels.clear_answer(action_id, cb.name, "tags", "ben")
            s.labels.clear_answer(action_id, cb.name, "tags", "caro")
            s.labels.set_flag(action_id, cb, "caro", ["tags"])
        if sample == "every":  # a sample of every action: not applied (nothing to keep out)
            s.samples.create_sample("main", every[::-1])
        elif sample:
            s.samples.create_sample("main", ids[3:66])
    return ids


def _reference_plan(store: Store, selection: Any) -> adj.GoldPlan:
    """The plan by the per-case rule, as `plan_gold` made it before the vote patterns
    (main at 8f993e9): a dict per label, a `Case` per item."""
    cb = selection.codebook
    coders = selection.coders
    sample = selection.sample if selection.action_ids is not None else None
    majority, to_decide, kept, stale = [], [], [], []
    too_few = 0
    for q in selection.questions:
        rows = store.labels.label_rows(
            cb.name, coders=coders, sample=sample, question=q.id, columns=adj.CELL_COLUMNS
        )
        golds = {
            r["action_id"]: r
            for r in store.labels.label_rows(
                cb.name, coders=[GOLD_CODER], sample=sample, question=q.id
            )
            if adj._answer(r) is not None
        }
        made: dict = {}
        by_item: dict = {}
        for r in rows:
            by_item.setdefault(r["action_id"], {})[r["coder"]] = r
        ids = selection.action_ids
        order = [i for i in ids if i in by_item] if ids is not None else sorted(by_item)
        shared: dict = {}
        for item in order:
            answers = tuple(
                adj._coder_answer(c, by_item[item].get(c), made, shared) for c in coders
            )
            n_answers = sum(a.answer is not None for a in answers)
            if n_answers < 2 and not any(a.flagged for a in answers):
                too_few += n_answers == 1
                continue
            best, votes = adj.majority_answer([a.answer for a in answers], len(coders))
            gold_row = golds.get(item)
            case = adj.Case(
                action_id=item,
                question=q,
                answers=answers,
                majority=best,
                votes=votes,
                flagged_by=tuple(a.coder for a in answers if a.flagged),
                gold=adj._answer(gold_row) if gold_row else None,
                gold_meta=(
                    (gold_row["meta"] or {}) | {"source": gold_row["source"]} if gold_row else {}
                ),
            )
            if case.kept_gold:
                kept.append(case)
            elif best is not None and not case.flagged_by and adj.fits(best, q):
                majority.append(case)
            else:
                to_decide.append(case)
        backed = {c.action_id for c in majority if c.question.id == q.id}
        stale += [
            (item, q.id)
            for item, row in golds.items()
            if row["source"] == GOLD_SOURCE
            and (row["meta"] or {}).get("method") == "majority"
            and item not in backed
        ]
    return adj.GoldPlan(
        cb, selection.sample, coders, majority, to_decide, kept, too_few, tuple(stale)
    )


def _reference_write(store: Store, plan: adj.GoldPlan, adjudicator: str) -> int:
    """The per-case write of main at 8f993e9: a LabelWrite per case through save_gold."""
    writes = [
        LabelWrite(
            c.action_id,
            c.question.id,
            GOLD_CODER,
            c.majority,
            source=GOLD_SOURCE,
            meta=adj.gold_meta(c, "majority", adjudicator, plan.coders),
        )
        for c in plan.majority
        if c.majority is not None
    ]
    with store.db.transaction():
        if writes:
            store.agreement.save_gold(plan.codebook, writes)
        for action_id, question in plan.stale:
            store.labels.clear_answer(action_id, plan.codebook.name, question, GOLD_CODER)
    return len(writes)


def _case(c: adj.Case) -> tuple:
    return (
        c.action_id,
        c.question.id,
        c.answers,
        c.majority,
        c.votes,
        c.flagged_by,
        c.gold,
        c.gold_meta,
    )


def _rows(path: Path) -> list[tuple]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(
            "SELECT action_id, codebook, codebook_hash, question, coder, value, codes, "
            "other_text, note, flagged, skipped, seconds, source, meta, created_at, updated_at "
            "FROM labels ORDER BY action_id, codebook, question, coder"
        ).fetchall()


@pytest.fixture
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Both paths stamp rows with the same time (one per write)."""
    stamp = ["2026-01-01T00:00:00.000Z"]
    for module in (annotate.store.labels, annotate.store.gold_votes, annotate.store.gold):
        monkeypatch.setattr(module, "now", lambda: stamp[0])
    return stamp


def _both(path: Path, tmp_path: Path, adjudicator: str, stamp: list[str]) -> tuple[Path, Path]:
    """Adjudicate a copy of ``path`` by the one pass and another by the per-case reference,
    checking the plans and the stored rows agree; return both copies."""
    run = len(list(tmp_path.glob("*-one-pass.db")))
    one_pass, old = tmp_path / f"{run}-one-pass.db", tmp_path / f"{run}-old.db"
    for copy in (one_pass, old):
        shutil.copy(path, copy)
    with Store(old) as s:
        selection = select(s, codebook="mixed")
        reference = _reference_plan(s, selection)
        answered, by_answering = _coverage(s, selection)
        written = _reference_write(s, reference, adjudicator)
        after = _reference_plan(s, select(s, codebook="mixed"))  # the cases as they now stand
    with Store(one_pass) as s:
        counted = select(s, codebook="mixed", counted_ids=True)  # as the command selects
        plan, written_fast = adjudicate_majority(s, counted, adjudicator)
        assert written_fast == written == len(plan.majority)
        assert plan.too_few == reference.too_few and plan.stale == reference.stale
        assert majority_rule(plan).answered == answered
        assert plan.by_answering == by_answering
        undecided = Counter(
            tuple(a.answer and Answer(a.answer.value, a.answer.codes) for a in c.answers)
            for c in reference.to_decide
            if c.majority is None and not c.flagged_by
        )
        assert dict(plan.undecided_votes) == dict(undecided)
        for kind in ("majority", "to_decide", "kept"):  # read after the write
            assert [_case(c) for c in getattr(plan, kind)] == [
                _case(c) for c in getattr(after, kind)
            ], kind
    assert _rows(one_pass) == _rows(old)
    stamp[0] = f"2026-01-01T00:00:{run + 1:02d}.000Z"  # the next write's time
    return one_pass, old


def _coverage(store: Store, selection: Any) -> tuple[dict[str, int], dict[int, int]]:
    """Every (item, question) each coder answered, and (item, question) by how many coders
    answered them (0: flagged, nobody answered), from the labels one by one."""
    sample = selection.sample if selection.action_ids is not None else None
    answered: Counter[str] = Counter()
    by_item: dict[tuple[str, str], list[dict]] = {}
    for q in selection.questions:
        for r in store.labels.label_rows(
            "mixed", coders=selection.coders, sample=sample, question=q.id,
            columns=adj.CELL_COLUMNS,
        ):  # fmt: skip
            by_item.setdefault((r["action_id"], q.id), []).append(r)
    counts: Counter[int] = Counter()
    for rows in by_item.values():
        who = [r["coder"] for r in rows if adj._answer(r) is not None]
        answered.update(who)
        if who or any(r["flagged"] for r in rows):
            counts[len(who)] += 1
    return dict(answered), dict(sorted(counts.items(), reverse=True))


def _plan(s: Store, adjudicator: str = "zoe") -> adj.GoldPlan:
    return adjudicate_majority(s, select(s, codebook="mixed"), adjudicator, read_cases=True)[0]


@pytest.mark.parametrize(
    ("sample", "lookup"),
    [(False, 0), (True, 10**9), ("sparse", 10**9), (True, 0), ("sparse", 0), ("every", 10**9)],
    ids=[
        "no-sample",
        "sample-read-all",
        "sparse-read-all",
        "sample-looked-up",
        "sparse-looked-up",
        "sample-of-every-action",
    ],
)
def test_bulk_gold_is_what_the_per_case_path_wrote(
    tmp_path: Path,
    fixed_clock: list[str],
    monkeypatch: pytest.MonkeyPatch,
    sample: bool | str,
    lookup: int,
) -> None:
    """Each way of reading a sample: every label, merged with the sample's ids (as for a
    large sample), or the sample's items looked up one by one (``SAMPLE_LOOKUP`` 0: as
    for a sample small beside the labels)."""
    monkeypatch.setattr(majority_pass, "SAMPLE_LOOKUP", lookup)
    path = tmp_path / "mixed.db"
    _mixed_project(path, tmp_path, sample=sample)
    if sample == "sparse":  # positions no longer 0..n-1
        with closing(sqlite3.connect(path)) as conn, conn:
            conn.execute("DELETE FROM sample_items WHERE position IN (0, 7, 20)")
    bulk, _ = _both(path, tmp_path, "zoe", fixed_clock)
    with Store(bulk) as s:
        plan = _plan(s)
        assert len(plan.majority) > 20 and len(plan.to_decide) > 10 and plan.too_few
        assert {c.question.kind for c in plan.majority} == {"single", "multi", "yes_no_reasons"}
        assert any(c.majority and c.majority.other_text for c in plan.majority)
        assert any(not c.answers[0].answer and not c.answers[1].answer for c in plan.to_decide)
        assert any(a.note for c in plan.majority for a in c.answers)
    # the same again by someone else: the provenance is brought up to date, nothing else
    # a decided gold, an imported gold, and majorities broken or flagged since
    bulk, _ = _both(bulk, tmp_path, "max", fixed_clock)
    with Store(bulk) as s:
        cb = s.codebooks.stored_codebook("mixed")
        plan = _plan(s)
        adj.decide(s, plan, plan.majority[0], Answer("b"), "zoe")
        imported = next(c for c in plan.majority[3:] if c.question.id == "act")
        other = Answer("a" if imported.majority != Answer("a") else "b")  # changed: replaced
        s.labels.save_answers(
            cb, [LabelWrite(imported.action_id, imported.question.id, GOLD_CODER, other)]
        )
        for case in plan.majority[5:9]:
            for a in case.answers:
                s.labels.set_flag(case.action_id, cb, a.coder, [case.question.id])
        for case in plan.majority[10:14]:
            for a in case.answers[:2]:
                s.labels.clear_answer(case.action_id, cb.name, case.question.id, a.coder)
    trial = tmp_path / "trial.db"  # a pass on a copy: the next one must find them stale
    shutil.copy(bulk, trial)
    with Store(trial) as s:
        assert len(_plan(s).stale) >= 6
    bulk, _ = _both(bulk, tmp_path, "zoe", fixed_clock)
    with Store(bulk) as s:
        plan = _plan(s)
        assert len(plan.kept) == 2 and len(plan.stale) == 0  # retracted by the last run


def test_a_pattern_too_wide_for_an_integer_is_text(tmp_path: Path, fixed_clock) -> None:
    """Many coders x many values: the pattern is "coder:number,..." and plans the same."""
    path = tmp_path / "mixed.db"
    _mixed_project(path, tmp_path, sample=False)
    values = tuple(f"v{i}" for i in range(2000))
    scope = VoteScope(LabelScope("mixed", ("act",), CODERS * 2), values)
    assert not scope.packed and len(CODERS) * 2 * scope.value_bits > PATTERN_BITS
    original = VoteScope.packed
    try:
        VoteScope.packed = property(lambda self: False)  # type: ignore[method-assign]
        _both(path, tmp_path, "zoe", fixed_clock)
    finally:
        VoteScope.packed = original  # type: ignore[method-assign]


def test_cases_are_read_only_when_asked_for_and_only_from_their_own_pass(
    tmp_path: Path,
) -> None:
    path = tmp_path / "mixed.db"
    _mixed_project(path, tmp_path, sample=True)
    with Store(path) as s:
        plan, written = adjudicate_majority(s, select(s, codebook="mixed"), "zoe")
        assert isinstance(plan.majority, adj.Cases) and not plan.majority.loaded
        assert not plan.to_decide.loaded and plan.n_undecided == len(plan.to_decide) > 0
        assert written == len(plan.majority)
        assert len(plan.undecided) == plan.n_undecided  # read now, the store still open
        assert plan.to_decide.loaded and not plan.majority.loaded
        assert all(c.loaded is not None for c in plan.to_decide)  # the screen shows these
        later, _ = adjudicate_majority(s, select(s, codebook="mixed"), "zoe")
        with pytest.raises(RuntimeError, match="later adjudication pass"):
            list(plan.majority)  # its tables were replaced: never another pass's cases
        assert len(list(later.majority)) == len(plan.majority)


@pytest.mark.parametrize("sample", ["large", "small", None])
def test_reading_the_cases_uses_indexes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sample: str | None
) -> None:
    """The screen's cases, read back from the pass's tables: the staged votes in one scan
    of their temporary table (each looked up in the few undecided patterns, by its key),
    the sample's order by its index, each case's labels by the unique index; no scan of a
    big table (see tests/test_scale_query_plans.py)."""
    from tests.test_scale_query_plans import captured, plan, unindexed

    monkeypatch.setattr(majority_pass, "SAMPLE_LOOKUP", 10**9 if sample == "small" else 0)
    path = tmp_path / "mixed.db"
    _mixed_project(path, tmp_path, sample=sample is not None)
    with Store(path) as s:
        selection = select(s, codebook="mixed", counted_ids=True)
        made = adjudicate_majority(s, selection, "zoe")[0]
        with captured(s) as run:
            cases = [*made.majority, *made.to_decide, *made.kept]
        assert len(cases) == len(made.majority) + len(made.to_decide) + len(made.kept)
        # (the view `labels` is scanned as the co-routine its two indexed searches fill)
        assert [
            (q, line)
            for q, line in unindexed(s, run)
            if not (line == "SCAN labels" and "CO-ROUTINE labels" in plan(s, q))
        ] == []
        reads = [q for q in dict.fromkeys(run) if "temp._" in q and q.startswith("SELECT")]
        assert len(reads) == 3
        for q in reads:
            lines = plan(s, q)
            assert not [x for x in lines if "AUTOMATIC" in x], (q, lines)
            if "_undecided" in q:
                assert any(x.startswith("SEARCH u USING") for x in lines), lines


def test_a_sample_of_every_action_is_not_looked_up(tmp_path: Path, fixed_clock: list[str]) -> None:
    """A sample that holds every action keeps nothing out: the one pass reads the labels
    without a lookup per item in the sample (0.7 s at 1M items), and writes the gold of
    every item, as with the sample applied."""
    from tests.test_scale_query_plans import captured

    path = tmp_path / "mixed.db"
    _mixed_project(path, tmp_path, sample="every")
    applied = tmp_path / "applied.db"
    shutil.copy(path, applied)
    with Store(path) as s:
        selection = select(s, codebook="mixed", counted_ids=True)
        with captured(s) as run:
            _, written = adjudicate_majority(s, selection, "zoe")
        assert written > 20
        assert [q for q in run if "sample_items" in q] == []
    with Store(applied) as s:  # one more action, outside the sample: the sample is applied
        s.db.conn.execute(
            "INSERT INTO actions (id, session, seq, participant, action_type, content) "
            "SELECT id || '-x', session, seq + 100000, participant, action_type, content "
            "FROM actions LIMIT 1"
        )
        selection = select(s, codebook="mixed", counted_ids=True)
        with captured(s) as run:
            _, written_applied = adjudicate_majority(s, selection, "zoe")
        assert any("sample_items" in q and "count(*)" not in q for q in run)
    assert written_applied == written
    assert _rows(applied) == _rows(path)


@pytest.mark.parametrize("sample", [True, "every", False], ids=["sample", "every", "none"])
def test_the_one_pass_uses_indexes(tmp_path: Path, sample: bool | str) -> None:
    """`adjudicate --majority-only`'s statements: no scan of a big table but the count of
    actions (a B-tree's page count); the temporary tables are read by their keys; the gold
    of every staged vote, said by a number or with its JSON, goes in by one statement."""
    from tests.test_scale_query_plans import captured, plan, unindexed

    path = tmp_path / "mixed.db"
    _mixed_project(path, tmp_path, sample=sample)
    with Store(path) as s:
        selection = select(s, codebook="mixed", counted_ids=True)
        with captured(s) as run:
            adjudicate_majority(s, selection, "zoe")
        assert unindexed(s, run) == [
            (
                "SELECT count(*) FROM actions",
                "SCAN actions USING COVERING INDEX actions_participant",
            )
        ] * (sample is not False)
        reads = [q for q in dict.fromkeys(run) if q.startswith(("SELECT", "WITH"))]
        for q in reads:
            assert not [x for x in plan(s, q) if "AUTOMATIC" in x and "(id=?)" not in x], q
        [marked] = [q for q in run if q.startswith("UPDATE temp._votes")]
        assert plan(s, marked) == [  # by the few set aside, not a lookup per staged vote
            "SEARCH temp._votes USING PRIMARY KEY (action_id=? AND q=?)",
            "USING INDEX sqlite_autoindex__set_aside_1 FOR IN-OPERATOR",
        ]
        writes = [q for q in run if q.startswith("INSERT INTO gold AS old")]
        assert len(writes) == 1
        assert plan(s, writes[0]) == [
            "COMPOUND QUERY",
            "LEFT-MOST SUBQUERY",
            "SCAN v",
            "SEARCH k USING INDEX sqlite_autoindex__pattern_kinds_1 (q=? AND pattern=?)",
            "UNION ALL",
            "SCAN v",
            "SEARCH r USING INDEX _rich_votes (q=? AND pattern=? AND rich=?)",
            "CORRELATED SCALAR SUBQUERY 3",
            "SEARCH a USING INTEGER PRIMARY KEY (rowid=?)",
            "SEARCH b USING INTEGER PRIMARY KEY (rowid=?)",
            "CORRELATED SCALAR SUBQUERY 4",
            "SEARCH a USING INTEGER PRIMARY KEY (rowid=?)",
        ]


@pytest.mark.parametrize("sample", ["every", True], ids=["every", "sample"])
def test_gold_on_an_id_no_action_has_is_left_alone(
    tmp_path: Path, fixed_clock: list[str], sample: bool | str
) -> None:
    """Gold can name an id the actions do not hold (no foreign key: SQL written by hand).
    No sample holds it, so the majority vote leaves it alone, also when the sample of every
    action is not applied."""

    path = tmp_path / "mixed.db"
    _mixed_project(path, tmp_path, sample=sample)
    with Store(path) as s:
        s.labels.save_answers(
            s.codebooks.stored_codebook("mixed"),
            [LabelWrite("not-an-action", "act", "gold", Answer("a"), GOLD_SOURCE,
                        {"method": "majority"})],
        )  # fmt: skip
    _both(path, tmp_path, "zoe", fixed_clock)
    [one_pass] = tmp_path.glob("*-one-pass.db")
    with closing(sqlite3.connect(one_pass)) as conn:
        assert conn.execute(
            "SELECT count(*) FROM gold WHERE action_id = 'not-an-action'"
        ).fetchone() == (1,)
