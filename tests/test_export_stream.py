"""`export` streams each table from one cursor: the bytes do not depend on the batch size,
every odd cell reads back as stored (CSV, JSON lines, Parquet), and the hot queries of
`export`, `sample` and `status` use an index (EXPLAIN QUERY PLAN)."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pandas as pd
import pytest

from annotate.codebook import Answer, find_codebook
from annotate.io import export
from annotate.models import Action
from annotate.render.cells import safe_cell
from annotate.store import LabelWrite, Store

ODD = [
    "plain",
    "a, comma",
    'a "quote"',
    "two\nlines",
    "tab\tinside",
    "back\\slash",
    "=SUM(A1)",
    "+1",
    "-2",
    "@x",
    "\tstarts with a tab",
    "\rstarts with a return",
    "",
    None,
    "007",
    "é 中文 \U0001f600",
    "ends with ]",
    "[starts with",
    '"=quoted formula"',
    "esc \x1b[31m red",
    "null",
]


def _project(db: Path) -> None:
    actions = [
        Action(
            id=f"a{k:02d}",
            session=f"s{k % 3}",
            seq=k,
            action_type="message",
            content=text,
            participant="P, one" if k % 2 else None,
            role="guide",
            timestamp=f"2026-01-01T10:00:{k:02d}.000000Z",
            elapsed_s=k / 3 if k % 4 else None,
            condition="visible",
        )
        for k, text in enumerate(ODD)
    ]
    loaded = find_codebook("traum")
    with Store(db) as s:
        s.actions.add_actions(actions, path="odd", sha256="odd", fmt="test")
        s.codebooks.register_codebook(loaded)
        writes = [
            LabelWrite(a.id, "act", coder, Answer("other", other_text=a.content or "x"))
            for a in actions
            for coder in ("ana", "ben")
        ]
        s.labels.save_answers(loaded.codebook, writes)
        s.samples.create_sample("main", [a.id for a in actions[::-1][:7]])


@pytest.fixture
def odd_db(tmp_path: Path) -> Path:
    db = tmp_path / "odd.db"
    _project(db)
    return db


def _sent(s: Store, query, fmt, safe_csv: bool = True) -> str:
    """What the export sends of the table (the text of each batch, in order), as one text."""
    pieces: list[str] = []
    export._send(s, query, export.ExportFormat(fmt), safe_csv, pieces.append)
    return "".join(pieces)


def _text(db: Path, what: export.ExportWhat, fmt: export.ExportFormat, **filters) -> str:
    with Store(db) as s:
        return _sent(s, export.build(s, what, **filters), fmt)


@pytest.mark.parametrize("what", list(export.ExportWhat)[:3])
@pytest.mark.parametrize("fmt", [export.ExportFormat.csv, export.ExportFormat.jsonl])
def test_batches_of_any_size_give_the_same_bytes(odd_db, monkeypatch, what, fmt) -> None:
    whole = _text(odd_db, what, fmt)
    for size in (1, 2, 7):
        monkeypatch.setattr(export, "ROWS_PER_CHUNK", size)
        assert _text(odd_db, what, fmt) == whole


def test_csv_reads_back_every_odd_cell(odd_db) -> None:
    with Store(odd_db) as s:
        stored = s.db.query(
            "SELECT id, content, participant, elapsed_s FROM actions ORDER BY session, seq"
        )
    rows = list(csv.DictReader(io.StringIO(_text(odd_db, "actions", export.ExportFormat.csv))))
    assert [r["id"] for r in rows] == [r["id"] for r in stored]
    by_id = {r["id"]: r for r in rows}
    for want in stored:
        got = by_id[want["id"]]
        text = want["content"]
        assert got["content"] == ("" if text is None else safe_cell(text))
        assert got["participant"] == (want["participant"] or "")
        assert got["elapsed_s"] == ("" if want["elapsed_s"] is None else got["elapsed_s"])
        if want["elapsed_s"] is not None:
            assert float(got["elapsed_s"]) == pytest.approx(want["elapsed_s"], rel=1e-14)
    # text is quoted, numbers are not: "007" stays text, seq is a number
    line = next(x for x in _text(odd_db, "actions", "csv").splitlines() if '"007"' in x)
    assert line.endswith(',"007",""') and ",14," in line  # content, then an empty meta
    frame = pd.read_csv(io.StringIO(_text(odd_db, "actions", "csv")), keep_default_na=False)
    assert frame["seq"].dtype.kind == "i"


def test_no_safe_csv_keeps_the_cells_and_jsonl_is_never_changed(odd_db) -> None:
    with Store(odd_db) as s:
        query = export.build(s, export.ExportWhat.actions)
        raw = _sent(s, query, export.ExportFormat.csv, safe_csv=False)
    contents = [r["content"] for r in csv.DictReader(io.StringIO(raw))]
    assert sorted(contents) == sorted(t or "" for t in ODD)
    lines = _text(odd_db, "actions", export.ExportFormat.jsonl).splitlines()
    assert sorted((json.loads(x)["content"] for x in lines), key=str) == sorted(ODD, key=str)


def test_labels_are_joined_with_their_actions_in_every_format(odd_db, tmp_path) -> None:
    text = _text(odd_db, "labels", export.ExportFormat.jsonl, coders=["ben"], sample="main")
    rows = [json.loads(x) for x in text.splitlines()]
    assert len(rows) == 7 and {r["coder"] for r in rows} == {"ben"}
    assert [r["action_id"] for r in rows] == sorted(r["action_id"] for r in rows)
    for r in rows:
        assert r["other_text"] == (r["content"] or "x") and r["session"].startswith("s")
        assert r["meta"] is None and r["codes"] is None and isinstance(r["seq"], int)
    out = tmp_path / "labels.parquet"
    with Store(odd_db) as s:
        query = export.build(s, export.ExportWhat.labels)
        assert export.write(s, query, export.ExportFormat.parquet, out) == 2 * len(ODD)
    frame = pd.read_parquet(out)
    assert list(frame.columns) == query.names
    assert frame["seq"].dtype == "int64" and frame["elapsed_s"].dtype == "float64"
    assert sorted(frame["content"].dropna()) == sorted([t for t in ODD if t is not None] * 2)


def test_an_empty_table_has_its_header(odd_db, tmp_path) -> None:
    with Store(odd_db) as s:
        s.samples.create_sample("none", [])
    text = _text(odd_db, "labels", export.ExportFormat.csv, sample="none")
    assert text.startswith("action_id,codebook,") and text.count("\n") == 1
    assert _text(odd_db, "labels", export.ExportFormat.jsonl, sample="none") == ""
    out = tmp_path / "empty.parquet"
    with Store(odd_db) as s:
        query = export.build(s, export.ExportWhat.actions, sample="none")
        assert export.write(s, query, export.ExportFormat.parquet, out) == 0
    assert list(pd.read_parquet(out).columns) == query.names


# -- the hot queries use an index -------------------------------------------------------


def _plan(store: Store, sql: str, params=()) -> str:
    return " | ".join(r[3] for r in store.db.conn.execute("EXPLAIN QUERY PLAN " + sql, params))


def _progress_sql(store: Store) -> list[str]:
    seen: list[str] = []
    store.db.conn.set_trace_callback(seen.append)
    try:
        store.labels.coder_progress("main", find_codebook("traum").codebook)
        store.actions.overview_by_condition()
        store.codebooks.codebook_versions()
    finally:
        store.db.conn.set_trace_callback(None)
    return seen


def test_hot_queries_use_an_index(odd_db) -> None:
    with Store(odd_db) as s:
        traced = _progress_sql(s)
        progress = next(q for q in traced if "FROM coder_labels l JOIN sample_items" in q)
        overview = next(q for q in traced if "GROUP BY condition, session" in q)
        versions = next(q for q in traced if "FROM codebooks c" in q)
        assert "COVERING INDEX labels_progress" in _plan(s, progress)
        assert "INDEX gold_item" in _plan(s, progress)
        assert "COVERING INDEX actions_condition" in _plan(s, overview)
        assert "COVERING INDEX labels_progress" in _plan(s, versions)
        # sampling reads row ids in session order from the index alone
        seen: list[str] = []
        s.db.conn.set_trace_callback(seen.append)
        with s.actions.sampling_rows(None) as rows:
            assert len(rows.fetchall()) == len(ODD)
        s.db.conn.set_trace_callback(None)
        plan = _plan(s, next(q for q in seen if "ORDER BY session, seq" in q))
        assert "COVERING INDEX actions_session_seq" in plan and "TEMP B-TREE" not in plan
        # exports stream in index order: no sort of the whole table
        query = s.exports.export_actions_query()
        plan = _plan(s, query.plain_sql(), query.params)
        assert "INDEX actions_session_seq" in plan and "TEMP B-TREE" not in plan
        query = s.exports.export_actions_query(sample="main")
        plan = _plan(s, query.plain_sql(), query.params)
        assert "TEMP B-TREE" not in plan


def _reference_csv(store: Store, what: str, safe: bool) -> str:
    """The table's CSV written cell by cell in Python from one column per field, a number as
    SQLite prints it as text: what the batch writer must give, byte for byte."""
    query = export.build(store, what)
    fields = ", ".join(f"typeof({c.expr}), CAST({c.expr} AS TEXT)" for c in query.columns)
    cursor = store.db.conn.cursor()
    cursor.row_factory = None
    lines = [",".join(query.names)]
    for row in cursor.execute(query.sql(fields), query.params):
        cells = []
        for kind, text in zip(row[::2], row[1::2], strict=True):
            if kind in ("integer", "real"):
                cells.append(text)
            else:
                text = safe_cell(text or "") if safe else text or ""
                cells.append('"' + text.replace('"', '""') + '"')
        lines.append(",".join(cells))
    return "\n".join(lines) + "\n"


ESCAPED = [
    'JSON "quotes"',
    "back\\slash \\",
    'a\\"b',  # a backslash before a quote
    "C:\\users\\u0041",  # a backslash before 'u': no escape of JSON's
    "nul \x00 and \x01 \x1f",
    "tab\tnew\nline\rreturn \b \f /slash",
    "é 中文 \U0001f600",
    "\\",
]


def _odd_texts(store: Store) -> None:
    """JSON in a cell, every kind of JSON escape, text held by a number column."""
    store.db.conn.execute(
        'UPDATE coder_labels SET meta = \'{"a": "=x", "b": "\\\\n"}\' WHERE id = 1'
    )
    store.db.conn.execute(
        'UPDATE coder_labels SET codes = \'["n1","-n3"]\', seconds = 1e20 WHERE id = 2'
    )
    store.db.conn.execute("UPDATE coder_labels SET seconds = '-abc' WHERE id = 3")
    store.db.conn.execute("UPDATE actions SET elapsed_s = '=\"x' WHERE id = 'a01'")
    store.db.conn.execute("UPDATE actions SET elapsed_s = -0.0 WHERE id = 'a02'")
    for k, text in enumerate(ESCAPED):
        store.db.conn.execute("UPDATE coder_labels SET note = ? WHERE id = ?", (text, 5 + k))
        store.db.conn.execute(
            "UPDATE actions SET content = ? WHERE id = ?", (text, f"a{4 + k:02d}")
        )
    store.db.conn.commit()


@pytest.mark.parametrize("what", ["actions", "labels"])
@pytest.mark.parametrize("safe", [True, False])
@pytest.mark.parametrize("size", [1, 20_000])
def test_csv_is_the_cells_written_one_by_one(odd_db, monkeypatch, what, safe, size) -> None:
    """The rows' JSON arrays, unescaped, give the CSV written cell by cell, whatever the
    batch: odd texts, JSON in a cell, each JSON escape, text held by a number column."""
    monkeypatch.setattr(export, "ROWS_PER_CHUNK", size)
    with Store(odd_db) as s:
        _odd_texts(s)
        query = export.build(s, what)
        raw = _sent(s, query, "csv", safe_csv=safe)
        assert raw == _reference_csv(s, what, safe)
    rows = list(csv.DictReader(io.StringIO(raw)))
    assert len(rows) == (2 * len(ODD) if what == "labels" else len(ODD))
    if what == "labels":
        first = next(r for r in rows if r["meta"])
        assert json.loads(first["meta"]) == {"a": "=x", "b": "\\n"}
        assert {r["codes"] for r in rows} >= {"n1;-n3"} and "1.0e+20" in raw
        assert {r["note"] for r in rows} >= set(ESCAPED)
    else:
        assert {r["content"] for r in rows} >= set(ESCAPED)
    assert {r["elapsed_s"] for r in rows} >= {"'=\"x" if safe else '="x', "0.0"}


def test_a_nul_in_a_text_is_exported_whole(odd_db) -> None:
    """json_array keeps a text whole where printf would cut it at its NUL."""
    with Store(odd_db) as s:
        s.db.conn.execute(
            "UPDATE coder_labels SET other_text = 'be' || char(0) || 'fore' WHERE id = 1"
        )
        s.db.conn.execute("UPDATE actions SET content = 'x' || char(0) || 'y' WHERE id = 'a01'")
        s.db.conn.commit()
    labels = _text(odd_db, "labels", export.ExportFormat.csv)
    actions = _text(odd_db, "actions", export.ExportFormat.csv)
    assert '"be\x00fore"' in labels and '"x\x00y"' in actions
    with Store(odd_db) as s:
        assert labels == _reference_csv(s, "labels", True)
        assert actions == _reference_csv(s, "actions", True)


def test_an_infinite_number_is_a_json_number_in_json_lines(odd_db, tmp_path, monkeypatch) -> None:
    """SQLite before 3.45 writes ``Inf`` in a JSON object, which no JSON reader takes; a
    text that holds ``":Inf`` stays as it is."""
    texts = {"a01": 'say ":Inf," and ":-Inf}', "a02": 'back\\":Inf,'}
    with Store(odd_db) as s:
        s.db.conn.execute("UPDATE actions SET elapsed_s = 9e999 WHERE id = 'a03'")
        s.db.conn.execute("UPDATE actions SET elapsed_s = -9e999 WHERE id = 'a05'")
        for action_id, text in texts.items():
            s.db.conn.execute("UPDATE actions SET content = ? WHERE id = ?", (text, action_id))
        s.db.conn.commit()
    for size in (1, 5000):
        monkeypatch.setattr(export, "ROWS_PER_CHUNK", size)
        text = _text(odd_db, "actions", export.ExportFormat.jsonl)
        rows = {r["id"]: r for r in map(json.loads, text.splitlines())}
        assert rows["a03"]["elapsed_s"] == float("inf")
        assert rows["a05"]["elapsed_s"] == float("-inf")
        assert {k: rows[k]["content"] for k in texts} == texts
    out = tmp_path / "actions.jsonl"
    with Store(odd_db) as s:
        export.write(s, export.build(s, "actions"), export.ExportFormat.jsonl, out)
    frame = pd.read_json(out, lines=True)
    assert frame["elapsed_s"].max() == float("inf")


def test_json_escapes_are_undone_as_csv_wants_them() -> None:
    """Every text SQLite's json_quote escapes, alone and in lines with the others (each
    text takes the cheapest route its escapes allow), comes back with its quotes doubled."""
    import sqlite3

    texts = [*ESCAPED, *(t for t in ODD if t is not None), "\x00", '\\"', "\\u00e9", "\\\\n"]
    with closing(sqlite3.connect(":memory:")) as conn:
        quoted = [conn.execute("SELECT json_quote(?)", (t,)).fetchone()[0][1:-1] for t in texts]
    for text, escaped in zip(texts, quoted, strict=True):
        assert export._json_unescaped(escaped) == text.replace('"', '""')
    for k in range(len(texts)):
        batch = "\n".join(quoted[k:] + quoted[:k])
        want = "\n".join(t.replace('"', '""') for t in texts[k:] + texts[:k])
        assert export._json_unescaped(batch) == want


def test_batches_are_written_in_order_beside_the_reading_and_an_error_stops_both() -> None:
    """The writing thread takes the batches in the order read; a failed write ends the
    reading (and nothing is written after it); a failed read ends the writing."""
    import threading
    import time

    written: list[int] = []
    reader = threading.get_ident()

    def batches(n: int, fail_at: int | None = None):
        for i in range(n):
            if i == fail_at:
                raise sqlite3.OperationalError("disk I/O error")
            yield [i] * (i % 3 + 1)

    def write(batch: list[int]) -> None:
        assert threading.get_ident() != reader
        time.sleep(0.001 * (batch[0] % 2))  # some writes slower than the reads
        written.append(batch[0])

    assert export._beside(batches(50), write) == sum(i % 3 + 1 for i in range(50))
    assert written == list(range(50))

    written.clear()

    def failing(batch: list[int]) -> None:
        if batch[0] == 5:
            raise OSError(28, "No space left on device")
        written.append(batch[0])

    read = batches(1000)
    with pytest.raises(OSError, match="No space left"):
        export._beside(read, failing)
    assert written == [0, 1, 2, 3, 4]  # in order, and nothing after the failed one
    assert read.gi_frame is None  # the reading was closed (its cursor with it)

    written.clear()
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        export._beside(batches(20, fail_at=7), write)
    assert written == list(range(len(written))) and len(written) <= 7  # what was read, or less
