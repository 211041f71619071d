"""The import's quick paths give exactly what the long ways give (benchmarks/README.md,
"Import in groups"): the usual UTC time written from its digits, a plain platform line
decoded by msgspec and a usual one read without its field-by-field reading, and a group of
files written at once with each session's time order worked out before the rows are
written."""

from __future__ import annotations

import contextlib
import itertools
import json
import random
import sqlite3
from pathlib import Path

import pytest

from annotate.io import importing
from annotate.io.importers import platform
from annotate.io.importers.base import ImportOptions
from annotate.io.importers.fields import FieldError, utc_timestamp, utc_timestamp_parsed
from annotate.io.importers.platform import NOT_EXTRA, _record, _row, _slow_item, _usual_row
from annotate.io.importing import import_files
from annotate.store import Store


def _either(function, value):
    try:
        return function(value)
    except FieldError as exc:
        return f"error: {exc}"


def test_the_quick_utc_time_is_the_long_way_on_every_shape() -> None:
    dates = [
        "2026-04-10",
        "1999-12-31",
        "2024-02-29",
        "2026-02-29",
        "2026-13-01",
        "0999-01-01",
        "1000-01-01",
        "9999-12-31",
        "2026-04-00",
        "２０２６-04-10",
    ]
    times = ["00:00:00", "23:59:59", "24:00:00", "23:60:00", "23:59:60", "12:30:45"]
    fractions = ["", ".5", ".12", ".123", ".1234", ".12345", ".123456", ".1234567", ",5", "."]
    zones = ["", "Z", "z", "+00:00", "-00:00", "+02:00", "-05:30", "+0000", "+14:00", " "]
    seps = ["T", " ", "t"]
    checked = 0
    for date, time, fraction, zone, sep in itertools.product(dates, times, fractions, zones, seps):
        value = f"{date}{sep}{time}{fraction}{zone}"
        assert _either(utc_timestamp, value) == _either(utc_timestamp_parsed, value), value
        checked += 1
    for value in ["", " 2026-04-10T10:00:00Z", "2026-04-10T10:00:00Z\n", "2026-04-10", "yesterday",
                  "2026-04-10T10:00", "2026-W15-5T10:00:00Z", "20260410T100000Z", 1712742000, None,
                  1.5, {"t": 0}]:  # fmt: skip
        assert _either(utc_timestamp, value) == _either(utc_timestamp_parsed, value), value
    assert checked == 18_000
    assert utc_timestamp("2026-04-10T10:00:00.5Z") == "2026-04-10T10:00:00.500000Z"


def _lines(rng: random.Random, n: int) -> list[dict]:
    kinds = [("send_message", "hi"), ("map_draw_stop", "brush_release"), ("map_draw_start", "x"),
             ("map_tool_click", "undo"), ("map_tool_click", "Reset"), ("map_tool_click", "zoom"),
             ("map_tool_click", None), ("page_view", None), ("send_message", 7)]  # fmt: skip
    metadata = [None, {}, {"stroke_tool": "eraser"}, {"stroke_tool": "brush"}, {"n": 1},
                {"b": [1, {"z": None}], "a": 1.5, "u": "é\u2028\"q"}, {"t": True}, []]  # fmt: skip
    out = []
    for k in range(n):
        kind, content = rng.choice(kinds)
        line = {
            "action_id": rng.choice([f"a{k}", f"a{k}", 5, ""]),
            "timestamp": rng.choice(
                [
                    "2026-04-10T10:00:00.001Z",
                    "2026-04-10T12:00:00+02:00",
                    "2026-04-10T10:00:00",
                    "bad",
                    5,
                ]
            ),
            "session_id": rng.choice(["s1", "s2", 3]),
            "participant_id": rng.choice(["p1", "p2", "é"]),
            "action_type": kind,
        }
        for key, values in [
            ("participant_name", ["Ann", "", None, 4]),
            ("action_content", [content]),
            ("metadata", metadata),
            ("session_elapsed_seconds", [0, 2.5, 10**20, -3, float("nan"), "4", True, None]),
            ("role", ["guide", None, ""]),
            ("condition", ["hidden", None]),
            ("extra", ["x", {"y": 2}]),
            ("tool", ["mine"]),
            ("source_type", ["over"]),
        ]:
            if rng.random() < 0.6:
                line[key] = rng.choice(values)
        out.append(line)
    return out


@pytest.mark.parametrize(
    "options",
    [ImportOptions(), ImportOptions(condition="c", roles={"Ann": "guide", "p2": "follower"})],
)
def test_a_usual_line_is_read_quickly_as_the_long_way_reads_it(options) -> None:
    quick = 0
    for n, line in enumerate(_lines(random.Random(7), 5000)):
        try:
            record = _record(line)
        except ValueError:  # the quick reading raises too, or leaves it to the long way
            with contextlib.suppress(ValueError):
                assert _usual_row(line, n, options) is None, line
            continue
        row = _usual_row(line, n, options)
        extra = {k: v for k, v in line.items() if k not in NOT_EXTRA}
        if row is not None:
            quick += 1
            assert row == _row(record, n, options, extra), line
    assert quick > 500


ODD_TEXTS = [
    # JSON texts that msgspec and json.loads might read differently: each must come out
    # of parse() exactly as json.loads and the field-by-field reading make it
    '{"k": NaN}', '{"k": Infinity}', '{"k": -Infinity}', '{"k": 1e400}', '{"k": -1e400}',
    '{"k": 1e-400}', '{"k": 123456789012345678901234567890}', '{"k": -0}', '{"k": -0.0}',
    '{"k": 0.1}', '{"k": 1E5}', '{"k": 5e-324}', '{"k": 1.7976931348623157e308}',
    '{"k": "\\ud800"}', '{"\\ud800": 1}', '{"k": "\\u00e9\\/\\u2028"}', '{"k": true}',
    '{"k": null}', '{"k": [1, 2]}', '{"k": {"n": 1}}', '{"k": 01}', '{"k": 1.}',
    '{"k": "\x01"}', '{"k": "\t"}',
]


def _odd_lines(rng: random.Random, n: int) -> list[str]:
    """Platform lines as text: plain ones, odd values dropped into a field, duplicate keys,
    white space around the object, deep nesting, and lines that are not an object."""
    base = [json.dumps(line) for line in _lines(rng, n)]
    plain = {
        "action_id": "p1", "timestamp": "2026-04-10T10:00:00.25Z", "session_id": "s1",
        "participant_id": "p1", "participant_name": "Ann", "action_type": "map_draw_stop",
        "action_content": "brush_release", "metadata": {"stroke_tool": "brush"},
        "session_elapsed_seconds": 3, "role": "guide", "condition": "hidden",
    }  # fmt: skip
    out = []
    for k, text in enumerate(base):
        if k % 3 == 1:
            out.append(text)
            continue
        line = dict(plain, action_id=f"p{k}")
        for key in ("participant_name", "role", "condition", "metadata", "action_content"):
            if rng.random() < 0.2:
                line[key] = rng.choice([None, "", {}, {"n": 1.5, "b": False, "z": None}])
            elif rng.random() < 0.1:
                del line[key]
        text = json.dumps(line, ensure_ascii=rng.random() < 0.5)
        if k % 3 == 2:
            out.append(text)
            continue
        field = rng.choice([*plain, "extra"])
        odd = rng.choice(ODD_TEXTS)
        choice = k % 9
        if choice == 0:  # an odd value in a field, or inside metadata
            value = odd[len('{"k": ') : -1] if rng.random() < 0.5 else odd
            text = text[:-1] + f', "{field}": {value}}}'
        elif choice == 3:  # a key twice (the last counts), white space around it
            text = " " + text[:-1] + f', "{field}": {json.dumps(rng.choice([None, "x", 2]))}}} '
        else:
            text = rng.choice([
                text,
                "\t" + text,
                text.replace('"brush"', '{"a": ' * 60 + "1" + "}" * 60),
                text.replace('"brush"', '[' * 120 + "]" * 120),
                text.replace('"brush"', '{"a": ' * 2000 + "1" + "}" * 2000),
                text.replace('"s1"', '"s1", "session_id": ""'),
                text.replace('"2026-04-10T10:00:00.25Z"', '"2026-02-30T10:00:00Z"'),
                text.replace("3,", str(2**53 + 1) + ","),
                text.replace("3,", "3.5e0,"),
                "[" + text + "]",
                text + "{}",
                "",
                "   ",
                "\u2028",
            ])  # fmt: skip
        out.append(text)
    return out


@pytest.mark.parametrize(
    "options",
    [ImportOptions(), ImportOptions(condition="c", roles={"Ann": "follower", "p2": "guide"})],
)
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_every_line_of_a_file_is_read_as_the_long_way_reads_it(
    tmp_path: Path, monkeypatch, options, newline: str
) -> None:
    lines = _odd_lines(random.Random(11), 3000)
    path = tmp_path / "p.jsonl"
    path.write_bytes(newline.join(lines).encode("utf-8", "surrogatepass") + b"\n")
    # the long way, line by line as a text file gives them
    with path.open(encoding="utf-8") as fh:
        expected = [
            (n, item)
            for n, line in enumerate(fh, start=1)
            if (item := _slow_item(line, n, options)) is not None
        ]
    plain = []
    monkeypatch.setattr(
        platform, "_plain_row", lambda *args: plain.append(args[1]) or _plain_row(*args)
    )
    read = list(platform.parse(path, options))
    assert [repr(pair) for pair in read] == [repr(pair) for pair in expected]  # 3.0 is not 3
    rows = [item for _, item in expected if type(item) is list]
    problems = [item for _, item in expected if type(item) is not list]
    assert len(plain) > 600 and len(rows) > 1000 and len(problems) > 1000


_plain_row = platform._plain_row


def _platform_folder(folder: Path, seed: int) -> Path:
    """Sessions split over one to three participants' files, with times that tie across
    files, and no roles (so they are inferred)."""
    rng = random.Random(seed)
    folder.mkdir()
    action = 0
    for s in range(8):
        for p in range(rng.choice([1, 2, 2, 3])):
            lines = []
            for _ in range(rng.randint(1, 30)):
                action += 1
                kind = rng.choice(["send_message", "map_draw_stop"] if p == 1 else ["send_message"])
                lines.append(json.dumps({
                    "action_id": f"a{action}", "session_id": f"s{s}", "participant_id": f"s{s}p{p}",
                    "participant_name": f"P{p}", "action_type": kind, "action_content": "go",
                    "timestamp": f"2026-04-10T10:00:{rng.randint(0, 9):02d}Z",
                }))  # fmt: skip
            (folder / f"s{s}p{p}.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def _stored(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT rowid, id, session, seq, role, meta, import_id FROM actions ORDER BY rowid"
        ).fetchall()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_files_written_in_groups_are_stored_as_files_written_one_by_one(
    tmp_path: Path, monkeypatch, seed: int
) -> None:
    folder = _platform_folder(tmp_path / "logs", seed)
    files = sorted(folder.glob("*.jsonl"))
    # one by one: each file its own import, renumbered and roles inferred by the store
    with Store(tmp_path / "one.db") as store:
        for f in files:
            import_files(store, [f])
    expected = _stored(tmp_path / "one.db")
    assert any(r[4] is not None for r in expected)  # some roles were inferred
    # in groups of every size: a group of one file up to the whole folder in one group,
    # and files larger than a group (streamed); also half the files first, then all
    for rows in (1, 7, 40, 100_000):
        monkeypatch.setattr(importing, "GROUP_ROWS", rows)
        with Store(tmp_path / f"g{rows}.db") as store:
            import_files(store, [folder])
        assert _stored(tmp_path / f"g{rows}.db") == expected, rows
        with Store(tmp_path / f"h{rows}.db") as store:
            import_files(store, files[::2])
            import_files(store, [folder])
        with Store(tmp_path / f"h1-{rows}.db") as store:
            monkeypatch.setattr(importing, "GROUP_ROWS", 20_000)
            for f in files[::2]:
                import_files(store, [f])
            for f in files:
                import_files(store, [f])
        half = _stored(tmp_path / f"h{rows}.db")
        assert [r[1:6] for r in half] == [r[1:6] for r in _stored(tmp_path / f"h1-{rows}.db")]


def test_a_clash_in_a_group_keeps_the_files_before_it(tmp_path: Path, cli, db_path) -> None:
    folder = _platform_folder(tmp_path / "logs", 4)
    files = sorted(folder.glob("*.jsonl"))
    first = json.loads(files[0].read_text().splitlines()[0])
    bad = files[3]
    bad.write_text(bad.read_text() + json.dumps({**first, "action_content": "other"}) + "\n")
    r = cli("import", str(folder))
    assert r.exit_code == 1
    assert f"{bad}:" in r.stderr and "already stored with another session, type or content" in (
        r.stderr
    )
    assert f"already imported: {', '.join(f.name for f in files[:3])}" in r.stderr
    with Store(db_path) as store:
        stored = {row["path"] for row in store.actions.import_history()}
    assert stored == {str(f) for f in files[:3]}
