"""One odd field costs its line, never the import: `file:line: field 'x': problem`, and
`--skip-invalid` imports the rest. A file that is not UTF-8 is named with its line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotate.store import Store

GOOD = {"session": "s1", "content": "hello", "role": "guide", "participant": "p1"}
PLATFORM = {
    "action_id": "a1",
    "timestamp": "2026-04-10T21:00:00Z",
    "session_id": "S",
    "participant_id": "P1",
    "participant_name": "Ann",
    "action_type": "send_message",
    "action_content": "hi",
}
DEEP = "[" * 100_000 + "]" * 100_000


def _count(db: Path) -> int:
    with Store(db) as s:
        return s.count_actions()


@pytest.mark.parametrize(
    ("odd", "problem"),
    [
        ({"role": {"a": 1}}, "field 'role': expected text, not a JSON object"),
        ({"participant": [1, 2]}, "field 'participant': expected text, not a JSON list"),
        ({"session": {"x": 1}}, "field 'session': expected text, not a JSON object"),
        ({"seq": 10**30}, f"field 'seq': {10**29}… is out of range (at most {2**63 - 1})"),
        ({"seq": 1.5}, "field 'seq': must be a whole number, not 1.5"),
        ({"elapsed_s": "NaN"}, "field 'elapsed_s': must be a finite number, not NaN"),
        ({"timestamp": {"t": 0}}, "field 'timestamp': expected text, not a JSON object"),
    ],
    ids=["obj-role", "list-participant", "obj-session", "huge-seq",
         "half-seq", "nan-elapsed", "obj-timestamp"],
)  # fmt: skip
def test_generic_jsonl_odd_field(cli, db_path, tmp_path, odd, problem) -> None:
    f = tmp_path / "log.jsonl"
    f.write_text(
        json.dumps({**GOOD, "content": "first"}) + "\n" + json.dumps({**GOOD, **odd}) + "\n"
    )
    r = cli("import", str(f), "--format", "jsonl")
    assert r.exit_code == 1
    assert r.stderr.splitlines()[0] == f"error: {f}:2: {problem}", r.stderr
    assert "Traceback" not in r.stderr
    r = cli("import", str(f), "--format", "jsonl", "--skip-invalid")
    assert r.exit_code == 0, r.output
    assert f"skipped {f}:2: {problem}" in r.stderr
    assert _count(db_path) == 1


def test_structured_content_is_kept_as_before(cli, db_path, tmp_path) -> None:
    f = tmp_path / "log.jsonl"
    f.write_text(json.dumps({**GOOD, "content": {"points": [1, 2]}}) + "\n")
    assert cli("import", str(f), "--format", "jsonl").exit_code == 0
    with Store(db_path) as s:
        assert s.session_actions("s1")[0].content == "{'points': [1, 2]}"


def test_json_nested_100k_deep_is_one_bad_line(cli, db_path, tmp_path) -> None:
    f = tmp_path / "deep.jsonl"
    f.write_text(DEEP + "\n" + json.dumps(GOOD) + "\n")
    r = cli("import", str(f), "--format", "jsonl")
    assert r.exit_code == 1
    assert r.stderr.startswith(f"error: {f}:1: JSON nested deeper than 100 levels")
    assert cli("import", str(f), "--format", "jsonl", "--skip-invalid").exit_code == 0
    assert _count(db_path) == 1
    meta = tmp_path / "meta.jsonl"  # parses, but deeper than any log row
    meta.write_text(json.dumps({**GOOD, "extra": json.loads("[" * 150 + "]" * 150)}) + "\n")
    r = cli("import", str(meta), "--format", "jsonl")
    assert r.exit_code == 1 and f"{meta}:1: JSON nested deeper than 100 levels" in r.stderr


def test_csv_seq_beyond_sqlite_is_one_bad_line(cli, db_path, tmp_path) -> None:
    f = tmp_path / "log.csv"
    f.write_text(f"session,content,seq\ns1,first,1\ns1,second,{10**30}\n")
    r = cli("import", str(f))
    assert r.exit_code == 1
    assert r.stderr.startswith(f"error: {f}:3: field 'seq': 1000000000000000000000000000")
    assert cli("import", str(f), "--skip-invalid").exit_code == 0
    assert _count(db_path) == 1


@pytest.mark.parametrize(
    ("odd", "problem"),
    [
        (
            {"timestamp": "0001-01-01T00:00:00+01:00"},
            "field 'timestamp': '0001-01-01T00:00:00+01:00' is out of range once its offset "
            "is applied",
        ),
        ({"participant_name": {"a": 1}}, "field 'participant_name': expected text, not a JSON "
         "object"),
        ({"role": ["x"]}, "field 'role': expected text, not a JSON list"),
        ({"condition": {"a": 1}}, "field 'condition': expected text, not a JSON object"),
        ({"session_id": {"a": 1}}, "field 'session_id': expected text, not a JSON object"),
        ({"session_elapsed_seconds": True}, "field 'session_elapsed_seconds': must be a number, "
         "not true/false"),
    ],
    ids=["year-0", "obj-name", "list-role", "obj-condition", "obj-session",
         "bool-elapsed"],
)  # fmt: skip
def test_platform_odd_field(cli, db_path, tmp_path, odd, problem) -> None:
    f = tmp_path / "p.jsonl"
    f.write_text(json.dumps(PLATFORM) + "\n" + json.dumps({**PLATFORM, "action_id": "a2", **odd}))
    r = cli("import", str(f))
    assert r.exit_code == 1
    assert r.stderr.splitlines()[0] == f"error: {f}:2: {problem}", r.stderr
    r = cli("import", str(f), "--skip-invalid")
    assert r.exit_code == 0, r.output
    assert f"skipped {f}:2: {problem}" in r.stderr and _count(db_path) == 1


def test_a_folder_import_names_the_file_with_the_odd_field(cli, db_path, tmp_path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "a.jsonl").write_text(json.dumps(PLATFORM) + "\n")
    bad = folder / "b.jsonl"
    bad.write_text(
        json.dumps({**PLATFORM, "action_id": "b1", "participant_name": ["x"]})
        + "\n"
        + json.dumps({**PLATFORM, "action_id": "b2"})
        + "\n"
    )
    (folder / "c.jsonl").write_text(json.dumps({**PLATFORM, "action_id": "c1"}) + "\n")
    r = cli("import", str(folder))
    assert r.exit_code == 1
    error, hint = r.stderr.splitlines()
    assert error == f"error: {bad}:1: field 'participant_name': expected text, not a JSON list"
    assert "already imported: a.jsonl" in hint and "not tried: c.jsonl" in hint
    r = cli("import", str(folder), "--skip-invalid")
    assert r.exit_code == 0, r.output
    assert _count(db_path) == 3  # a1, b2, c1


@pytest.mark.parametrize("name", ["p.jsonl", "q1ec1.txt", "log.csv"])
def test_a_file_that_is_not_utf8_is_named_with_its_line(cli, tmp_path, name) -> None:
    lines = {
        "p.jsonl": [json.dumps({**PLATFORM, "action_id": f"a{i}"}) for i in range(30)],
        "q1ec1.txt": [f"g|turn {i}|instruct" for i in range(30)],
        "log.csv": ["session,content"] + [f"s1,turn {i}" for i in range(30)],
    }[name]
    f = tmp_path / name
    data = "\n".join(lines).encode()
    at = data.index(b"turn 25" if name != "p.jsonl" else b'"a25"')
    f.write_bytes(data[:at] + "caf\xe9 ".encode("latin-1") + data[at:])
    line = data[:at].count(b"\n") + 1
    r = cli("import", str(f))
    assert r.exit_code == 1
    assert r.stderr.startswith(f"error: {f}:{line}: not UTF-8 text (byte 0xe9 at column "), r.stderr


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ({"action_id": "s1:0", "coder": {"name": "ana"}, "value": "Initiate"},
         "field 'coder': expected text, not a JSON object"),
        ({"action_id": ["s1:0"], "coder": "ana", "value": "Initiate"},
         "field 'action_id': expected text, not a JSON list"),
        (DEEP, "JSON nested deeper than 100 levels"),
    ],
    ids=["obj-coder", "list-action", "deep"],
)  # fmt: skip
def test_import_labels_odd_field_names_the_line(cli, db_path, tmp_path, line, problem) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps(GOOD) + "\n")
    assert cli("import", str(log), "--format", "jsonl").exit_code == 0
    f = tmp_path / "labels.jsonl"
    first = {"action_id": "s1:0", "coder": "ben", "value": "Initiate"}
    f.write_text(json.dumps(first) + "\n" + (line if isinstance(line, str) else json.dumps(line)))
    r = cli("import-labels", str(f), "--codebook", "traum")
    assert r.exit_code == 1
    assert r.stderr.splitlines()[0] == f"error: {f}:2: {problem}"
    with Store(db_path) as s:
        assert s.label_rows("traum") == []


SURROGATE = "not valid Unicode: a lone surrogate (\\ud800 to \\udfff) is not text"


@pytest.mark.parametrize("fmt", ["jsonl", "platform"])
def test_a_lone_surrogate_is_one_bad_line(cli, db_path, tmp_path, fmt) -> None:
    good, key = (GOOD, "content") if fmt == "jsonl" else (PLATFORM, "action_content")
    lone = json.dumps({**good, key: "x\ud800y"})
    assert "\\ud800" in lone
    pair = json.dumps({**good, key: "a \U0001f600 pair", "action_id": "a2"})
    f = tmp_path / f"{fmt}.jsonl"
    f.write_text(lone + "\n" + pair + "\n")
    r = cli("import", str(f), "--format", fmt)
    assert r.exit_code == 1 and "Traceback" not in r.stderr
    assert r.stderr.splitlines()[0] == f"error: {f}:1: {SURROGATE}", r.stderr
    r = cli("import", str(f), "--format", fmt, "--skip-invalid")
    assert r.exit_code == 0, r.stderr
    assert f"skipped {f}:1: {SURROGATE}" in r.stderr and _count(db_path) == 1


def test_a_first_line_nested_too_deep_does_not_stop_format_detection(cli, db_path, tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "a.jsonl").write_text("[" * 1000 + "]" * 1000 + "\n" + json.dumps(PLATFORM) + "\n")
    r = cli("import", str(folder), "--skip-invalid")
    assert r.exit_code == 0, r.stderr
    assert "Traceback" not in r.stderr and _count(db_path) == 1
