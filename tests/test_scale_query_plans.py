"""The hot queries of `code` start-up, `llm-label` (targets, dry run, resume) and `report`
use an index: each statement they run is captured and its `EXPLAIN QUERY PLAN` read.

A full pass over `actions` or `labels` costs seconds at corpus scale (1M actions, 300k
labels; see benchmarks/README.md, "Corpus scale: code, report, llm-label"), so a plan line
`SCAN` of a big table fails the test, through an index or not, unless it walks an index in
the order asked for and stops at a LIMIT (a page of targets), or is one of the passes the
caller means (:data:`MEANT_SCANS`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from annotate.analysis.report_scope import Scope
from annotate.codebook import find_codebook
from annotate.coding.sampling import draw_from_store
from annotate.coding.session import CodingSession
from annotate.coding.session_inputs import resolve_codebook
from annotate.llm_store import llm_store
from annotate.store import Store
from llm_coder.job import JobOptions, LabelJob, Resumed
from tests.test_analysis_support import demo_with_gold

BIG_TABLES = (
    "actions", "labels", "coder_labels", "gold", "llm_requests", "sample_items", "llm_items"
)
MEANT_SCANS = (
    "GROUP BY condition, session, action_type, role",  # report: actions per session and type
    "SELECT count(*) FROM (SELECT a.id FROM actions a",  # llm-label: how many targets (ids)
    "ORDER BY a.id",  # llm-label --dry-run: every k-th target id, for the estimate
)


@pytest.fixture
def project(cli, db_path, tmp_path):
    demo_with_gold(cli, db_path, tmp_path)
    assert cli("sample", "--n", "40", "--seed", "1", "--name", "main").exit_code == 0
    assert cli("split", "--codebook", "traum", "--shots", "4", "--strategy", "cover").exit_code == 0
    return db_path


@contextmanager
def captured(store: Store) -> Iterator[list[str]]:
    statements: list[str] = []
    store.db.conn.set_trace_callback(statements.append)
    try:
        yield statements
    finally:
        store.db.conn.set_trace_callback(None)


def plan(store: Store, sql: str) -> list[str]:
    return [r[3] for r in store.db.conn.execute("EXPLAIN QUERY PLAN " + sql)]


def unindexed(store: Store, statements: list[str]) -> list[tuple[str, str]]:
    """(statement, plan line) of every full scan of a big table."""
    bad = []
    for sql in dict.fromkeys(statements):
        if not sql.lstrip().upper().startswith(("SELECT", "WITH")):
            continue
        if any(meant in sql for meant in MEANT_SCANS):
            continue
        for line in plan(store, sql):
            m = re.match(r"SCAN (\w+)( AS \w+)?(.*)$", line)
            if not m:
                continue
            table = sql_table(sql, m.group(1))
            paged = "LIMIT" in sql and "INDEX" in m.group(3)
            if table in BIG_TABLES and not paged:
                bad.append((sql, line))
    return bad


def sql_table(sql: str, name: str) -> str:
    """The table behind an alias (``FROM actions a`` -> ``actions``)."""
    m = re.search(rf"\b(?:FROM|JOIN)\s+(\w+)\s+(?:AS\s+)?{name}\b", sql)
    return name if name in BIG_TABLES or not m else m.group(1)


def run_hot_paths(store: Store, calls: list[Callable[[], object]]) -> list[str]:
    with captured(store) as statements:
        for call in calls:
            call()
    assert statements, "nothing was captured"
    return statements


def test_code_start_up_uses_indexes(project) -> None:
    with Store(project) as store:
        loaded = resolve_codebook(store, "traum")
        statements = run_hot_paths(
            store,
            [
                lambda: CodingSession(store, loaded, "ana").context_rows(),
                lambda: CodingSession(store, loaded, "ana").names_screenshots,
                lambda: CodingSession(store, loaded, "newbie", new_coder=True).context_rows(),
                lambda: store.labels.coders(),
                lambda: store.labels.corpus_coders(),
            ],
        )
        assert any("labels" in s and "coder" in s for s in statements)
        assert unindexed(store, statements) == []


def test_llm_label_targets_and_dry_run_use_indexes(project) -> None:
    with Store(project) as store:
        options = JobOptions(model="m", split="traum", target="main")
        loaded = find_codebook("traum")

        def walk(target: str) -> None:
            of_target = JobOptions(model="m", split="traum", target=target)
            job = LabelJob(llm_store(store), loaded, of_target, None)
            ids = list(job.rest_ids())
            assert len(ids) == len(job.rest_ids())
            list(job.sessions.items(ids))
            job.dry_run()

        statements = run_hot_paths(
            store,
            [
                lambda: walk("all"),
                lambda: walk("main"),
                lambda: store.llm.prompt_has_replies("p", "m", "e"),
                lambda: LabelJob(llm_store(store), loaded, options, None).rest_ids().every(3),
            ],
        )
        assert any("llm_split_items" in s for s in statements)
        assert unindexed(store, statements) == []


def test_llm_label_resume_finds_what_is_left_by_index(project) -> None:
    """A resumed run's items left (held-out and rest, both target kinds) are an anti-join on
    llm_items' primary key, and its stored items are read by the run's id."""
    with Store(project) as store:
        loaded = find_codebook("traum")

        def left(target: str) -> None:
            options = JobOptions(model="m", split="traum", target=target)
            job = LabelJob(llm_store(store), loaded, options, None)
            job.resumed = Resumed(7, 0, 0)
            list(job.phase_ids("validate"))
            rest = job.phase_ids("label")
            assert len(list(rest)) == len(rest) == len(job.rest_ids())  # run 7 stored nothing
            store.llm_batches.llm_item_counts(7, "label")
            list(store.llm.llm_item_answers(7, "validate"))

        statements = run_hot_paths(store, [lambda: left("all"), lambda: left("main")])
        assert sum("NOT EXISTS (SELECT 1 FROM llm_items" in s for s in statements) >= 4
        assert unindexed(store, statements) == []


def test_a_resumed_runs_stored_items_are_counted_in_one_index(project) -> None:
    """A resume counts what the run stored (all phases, then the phase it resumes) in the
    covering index of migration 15 (18), never reading the rows: 900,000 stored items cost 2.8 s
    a count from the table."""
    with Store(project) as store:
        statements = run_hot_paths(
            store,
            [
                lambda: store.llm_batches.llm_item_counts(7),
                lambda: store.llm_batches.llm_item_counts(7, "label"),
            ],
        )
        index = "SEARCH llm_items USING COVERING INDEX llm_items_run_phase_action"
        assert [plan(store, sql) for sql in statements] == [
            [f"{index} (run_id=?)"],
            [f"{index} (run_id=? AND phase=?)"],
        ]


def test_report_queries_use_indexes(project) -> None:
    with Store(project) as store:
        ids = [r[0] for r in store.db.conn.execute("SELECT id FROM actions LIMIT 20")]
        statements = run_hot_paths(
            store,
            [
                lambda: Scope(store, None, None).frame(ids),
                lambda: store.analysis.question_answers("traum", "act", ["ana", "ben", "caro"]),
                lambda: store.analysis.question_answers("traum", "act", ["ana", "ben"], ids),
            ],
        )
        meant = [s for s in statements if MEANT_SCANS[0] in s]
        assert meant  # the one meant pass: over an index alone, in its order
        assert plan(store, meant[0]) == [
            "SCAN actions USING COVERING INDEX actions_condition",
            "USE TEMP B-TREE FOR ORDER BY",
        ]
        assert unindexed(store, statements) == []


def test_sample_reads_the_session_order_index_and_writes_items_by_rowid(project) -> None:
    """`sample`: its one pass reads the session-order index alone, in its order (no sort of
    a million rows), and the drawn items are looked up by rowid, never by a pass over
    the actions."""
    with Store(project) as store:
        statements = run_hot_paths(
            store,
            [
                lambda: store.samples.create_drawn_sample(
                    "plans", draw_from_store(store, 30, 4), seed=4
                )
            ],
        )
        [read] = [s for s in statements if "group_concat(rowid)" in s]
        assert plan(store, read) == [
            "CO-ROUTINE (subquery-1)",
            "SCAN actions USING COVERING INDEX actions_session_seq",
            "SCAN (subquery-1)",
        ]
        [write] = [s for s in statements if s.startswith("INSERT INTO sample_items")]
        assert plan(store, write) == [
            "SCAN p VIRTUAL TABLE INDEX 1:",
            "SEARCH a USING INTEGER PRIMARY KEY (rowid=?)",
            "USE TEMP B-TREE FOR ORDER BY",  # the 30 items, by action id
        ]
        assert len(store.samples.sample_ids("plans")) == 30


def test_a_full_scan_is_caught(project) -> None:
    """The check itself: a query that reads every label, or every entry of an index of
    them, is reported."""
    with Store(project) as store:
        sql = "SELECT count(*) FROM coder_labels WHERE note IS NOT NULL"
        assert unindexed(store, [sql]) == [(sql, "SCAN coder_labels")]
        sql = "SELECT count(*) FROM labels WHERE note IS NOT NULL"  # the view: both tables
        assert [line for _, line in unindexed(store, [sql])] == [
            "SCAN coder_labels",
            "SCAN labels",
        ]
        sql = "SELECT DISTINCT l.coder FROM coder_labels l"
        [(_, line)] = unindexed(store, [sql])
        assert line.startswith("SCAN l USING COVERING INDEX")


async def test_code_start_up_reads_one_page_of_actions(project) -> None:
    """Up to its first item on screen, the coding app reads the actions of one page of
    items (and the item's context), never every action of the sample: at 100k items that
    was 1.8 s, twice (whether any item names a screenshot)."""
    from annotate.coding.items import ItemActions
    from annotate.media import MediaLocator
    from annotate.store.actions import Actions
    from annotate.tui.app import make_app

    with Store(project) as store:
        ids = [r[0] for r in store.db.conn.execute("SELECT id FROM actions ORDER BY id")]
        store.samples.create_sample("big", ids[: 4 * ItemActions.PAGE], seed=1)
    read: list[int] = []
    by_ids = Actions.actions_by_ids

    def counted(self, wanted):
        read.append(len(wanted))
        return by_ids(self, wanted)

    Actions.actions_by_ids = counted  # type: ignore[method-assign]
    try:
        app = make_app(project, "traum", "newbie", "big", new_coder=True, media=MediaLocator())
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            assert "item #1" in app.screen.query_one("#context").border_title
    finally:
        Actions.actions_by_ids = by_ids  # type: ignore[method-assign]
    assert app.session.n > 3 * ItemActions.PAGE
    assert 0 < sum(read) <= ItemActions.PAGE
