"""Gold in tables of its own (migration 20): the upgrade of a file whose gold was rows of
``labels``, the view ``labels`` that SQL written for the old table still reads and writes,
and the merge of gold between files."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from annotate.codebook import Answer, find_codebook
from annotate.store import LabelWrite, Store
from annotate.store.agreement_runs import DIGESTS_DTYPE, IDS_DTYPE
from annotate.store.migrations import GOLD_IDS, MIGRATIONS
from annotate.store.revisions import refresh_revisions, revision_hex, stored_revision
from tests.test_analysis_support import DEMO_LABELS, demo_traum_rows, write_csv

LABEL_COLUMNS = (
    "action_id, codebook, codebook_hash, question, coder, value, codes, other_text, note, "
    "flagged, skipped, seconds, source, meta, created_at, updated_at, revision"
)
GOLD_META = '{"method": "majority", "adjudicator": "zoe"}'


def _schema_19_file(path: Path) -> None:
    """A file as annotate left it before migration 20: two coders and the gold in one
    ``labels`` table, and two agreement runs citing gold labels (a packed set, and one
    row per label as runs stored before migration 13)."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute(
            "CREATE TABLE _migrations (id INTEGER PRIMARY KEY, name TEXT, applied_at TEXT)"
        )
        for number, migration in MIGRATIONS:
            if number <= 19:
                migration(conn)
                conn.execute(
                    "INSERT INTO _migrations VALUES (?, ?, 'then')", (number, migration.__name__)
                )
        rows = []
        for i in range(4):
            conn.execute(
                "INSERT INTO actions (id, session, seq, action_type, content) "
                "VALUES (?, 's', ?, 'message', 'hi')",
                (f"s:{i}", i),
            )
            for coder in ("ana", "ben"):
                rows.append((f"s:{i}", coder, "Initiate", None, "tui", "{}", None))
            gold = ("Initiate", None) if i < 3 else ("other", "a wave")
            rows.append((f"s:{i}", "gold", *gold, "adjudicate", GOLD_META, "why" if i else None))
        conn.executemany(
            "INSERT INTO labels (action_id, codebook, codebook_hash, question, coder, value, "
            "other_text, source, meta, note, created_at, updated_at) "
            "VALUES (?, 'traum', 'h1', 'act', ?, ?, ?, ?, ?, ?, '2026-01-01', '2026-01-02')",
            rows,
        )
        refresh_revisions(conn, table="labels")
        cited = conn.execute(
            "SELECT id, revision FROM labels WHERE coder IN ('ana', 'gold') ORDER BY id"
        ).fetchall()
        for run in (1, 2):
            conn.execute(
                "INSERT INTO agreement_runs (id, created_at, annotate_version, codebook, "
                "codebook_hash, label_codebook_hashes, coders, questions, n_labels, "
                "labels_hash, results) VALUES (?, 't', '0', 'traum', 'h1', '[]', "
                "'[\"ana\", \"gold\"]', '[\"act\"]', ?, 'x', '{}')",
                (run, len(cited)),
            )
        ids = np.array([i for i, _ in cited], dtype=IDS_DTYPE)
        digests = np.array([r & 0xFFFF_FFFF_FFFF_FFFF for _, r in cited], dtype=DIGESTS_DTYPE)
        conn.execute(
            "INSERT INTO agreement_run_label_sets VALUES (1, ?, ?)",
            (ids.tobytes(), digests.tobytes()),
        )
        conn.executemany(
            "INSERT INTO agreement_run_labels (run_id, label_id, digest) VALUES (2, ?, ?)",
            [(i, revision_hex(r)) for i, r in cited],
        )


def _labels(conn: sqlite3.Connection) -> list[tuple]:
    return conn.execute(f"SELECT {LABEL_COLUMNS} FROM labels ORDER BY action_id, coder").fetchall()


def test_the_upgrade_moves_gold_and_the_runs_that_cite_it(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _schema_19_file(path)
    with closing(sqlite3.connect(path)) as conn:
        before = _labels(conn)
        old_gold = [r[0] for r in conn.execute("SELECT id FROM labels WHERE coder = 'gold'")]
    with Store(path) as s:
        assert s.db.schema_version() == max(n for n, _ in MIGRATIONS)
        after = _labels(s.db.conn)
        assert [tuple(r) for r in after] == before  # every column, revisions too
        gold = s.db.conn.execute("SELECT id FROM gold ORDER BY id").fetchall()
        assert [g[0] for g in gold] == [i + GOLD_IDS for i in old_gold]
        assert s.db.conn.execute("SELECT count(*) FROM gold_answers").fetchone()[0] == 2
        assert s.db.conn.execute("SELECT count(*) FROM coder_labels").fetchone()[0] == 8
        for run in (1, 2):
            stored = s.agreement.agreement_run(run)
            ids, revisions = s.agreement.label_revisions(stored["label_ids"])
            assert len(ids) == len(stored["label_ids"]) == 8  # none lost
            assert sorted(stored["label_ids"]) == stored["label_ids"]
            assert sum(i > GOLD_IDS for i in stored["label_ids"]) == 4
            digests = stored["label_digests"]
            assert all(
                revision_hex(r) == digests[i]
                for i, r in zip(ids.tolist(), revisions.tolist(), strict=True)
            )  # the run sees every label unchanged
        # a new label may take a moved gold's old id: the gold's is another now
        cb = find_codebook("traum")
        s.codebooks.register_codebook(cb)
        s.labels.save_answer("s:0", cb.codebook, "act", "caro", Answer("Repair"))
        new_id = s.db.conn.execute("SELECT max(id) FROM coder_labels").fetchone()[0]
        assert new_id == max(old_gold)  # the last row was gold: its id is free again
        n, distinct = s.db.conn.execute(
            "SELECT count(*), count(DISTINCT id) FROM labels"
        ).fetchone()
        assert n == distinct == 13


def test_sql_written_for_the_table_reads_the_view_and_cannot_write_it(tmp_path: Path) -> None:
    """SQL written for the old table reads every label through the view; a write to it
    fails loudly (migration 23) and leaves every label as it was."""
    path = tmp_path / "old.db"
    _schema_19_file(path)
    with closing(sqlite3.connect(path)) as conn:
        before = _labels(conn)
    with Store(path):
        pass
    with closing(sqlite3.connect(path)) as conn:
        assert [tuple(r) for r in _labels(conn)] == before
        for sql in (
            "UPDATE labels SET value = 'Repair' WHERE coder = 'gold' AND action_id = 's:1'",
            "UPDATE labels SET note = 'seen' WHERE coder = 'ana' AND action_id = 's:1'",
            "INSERT INTO labels (action_id, codebook, codebook_hash, question, coder, value, "
            "created_at, updated_at) VALUES ('s:0', 'traum', 'h1', 'act2', 'gold', 'Repair', "
            "'t', 't')",
            "INSERT OR REPLACE INTO labels (action_id, codebook, codebook_hash, question, "
            "coder, value, source, meta, created_at, updated_at) VALUES ('s:1', 'traum', "
            f"'h1', 'act', 'gold', 'Initiate', 'adjudicate', '{GOLD_META}', 't', 't')",
            "DELETE FROM labels WHERE coder = 'gold' AND action_id = 's:3'",
        ):
            with pytest.raises(sqlite3.OperationalError, match="cannot modify labels"):
                conn.execute(sql)
        conn.rollback()
        assert [tuple(r) for r in _labels(conn)] == before
        assert conn.execute("SELECT count(*) FROM gold_answers").fetchone() == (2,)


def test_merge_brings_the_gold_the_file_lacks(cli, tmp_path: Path) -> None:
    """Gold imported in both files (theirs on more items, one answered otherwise): the
    missing gold is copied with its provenance; the conflict keeps ours, or with --prefer
    newer takes theirs."""
    ours, theirs = tmp_path / "ours.db", tmp_path / "theirs.db"
    rows = demo_traum_rows("ana")[:30]
    gold = [dict(r, coder="gold") for r in rows]
    changed = dict(gold[4])
    changed["value"] = "Repair" if changed["value"] != "Repair" else "Initiate"
    changed["other_text"] = ""
    for path, labels in ((ours, gold[:20]), (theirs, [*gold[:4], changed, *gold[5:]])):
        assert cli("import", str(Path(DEMO_LABELS).parent / "demo"), db=path).exit_code == 0
        csv = write_csv(tmp_path / f"{path.stem}.csv", labels)
        assert cli("import-labels", str(csv), "--codebook", "traum", db=path).exit_code == 0
    r = cli("merge", str(theirs), db=ours)
    assert r.exit_code == 0, r.output
    assert "10 new labels" in " ".join(r.stdout.split())
    with Store(ours) as s, Store(theirs) as t:
        mine = {x["action_id"]: x for x in s.labels.label_rows("traum", coders=["gold"])}
        had = {g["action_id"] for g in gold[:20]}
        for x in t.labels.label_rows("traum", coders=["gold"]):
            ours_row = mine[x["action_id"]]
            same = ("value", "other_text", "source", "meta", "codebook_hash")
            if x["action_id"] not in had:  # copied whole
                same += ("created_at", "updated_at")
            if x["action_id"] != changed["action_id"]:
                assert {k: ours_row[k] for k in same} == {k: x[k] for k in same}
            else:
                assert ours_row["value"] != changed["value"]  # ours kept
    with closing(sqlite3.connect(theirs)) as conn, conn:
        conn.execute(
            "UPDATE gold SET updated_at = '2999-01-01T00:00:00.000Z' WHERE action_id = ?",
            (changed["action_id"],),
        )
    assert cli("merge", str(theirs), "--prefer", "newer", db=ours).exit_code == 0
    with Store(ours) as s:
        [row] = s.labels.label_rows("traum", coders=["gold"], action_ids=[changed["action_id"]])
        assert row["value"] == changed["value"]
        assert s.db.conn.execute("SELECT count(*) FROM gold").fetchone()[0] == 30


def _three_coders(path: Path) -> tuple[Store, object, list[str]]:
    """A project with the demo actions and three coders on four items of traum."""
    from annotate.io.importing import import_files
    from tests.conftest import DEMO

    s = Store(path)
    import_files(s, sorted(DEMO.glob("*.jsonl")))
    loaded = find_codebook("traum")
    s.codebooks.register_codebook(loaded)
    ids = [r["id"] for r in s.actions.action_rows()][:4]
    for action_id in ids:
        for coder in ("ana", "ben", "caro"):
            s.labels.save_answer(action_id, loaded.codebook, "act", coder, Answer("Initiate"))
    return s, loaded.codebook, ids


def _one_pass(s: Store) -> tuple:
    from annotate.reliability.majority_pass import adjudicate_majority
    from annotate.reliability.selection import select

    plan, written = adjudicate_majority(s, select(s, codebook="traum"), "zoe")
    return plan.stale, written


def _gold(s: Store, action_id: str) -> dict:
    [row] = s.db.conn.execute(
        "SELECT value, note, revision, meta FROM labels WHERE coder = 'gold' AND action_id = ?",
        (action_id,),
    ).fetchall()
    return dict(row)


def test_majority_gold_keeps_its_revision_when_only_the_votes_change(tmp_path: Path) -> None:
    """Its answer is what an agreement run compares: other votes behind the same answer
    give new provenance, not a changed label; a changed answer gets a new revision."""
    s, cb, ids = _three_coders(tmp_path / "p.db")
    with s:
        assert _one_pass(s) == ((), 4)
        before = _gold(s, ids[0])
        s.labels.save_answer(ids[0], cb, "act", "caro", Answer("Repair"))  # 2 of 3 now
        s.labels.save_answer(ids[1], cb, "act", "ben", Answer("Repair"))
        s.labels.save_answer(ids[1], cb, "act", "caro", Answer("Repair"))  # Repair wins now
        other = _gold(s, ids[1])
        assert _one_pass(s) == ((), 4)
        after = _gold(s, ids[0])
        assert after["meta"] != before["meta"] and after["revision"] == before["revision"]
        changed = _gold(s, ids[1])
        assert changed["value"] == "Repair" and changed["revision"] != other["revision"]


def test_every_label_write_gives_its_contents_revision(tmp_path: Path) -> None:
    """One source of revisions: the majority gold written by one SQL statement, a decided
    gold, a coder's answer and an undone one all hold the SHA-256 of their content, as
    revisions.py computes it (no random revision from SQL any more)."""
    s, cb, ids = _three_coders(tmp_path / "p.db")
    with s:
        s.labels.save_answer(ids[1], cb, "act", "caro", Answer("other", other_text="a wave"))
        s.labels.save_answer(ids[2], cb, "act", "ben", Answer("Repair"))
        s.labels.clear_answer(ids[3], "traum", "act", "ana")
        _one_pass(s)
        s.labels.save_answers(cb, [LabelWrite(ids[3], "act", "gold", Answer("Cancel"))])
        rows = s.db.conn.execute(
            "SELECT revision, action_id, question, coder, value, codes, other_text, "
            "codebook_hash FROM labels"
        ).fetchall()
        assert {r[3] for r in rows} == {"ana", "ben", "caro", "gold"}
        assert sum(r[3] == "gold" for r in rows) == 4
        assert [r[0] for r in rows] == [stored_revision(tuple(r)[1:]) for r in rows]


def test_a_retracted_majority_gold_with_a_note_is_retracted_once(tmp_path: Path) -> None:
    """The note keeps the row, without an answer: not majority gold to retract again."""
    from annotate.store import LabelWrite

    s, cb, ids = _three_coders(tmp_path / "p.db")
    with s:
        _one_pass(s)
        meta = json.loads(_gold(s, ids[2])["meta"])
        s.agreement.save_gold(
            cb,
            [LabelWrite(ids[2], "act", "gold", Answer("Initiate"), "adjudicate", meta, "check")],
        )
        s.labels.save_answer(ids[2], cb, "act", "ben", Answer("Repair"))
        s.labels.save_answer(ids[2], cb, "act", "caro", Answer("Cancel"))  # a tie now
        assert _one_pass(s) == (((ids[2], "act"),), 3)
        assert _gold(s, ids[2])["value"] is None and _gold(s, ids[2])["note"] == "check"
        assert _one_pass(s) == ((), 3)


def test_label_rows_of_a_few_columns_with_gold(tmp_path: Path) -> None:
    s, _, _ = _three_coders(tmp_path / "p.db")
    with s:
        _one_pass(s)
        rows = s.labels.label_rows("traum", columns=("action_id", "value"))
        assert len(rows) == 16 and set(rows[0]) == {"action_id", "value"}
        assert [r["action_id"] for r in rows] == sorted(r["action_id"] for r in rows)


def test_counted_ids_read_the_sample_only_when_asked_for(tmp_path: Path) -> None:
    from annotate.store.item_ids import Later

    s, _, ids = _three_coders(tmp_path / "p.db")
    with s:
        s.samples.create_sample("main", ids[:3])
        reads: list[str] = []
        s.db.conn.set_trace_callback(reads.append)
        counted = s.samples.sample_item_ids("main", counted=True)
        assert isinstance(counted, Later) and len(counted) == 3
        assert not [q for q in reads if "group_concat" in q]  # the number only
        assert list(counted) == ids[:3] and counted[1] == ids[1]
        assert [q for q in reads if "group_concat" in q]  # read when asked for


def test_a_decision_of_the_same_answer_keeps_the_revision(tmp_path: Path) -> None:
    """A person deciding the answer a majority wrote changes its provenance, not the label
    an agreement run compares; deciding another answer changes both."""
    from annotate.reliability import adjudication as adj
    from annotate.reliability.majority_pass import adjudicate_majority
    from annotate.reliability.selection import select

    s, _, ids = _three_coders(tmp_path / "p.db")
    with s:
        _one_pass(s)
        before = _gold(s, ids[0])
        plan, _ = adjudicate_majority(s, select(s, codebook="traum"), "zoe")
        [case] = [c for c in plan.majority if c.action_id == ids[0]]
        adj.decide(s, plan, case, Answer("Initiate"), "zoe")
        same = _gold(s, ids[0])
        assert json.loads(same["meta"])["method"] == "decided"
        assert same["revision"] == before["revision"]
        adj.decide(s, plan, case, Answer("Repair"), "zoe")
        assert _gold(s, ids[0])["revision"] != before["revision"]


def test_the_sql_revision_is_the_stores_for_any_id() -> None:
    """answer_revision (the majority's one statement) hashes as content_revision does, for
    ids with quotes, escapes, control characters and non-ASCII letters."""
    from annotate.store.revisions import content_revision, register_answer_revision

    ids = ["s:1", 'a "quoted" id', "back\\slash", "tab\tnew\nline\x01", "é中🙂", ""]
    conn = sqlite3.connect(":memory:")
    register_answer_revision(
        conn,
        [(7, "act", "other", None, 'a "wave"\n', "h1"), (8, "r", None, '["b", "ü"]', None, "h2")],
        "gold",
    )
    for action_id in ids:
        got = conn.execute("SELECT answer_revision(?, 7), answer_revision(?, 8)", (action_id,) * 2)
        assert got.fetchone() == (
            content_revision(action_id, "act", "gold", "other", (), 'a "wave"\n', "h1"),
            content_revision(action_id, "r", "gold", None, ["b", "ü"], None, "h2"),
        )
    conn.close()
