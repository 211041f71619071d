"""Importers on the real files in ../shared, generic formats, idempotency, failures."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from annotate.store import Store


def _count(db: Path, sql: str) -> int:
    with Store(db) as s:
        return s.query(sql)[0][0]


def test_platform_export_merges_participants_in_time_order(cli, db_path, shared) -> None:
    r = cli("import", str(shared / "platform"))
    assert r.exit_code == 0, r.output
    assert "33 new actions of 33" in r.stdout
    with Store(db_path) as s:
        session = s.query("SELECT DISTINCT session FROM actions")[0][0]
        acts = s.session_actions(session)
    assert [a.seq for a in acts] == list(range(33))
    assert [a.timestamp for a in acts] == sorted(a.timestamp for a in acts)
    assert acts[2].content == "Hi! I can see my map and some landmarks"
    roles = {a.participant: a.role for a in acts}
    assert roles == {"Jack": "guide", "Alice": "follower"}  # Alice draws: the Follower
    types = {a.action_type for a in acts}
    assert types == {"message", "draw", "reset"}
    draw = next(a for a in acts if a.action_type == "draw")
    assert draw.meta["source_type"] == "map_draw_stop"
    # the screenshot and page snapshot references are kept (annotate/media.py finds them)
    assert draw.meta["screenshot"].startswith("s3://human-agent-collab-bucket/annotation/")
    assert draw.meta["screenshot"].endswith(f"{draw.id}_screenshot.jpg")
    assert draw.meta["html_snapshot"].endswith(f"{draw.id}_html_snapshot.html")


def test_import_twice_adds_nothing(cli, db_path, shared) -> None:
    cli("import", str(shared / "platform"))
    r = cli("import", str(shared / "platform"))
    assert "0 new actions of 33" in r.stdout
    assert _count(db_path, "SELECT count(*) FROM actions") == 33
    assert _count(db_path, "SELECT count(*) FROM imports") == 2  # one per file, once


def test_one_participant_file_then_the_other_gives_the_same_order(cli, db_path, shared) -> None:
    files = sorted((shared / "platform").glob("*.jsonl"))
    for f in files:
        cli("import", str(f), "--role", "Jack=guide", "--role", "Alice=follower")
    with Store(db_path) as s:
        session = s.query("SELECT DISTINCT session FROM actions")[0][0]
        acts = s.session_actions(session)
    assert [a.timestamp for a in acts] == sorted(a.timestamp for a in acts)


def test_maptask_corpus_with_labels_as_a_coder(cli, db_path, shared) -> None:
    r = cli(
        "import",
        str(shared / "maptask" / "dialogues"),
        "--labels-as",
        "hcrc",
        "--codebook",
        "hcrc_moves",
    )
    assert r.exit_code == 0, r.output
    assert "21052 new actions" in r.stdout
    with Store(db_path) as s:
        assert s.count_actions() == 21052
        by_cond = {r["condition"]: r["sessions"] for r in s.overview_by_condition()}
        assert set(by_cond) == {"ec", "nc"} and sum(by_cond.values()) == 102
        first = s.action("q1ec1:0001")
        assert (first.role, first.content, first.condition) == ("guide", "okay", "ec")
        labels = s.label_rows("hcrc_moves", coders=["hcrc"])
        assert len(labels) == 21052
        assert {r["value"] for r in labels} == {
            "acknowledge",
            "instruct",
            "reply_y",
            "explain",
            "check",
            "ready",
            "align",
            "query_yn",
            "clarify",
            "reply_w",
            "reply_n",
            "query_w",
        }
    r = cli(
        "import",
        str(shared / "maptask" / "dialogues"),
        "--labels-as",
        "hcrc",
        "--codebook",
        "hcrc_moves",
    )
    assert "0 new actions of 21052, 0 new labels" in r.stdout


def test_bad_line_stops_the_file_and_stores_nothing(cli, db_path, shared, tmp_path) -> None:
    src = sorted((shared / "maptask" / "dialogues").glob("*.txt"))[0]
    bad = tmp_path / "q9ec9.txt"
    lines = src.read_text().splitlines()
    lines[4] = "x|who is speaking?|instruct"
    bad.write_text("\n".join(lines) + "\n")
    r = cli("import", str(bad))
    assert r.exit_code == 1
    assert f"error: {bad}:5: speaker must be g or f, not 'x'" in r.stderr
    assert not db_path.exists() or _count(db_path, "SELECT count(*) FROM actions") == 0
    r = cli("import", str(bad), "--skip-invalid")
    assert r.exit_code == 0
    assert f"skipped {bad}:5:" in r.stderr
    assert _count(db_path, "SELECT count(*) FROM actions") == len(lines) - 1


def test_platform_missing_field_names_line_and_field(cli, db_path, shared, tmp_path) -> None:
    src = sorted((shared / "platform").glob("*.jsonl"))[1]
    lines = src.read_text().splitlines()
    obj = json.loads(lines[6])
    del obj["timestamp"]
    lines[6] = json.dumps(obj)
    lines[9] = lines[9][:40]
    bad = tmp_path / "p.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    r = cli("import", str(bad))
    assert r.exit_code == 1
    assert f"{bad}:7: missing field 'timestamp' (and 1 more problem)" in r.stderr


def test_platform_timestamps_are_ordered_as_times_not_text(cli, db_path, tmp_path) -> None:
    def line(n: int, stamp: str) -> str:
        return json.dumps(
            {"action_id": f"a{n}", "timestamp": stamp, "session_id": "s", "participant_id": "p",
             "action_type": "send_message", "action_content": f"m{n}"}
        )  # fmt: skip

    # as text "22:30+02:00" sorts after "21:00Z"; as times it is 20:30 UTC, the first
    f = tmp_path / "p.jsonl"
    f.write_text(
        line(1, "2026-04-10T21:00:00Z") + "\n" + line(2, "2026-04-10T22:30:00+02:00") + "\n"
    )
    assert cli("import", str(f)).exit_code == 0
    with Store(db_path) as s:
        acts = s.session_actions("s")
    assert [(a.content, a.timestamp) for a in acts] == [
        ("m2", "2026-04-10T20:30:00.000000Z"),
        ("m1", "2026-04-10T21:00:00.000000Z"),
    ]

    bad = tmp_path / "bad.jsonl"
    bad.write_text(line(3, "2026-04-10T21:00:00Z") + "\n" + line(4, "yesterday at 9") + "\n")
    r = cli("import", str(bad))
    assert r.exit_code == 1
    assert f"{bad}:2: field 'timestamp': 'yesterday at 9' is not an ISO 8601 time" in r.stderr
    assert _count(db_path, "SELECT count(*) FROM actions") == 2  # nothing of bad.jsonl


def test_a_broken_first_line_does_not_change_the_detected_format(cli, db_path, shared, tmp_path):
    src = sorted((shared / "platform").glob("*.jsonl"))[0]
    lines = src.read_text().splitlines()
    bad = tmp_path / "p.jsonl"
    bad.write_text('{"action_id": "cut off\n' + "\n".join(lines[1:]) + "\n")
    r = cli("import", str(bad))
    assert r.exit_code == 1
    assert f"{bad}:1: not valid JSON" in r.stderr  # the platform parser, naming the line
    r = cli("import", str(bad), "--skip-invalid")
    assert r.exit_code == 0 and f"skipped {bad}:1" in r.stderr, r.output
    with Store(db_path) as s:
        kinds = s.query("SELECT DISTINCT json_extract(meta, '$.source_type') FROM actions")
    assert {k[0] for k in kinds} >= {"send_message"}  # read as the platform's export

    dialogue = tmp_path / "q1ec1.txt"
    dialogue.write_text("speaker|text|label header\ng|okay|ready\nf|right|acknowledge\n")
    r = cli("import", str(dialogue))
    assert r.exit_code == 1 and f"{dialogue}:1: speaker must be g or f" in r.stderr


@pytest.mark.parametrize(
    ("line", "message"),
    [("f||acknowledge", "empty text"), ("f|right|", "empty label"), ("f| |  ", "empty text")],
)
def test_maptask_line_with_an_empty_field_is_refused(cli, db_path, tmp_path, line, message):
    f = tmp_path / "q1nc1.txt"
    f.write_text(f"g|okay|ready\n{line}\n")
    r = cli("import", str(f))
    assert r.exit_code == 1
    assert f"{f}:2: {message} (expected speaker|text|label)" in r.stderr


def test_unknown_corpus_label_is_an_error_naming_the_line(cli, db_path, tmp_path) -> None:
    f = tmp_path / "q1nc1.txt"
    f.write_text("g|okay|ready\nf|right|agree_strongly\n")
    r = cli("import", str(f), "--labels-as", "hcrc", "--codebook", "hcrc_moves")
    assert r.exit_code == 1
    assert f"{f}:2: label 'agree_strongly' is not a code of hcrc_moves move" in r.stderr
    assert not db_path.exists() or _count(db_path, "SELECT count(*) FROM actions") == 0


def test_generic_csv_with_column_mapping(cli, db_path, tmp_path) -> None:
    f = tmp_path / "log.csv"
    f.write_text(
        "dialogue,who,text,kind,extra\n"
        "d1,guide,go left,message,a\n"
        "d1,follower,ok,message,b\n"
        "d2,guide,start at the mill,message,c\n"
        "d1,follower,,message,d\n"
    )
    r = cli(
        "import",
        str(f),
        "--map",
        "session=dialogue,role=who,content=text,action_type=kind",
        "--condition",
        "visible",
    )
    assert r.exit_code == 1
    assert f"{f}:5: missing field 'text' (a message needs text" in r.stderr
    f.write_text(f.read_text().replace("d1,follower,,message,d", "d1,follower,,draw,d"))
    r = cli(
        "import",
        str(f),
        "--map",
        "session=dialogue,role=who,content=text,action_type=kind",
        "--condition",
        "visible",
    )
    assert r.exit_code == 0, r.output
    with Store(db_path) as s:
        d1 = s.session_actions("d1")
    assert [(a.seq, a.role, a.action_type) for a in d1] == [
        (0, "guide", "message"),
        (1, "follower", "message"),
        (2, "follower", "draw"),
    ]
    assert d1[0].meta == {"extra": "a"} and d1[0].condition == "visible"


def test_generic_jsonl_and_format_flag(cli, db_path, tmp_path) -> None:
    f = tmp_path / "log.data"
    f.write_text(
        '{"session": "s", "content": "hi", "id": "a1"}\n{"session": "s", "content": "yo"}\n'
    )
    assert cli("import", str(f)).exit_code == 1  # cannot tell the format from the name
    r = cli("import", str(f), "--format", "jsonl")
    assert r.exit_code == 0, r.output
    with Store(db_path) as s:
        assert [a.id for a in s.session_actions("s")] == ["a1", "s:1"]
    # the default id does not depend on the file's name: a renamed copy adds nothing
    copy = tmp_path / "renamed.jsonl"
    copy.write_text(f.read_text())
    r = cli("import", str(copy))
    assert r.exit_code == 0 and "0 new actions of 2" in r.stdout, r.output


def test_an_id_stored_with_other_content_stops_the_file(cli, db_path, tmp_path) -> None:
    first = tmp_path / "one.jsonl"
    first.write_text('{"session": "s", "content": "go left", "id": "x1"}\n')
    assert cli("import", str(first)).exit_code == 0
    second = tmp_path / "two.jsonl"
    second.write_text(
        '{"session": "t", "content": "fine", "id": "y1"}\n'
        '{"session": "s", "content": "go right", "id": "x1"}\n'
    )
    r = cli("import", str(second))
    assert r.exit_code == 1
    assert (
        f"{second}:2: action id 'x1' is already stored with another session, type or content"
        in r.stderr
    )
    with Store(db_path) as s:
        assert [(a.id, a.content) for a in s.session_actions("s")] == [("x1", "go left")]
        assert s.session_actions("t") == []


def test_csv_with_byte_order_mark_and_missing_column(cli, db_path, tmp_path) -> None:
    f = tmp_path / "excel.csv"
    f.write_bytes("session,content\ns1,hello\n".encode("utf-8-sig"))
    r = cli("import", str(f))
    assert r.exit_code == 0, r.output
    with Store(db_path) as s:
        assert [a.content for a in s.session_actions("s1")] == ["hello"]
    g = tmp_path / "other.csv"
    g.write_text("dialogue,text\nd1,hi\n")
    r = cli("import", str(g))
    assert r.exit_code == 1
    assert f"{g}:1: no column 'session', 'content' (columns: dialogue, text)" in r.stderr
    assert "--map session=COLUMN,content=COLUMN" in r.stderr


def test_duplicate_id_in_one_file(cli, tmp_path) -> None:
    f = tmp_path / "log.jsonl"
    f.write_text(
        '{"session": "s", "content": "a", "id": "x"}\n{"session": "s", "content": "b", "id": "x"}\n'
    )
    r = cli("import", str(f))
    assert r.exit_code == 1
    assert "log.jsonl:2: duplicate action id 'x' (first on line 1)" in r.stderr


def test_missing_path(cli, tmp_path) -> None:
    r = cli("import", str(tmp_path / "nope.jsonl"))
    assert r.exit_code == 1 and "no such file or folder" in r.stderr


def test_demo_data_imports(cli, db_path) -> None:
    demo = Path(__file__).resolve().parents[1] / "data" / "demo"
    if not demo.is_dir():
        pytest.fail("data/demo is missing")
    r = cli("import", str(demo))
    assert r.exit_code == 0, r.output
    with Store(db_path) as s:
        conds = {r["condition"] for r in s.overview_by_condition()}
        types = {r[0] for r in s.query("SELECT DISTINCT action_type FROM actions")}
    assert conds == {"visible", "hidden"}
    assert {"message", "draw"} <= types


def test_a_folder_copy_is_the_same_actions(cli, db_path, shared, tmp_path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(shared / "platform", copy)
    cli("import", str(shared / "platform"))
    r = cli("import", str(copy))
    assert "0 new actions" in r.stdout


def test_a_bad_file_in_a_batch_says_what_was_stored_and_what_was_not_tried(
    cli, db_path, tmp_path
) -> None:
    folder = tmp_path / "dialogues"
    folder.mkdir()
    (folder / "q1ec1.txt").write_text("g|okay|ready\n")
    (folder / "q1ec2.txt").write_text("g|okay|ready\nx|what|query_yn\n")
    (folder / "q1ec3.txt").write_text("g|go left|instruct\n")
    r = cli("import", str(folder))
    assert r.exit_code == 1
    assert f"{folder / 'q1ec2.txt'}:2: speaker must be g or f" in r.stderr
    assert "already imported: q1ec1.txt; not tried: q1ec3.txt" in r.stderr
    assert _count(db_path, "SELECT count(*) FROM actions") == 1
