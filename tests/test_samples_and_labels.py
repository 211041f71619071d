"""Samples (reproducible, stratified, bounded) and labels imported from elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotate.coding.sampling import allocate, draw_sample
from annotate.store import Store


@pytest.fixture
def maptask_db(cli, shared, db_path) -> Path:
    dialogues = sorted((shared / "maptask" / "dialogues").glob("*.txt"))
    picked = [p for p in dialogues if "ec" in p.stem][:3] + [
        p for p in dialogues if "nc" in p.stem
    ][:3]
    r = cli("import", *map(str, picked))
    assert r.exit_code == 0, r.output
    return db_path


def _ids(db: Path, name: str) -> list[str]:
    with Store(db) as s:
        return s.samples.sample_ids(name)


def test_same_seed_same_items_other_seed_other_items(cli, maptask_db) -> None:
    assert cli("sample", "--n", "180", "--seed", "7").exit_code == 0
    assert cli("sample", "--n", "180", "--seed", "7", "--name", "b").exit_code == 0
    assert cli("sample", "--n", "180", "--seed", "8", "--name", "c").exit_code == 0
    main, b, c = (_ids(maptask_db, n) for n in ("main", "b", "c"))
    assert len(main) == 180 == len(set(main))
    assert main == b
    assert main != c


def test_stratified_sample_keeps_proportions(cli, maptask_db) -> None:
    r = cli("sample", "--n", "100", "--seed", "1", "--stratify", "condition,role")
    assert r.exit_code == 0, r.output
    with Store(maptask_db) as s:
        rows = s.db.query(
            "SELECT a.condition, a.role, count(*) FROM sample_items i JOIN actions a "
            "ON a.id = i.action_id WHERE i.sample = 'main' GROUP BY 1, 2"
        )
        population = s.db.query("SELECT condition, role, count(*) FROM actions GROUP BY 1, 2")
    total = sum(r[2] for r in population)
    got = {(r[0], r[1]): r[2] for r in rows}
    for cond, role, n in population:
        assert abs(got[(cond, role)] - 100 * n / total) < 1


def test_where_and_errors(cli, maptask_db) -> None:
    r = cli("sample", "--n", "10", "--seed", "1", "--where", "role = 'follower'")
    assert r.exit_code == 0
    with Store(maptask_db) as s:
        roles = {s.actions.action(i).role for i in s.samples.sample_ids("main")}
    assert roles == {"follower"}
    r = cli("sample", "--n", "10", "--seed", "1")
    assert r.exit_code == 1 and "a sample named 'main' already exists" in r.stderr
    r = cli("sample", "--n", "100000", "--seed", "1", "--name", "huge")
    assert r.exit_code == 1 and "is more than the" in r.stderr
    r = cli("sample", "--n", "5", "--seed", "1", "--name", "w", "--where", "nosuch = 1")
    assert r.exit_code == 1 and "--where 'nosuch = 1': no such column: nosuch" in r.stderr
    assert "hint: the columns of actions: id, session" in r.stderr
    r = cli("sample", "--n", "5", "--seed", "1", "--name", "s", "--stratify", "colour")
    assert r.exit_code == 1 and "unknown column 'colour'" in r.stderr
    assert "huge" not in cli("samples", "--format", "json").stdout


def test_allocation_sums_and_respects_sizes() -> None:
    counts = allocate({("a",): 5, ("b",): 100, ("c",): 1}, 30)
    assert sum(counts.values()) == 30
    assert counts[("c",)] <= 1
    rows = [{"id": str(i), "k": i % 3} for i in range(50)]
    assert draw_sample(rows, 50, 3, ["k"]) != draw_sample(rows, 50, 4, ["k"])
    assert sorted(draw_sample(rows, 50, 3, ["k"])) == sorted(r["id"] for r in rows)


def test_import_labels_csv_and_jsonl(cli, maptask_db, tmp_path) -> None:
    with Store(maptask_db) as s:
        ids = [r[0] for r in s.db.query("SELECT id FROM actions ORDER BY session, seq LIMIT 3")]
    f = tmp_path / "codings.csv"
    f.write_text(
        "action_id,coder,question,value,other_text\n"
        f"{ids[0]},ana,act,Initiate,\n"
        f"{ids[1]},ana,act,other,small talk\n"
        f"{ids[2]},ben,act,Acknowledge,\n"
    )
    r = cli("import-labels", str(f), "--codebook", "traum")
    assert r.exit_code == 0, r.output
    assert "3 labels read: 3 new, 0 answers replaced, 0 unchanged; coders: ana, ben" in r.stdout
    again = cli("import-labels", str(f), "--codebook", "traum").stdout
    assert "3 labels read: 0 new, 0 answers replaced, 3 unchanged" in again
    j = tmp_path / "mm.jsonl"
    j.write_text(
        json.dumps(
            {"action_id": ids[0], "coder": "ana", "question": "Q4", "value": "no", "codes": "n1;n3"}
        )
        + "\n"
        + json.dumps({"action_id": ids[0], "coder": "ana", "question": "Q1", "value": "t3"})
        + "\n"
    )
    assert cli("import-labels", str(j), "--codebook", "mental_model").exit_code == 0
    with Store(maptask_db) as s:
        q4 = s.labels.label_rows("mental_model", question="Q4")[0]
        other = s.labels.label_rows("traum", coders=["ana"])
    assert (q4["value"], q4["codes"]) == ("no", ("n1", "n3"))
    assert {r["other_text"] for r in other} == {None, "small talk"}


def test_import_labels_keeps_notes_and_reads_a_byte_order_mark(cli, maptask_db, tmp_path) -> None:
    with Store(maptask_db) as s:
        ids = [r[0] for r in s.db.query("SELECT id FROM actions ORDER BY session, seq LIMIT 2")]
    f = tmp_path / "excel.csv"
    rows = (
        "action_id,coder,question,value,note\n"
        f"{ids[0]},ana,act,Initiate,check the map\n"
        f"{ids[1]},ana,act,Continue,\n"
    )
    f.write_bytes(rows.encode("utf-8-sig"))
    r = cli("import-labels", str(f), "--codebook", "traum")
    assert r.exit_code == 0, r.output
    with Store(maptask_db) as s:
        notes = {r["action_id"]: r["note"] for r in s.labels.label_rows("traum", coders=["ana"])}
    assert notes == {ids[0]: "check the map", ids[1]: None}
    # a later file without the note keeps it; a new note replaces it
    f.write_text(f"action_id,coder,question,value,note\n{ids[0]},ana,act,Initiate,\n")
    assert cli("import-labels", str(f), "--codebook", "traum").exit_code == 0
    f.write_text(f"action_id,coder,question,value,note\n{ids[0]},ana,act,Initiate,ask ben\n")
    r = cli("import-labels", str(f), "--codebook", "traum")
    assert "1 labels read: 0 new, 0 answers replaced, 1 notes replaced, 0 unchanged" in r.stdout
    with Store(maptask_db) as s:
        rows = s.labels.label_rows("traum", coders=["ana"])
    assert {r["action_id"]: r["note"] for r in rows}[ids[0]] == "ask ben"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("nosuch:1,ana,act,Initiate,", "codings.csv:3: unknown action id 'nosuch:1'"),
        ("{id},ana,act,Wave,", "codings.csv:3: question act: unknown code 'Wave'"),
        ("{id},ana,act,other,", "codings.csv:3: question act: 'other' needs a free-text"),
        ("{id},,act,Initiate,", "codings.csv:3: missing field 'coder'"),
        ("{id},ana,Q9,Initiate,", "codings.csv:3: codebook 'traum' has no question 'Q9'"),
    ],
)
def test_import_labels_bad_row_names_it_and_stores_nothing(
    cli, maptask_db, tmp_path, row, message
) -> None:
    with Store(maptask_db) as s:
        first = s.db.query("SELECT id FROM actions LIMIT 1")[0][0]
    f = tmp_path / "codings.csv"
    f.write_text(
        f"action_id,coder,question,value,other_text\n{first},ana,act,Initiate,\n"
        + row.format(id=first)
        + "\n"
    )
    r = cli("import-labels", str(f), "--codebook", "traum")
    assert r.exit_code == 1
    assert message in r.stderr
    with Store(maptask_db) as s:
        assert s.labels.label_rows("traum") == []


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "action_id,coder,question,value,other\n{id},ana,act,Initiate,\n",
            "codings.csv:1: unknown column 'other'",
        ),
        (
            "action_id,coder,value\n{id},ana,Initiate\n{id},ana,Continue\n",
            "codings.csv:3: ana's act for action '{id}' differs from line 2",
        ),
        (
            'action_id,coder,value,note\n{id},ana,Initiate,"said "hi" twice"\n',
            "codings.csv:2: not valid CSV",
        ),
        (
            "action_id,coder,value\n{id},ana,Initiate,extra\n",
            "codings.csv:2: 4 values for 3 columns",
        ),
        (
            "action_id,coder,value\n{id},ana,acknowledge\n{draw},ana,instruct\n",
            "codings.csv:3: hcrc_moves does not apply to action '{draw}', a draw "
            "(it applies to message)",
        ),
    ],
    ids=["extra-column", "conflicting-rows", "bad-quote", "surplus-values", "applies-to"],
)
def test_import_labels_refuses_what_would_lose_or_misplace_a_label(
    cli, db_path, shared, tmp_path, content, message
) -> None:
    assert cli("import", str(shared / "platform")).exit_code == 0
    with Store(db_path) as s:
        first = s.db.query("SELECT id FROM actions WHERE action_type = 'message' LIMIT 1")[0][0]
        draw = s.db.query("SELECT id FROM actions WHERE action_type = 'draw' LIMIT 1")[0][0]
    f = tmp_path / "codings.csv"
    f.write_text(content.format(id=first, draw=draw))
    codebook = "hcrc_moves" if "{draw}" in content else "traum"
    r = cli("import-labels", str(f), "--codebook", codebook)
    assert r.exit_code == 1, r.output
    assert message.format(id=first, draw=draw) in r.stderr
    with Store(db_path) as s:
        assert s.labels.label_rows(codebook) == []


def test_import_labels_names_a_file_that_is_not_utf8(cli, maptask_db, tmp_path) -> None:
    with Store(maptask_db) as s:
        first = s.db.query("SELECT id FROM actions LIMIT 1")[0][0]
    f = tmp_path / "excel.csv"
    f.write_bytes(f"action_id,coder,value,note\n{first},ana,Initiate,caf\xe9\n".encode("latin-1"))
    r = cli("import-labels", str(f), "--codebook", "traum")
    assert r.exit_code == 1
    assert f"{f}:2: not UTF-8 text (byte 0xe9 at column " in r.stderr
    assert "save the file as UTF-8" in r.stderr


def test_the_same_row_twice_is_one_label(cli, maptask_db, tmp_path) -> None:
    with Store(maptask_db) as s:
        first = s.db.query("SELECT id FROM actions LIMIT 1")[0][0]
    f = tmp_path / "twice.csv"
    f.write_text(f"action_id,coder,value\n{first},ana,Initiate\n{first},ana,Initiate\n")
    r = cli("import-labels", str(f), "--codebook", "traum")
    assert r.exit_code == 0, r.output
    with Store(maptask_db) as s:
        assert len(s.labels.label_rows("traum")) == 1
