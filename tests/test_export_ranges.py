"""`export` reads a table in ranges of its key, side by side on connections of one
snapshot: the bytes are those of one cursor over the whole table, the ranges come from the
key's index (no sort), a missing index or a file written to all along falls back to the
one cursor, and an error on either side stops both."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import threading
from contextlib import closing
from pathlib import Path

import pytest

from annotate.codebook import Answer, find_codebook
from annotate.errors import UsageError
from annotate.io import export
from annotate.store import LabelWrite, Store
from tests.test_export_stream import ESCAPED, _project

FORMATS = [export.ExportFormat.csv, export.ExportFormat.jsonl]


@pytest.fixture
def odd_db(tmp_path: Path) -> Path:
    db = tmp_path / "odd.db"
    _project(db)
    return db


def _counted(store: Store, query, fmt) -> tuple[int, str]:
    """(rows, text) of the table from one cursor over the whole query (the fallback)."""
    header, select, text_of = export._text_format(query, fmt, True)
    pieces = [header]
    batches = export._batches(store, query, select)
    rows = export._beside(batches, lambda batch: pieces.append(text_of(export._joined(batch))))
    return rows, "".join(pieces)


def _one_cursor(store: Store, query, fmt) -> str:
    return _counted(store, query, fmt)[1]


def _parsed(text: str, fmt) -> list[dict]:
    if fmt == "csv":
        return list(csv.DictReader(io.StringIO(text)))
    return [json.loads(line) for line in text.splitlines()]


def _in_ranges(store: Store, query, fmt) -> tuple[int | None, str]:
    header, select, text_of_range = export._text_format(query, fmt, True)
    pieces = [header]
    rows = export._in_ranges(
        store, query, select, export.ROWS_PER_CHUNK, text_of_range, pieces.append
    )
    return rows, "".join(pieces)


QUERIES = {
    "actions": {"what": "actions"},
    "sample": {"what": "actions", "sample": "main"},
    "labels": {"what": "labels"},
    "one coder": {"what": "labels", "coders": ["ben"]},
    "gold": {"what": "gold"},
    "one codebook": {"what": "labels", "codebook": "traum"},
    "labels of a sample": {"what": "labels", "sample": "main"},
    "gold of a codebook's sample": {"what": "gold", "sample": "main", "codebook": "traum"},
    "gold and coders": {"what": "labels", "codebook": "traum"},
}
ONE_CURSOR = {"gold and coders"}
"""The coders' labels with gold: one cursor over both tables, sorted by SQLite (ranges cut
in one table's index could hold all of the other's rows)."""


@pytest.mark.parametrize("name", list(QUERIES))
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("size", [1, 2, 7, 5000])
def test_ranges_give_the_bytes_of_one_cursor(odd_db, monkeypatch, name, fmt, size) -> None:
    monkeypatch.setattr(export, "ROWS_PER_CHUNK", size)
    with Store(odd_db) as s:
        if "gold" in name:  # a gold label of every fourth label
            ana = s.db.query("SELECT action_id FROM labels WHERE coder = 'ana' AND id % 4 = 1")
            gold = [LabelWrite(r[0], "act", "gold", Answer("Initiate"), "adjudicate") for r in ana]
            s.labels.save_answers(find_codebook("traum").codebook, gold)
        query = export.build(s, **QUERIES[name])
        rows, text = _in_ranges(s, query, fmt)
        if name in ONE_CURSOR:
            assert rows is None and not query.key
            rows, text = _counted(s, query, fmt)
            keys = [
                tuple(r[k] for k in ("codebook", "action_id", "question", "coder"))
                for r in _parsed(text, fmt)
            ]
            assert keys == sorted(keys) and {k[3] for k in keys} >= {"ana", "gold"}
            assert rows == len(keys) == s.db.conn.execute(
                "SELECT count(*) FROM labels WHERE codebook = 'traum' "
                "AND (value IS NOT NULL OR codes IS NOT NULL)"
            ).fetchone()[0]
        else:
            assert (rows, text) == _counted(s, query, fmt)
    assert rows, "no rows, or read in one cursor"


def test_every_table_has_a_key_read_from_an_index_without_a_sort(odd_db) -> None:
    """The bounds come from the key's index alone, and a range is one search of it."""
    with Store(odd_db) as s:
        for filters in QUERIES.values():
            query = export.build(s, **filters)  # (no gold in this file: every one ranged)
            bound = query.bound_sql(True)
            params = (*query.key_params, *([None] * len(query.key)), 4)
            plan = " ".join(r[3] for r in s.db.conn.execute(f"EXPLAIN QUERY PLAN {bound}", params))
            assert "COVERING INDEX" in plan and "TEMP B-TREE" not in plan, (filters, plan)
            ranged = query.range_sql(query.json_arrays(), True, True)
            params = (*query.params, *([None] * 2 * len(query.key)))
            plan = " ".join(r[3] for r in s.db.conn.execute(f"EXPLAIN QUERY PLAN {ranged}", params))
            assert "TEMP B-TREE" not in plan and ">" in plan and "<" in plan, (filters, plan)
        llm = s.exports.export_llm_query()
        plan = " ".join(r[3] for r in s.db.conn.execute("EXPLAIN QUERY PLAN " + llm.plain_sql()))
        assert "llm_items_run_phase_action" in plan and "TEMP B-TREE" not in plan


def test_a_missing_index_reads_in_one_cursor(odd_db, monkeypatch) -> None:
    """While an import that defers the indexes of actions runs, the key's index is not
    there: the export reads the table in one cursor, and gives the same bytes."""
    monkeypatch.setattr(export, "ROWS_PER_CHUNK", 3)
    with Store(odd_db) as s:
        query = export.build(s, "actions")
        whole = _one_cursor(s, query, "csv")
        s.db.conn.execute("DROP INDEX actions_session_seq")
        assert _in_ranges(s, query, "csv") == (None, whole.splitlines()[0] + "\n")
        pieces: list[str] = []
        export._send(s, query, export.ExportFormat.csv, True, pieces.append)
    assert "".join(pieces) == whole


def test_readers_share_one_snapshot(odd_db) -> None:
    """What another connection commits after the readers started is not seen by any."""
    with Store(odd_db) as s, s.db.snapshot_readers(2) as readers:
        with closing(sqlite3.connect(odd_db)) as other:
            other.execute("DELETE FROM coder_labels")
            other.commit()
        counts = [r.execute("SELECT count(*) FROM labels").fetchone()[0] for r in readers]
        assert counts[0] == counts[1] > 0
        assert s.db.conn.execute("SELECT count(*) FROM labels").fetchone()[0] == 0


def test_a_file_written_to_while_the_readers_start_is_read_in_one_cursor(
    odd_db, monkeypatch
) -> None:
    """A commit between the starts of two readers' transactions: they could see two states
    of the file. They start again; when every attempt meets a commit, the export reads on
    its own connection, and the text is whole."""
    real_connect = sqlite3.connect
    opened = commits = 0

    def second_after_a_commit(*args, **kwargs):
        """Another process commits after the first reader started, before the second."""
        nonlocal opened, commits
        opened += 1
        if opened % 2 == 0:
            with closing(real_connect(odd_db)) as other:
                other.execute("CREATE TABLE IF NOT EXISTS poke (x)")  # nothing exported
                other.execute("INSERT INTO poke VALUES (1)")
                other.commit()
            commits += 1
        return real_connect(*args, **kwargs)

    with Store(odd_db) as s:
        query = export.build(s, "labels")
        whole = _one_cursor(s, query, "jsonl")
        monkeypatch.setattr(sqlite3, "connect", second_after_a_commit)
        with s.db.snapshot_readers(2, attempts=3) as readers:
            assert readers == [] and opened == 6 and commits == 3
        assert _in_ranges(s, query, "jsonl") == (None, "")  # JSON lines have no header
        pieces: list[str] = []
        export._send(s, query, export.ExportFormat.jsonl, True, pieces.append)
    assert "".join(pieces) == whole


def test_an_error_on_either_side_stops_both(odd_db, monkeypatch) -> None:
    """A failed write: nothing is read or written after it. A failed range: what came
    before it was written, in order, and nothing after."""
    monkeypatch.setattr(export, "ROWS_PER_CHUNK", 1)
    with Store(odd_db) as s:
        query = export.build(s, "actions")
        _, select, _ = export._text_format(query, "jsonl", True)
        sent: list[str] = []
        main = threading.get_ident()

        def failing_sink(text: str) -> None:
            assert threading.get_ident() == main
            if len(sent) == 4:
                raise OSError(28, "No space left on device")
            sent.append(text)

        with pytest.raises(OSError, match="No space left"):
            export._in_ranges(s, query, select, 1, lambda text: text, failing_sink)
        assert len(sent) == 4

        made: list[str] = []

        def failing_make(text: str) -> str:
            if '"seq":9,' in text:
                raise ValueError("a range that cannot be made")
            return text

        with pytest.raises(ValueError, match="cannot be made"):
            export._in_ranges(s, query, select, 1, failing_make, made.append)
        first = [line for line in _one_cursor(s, query, "jsonl").splitlines()]
        assert made == first[: len(made)] and len(made) < len(first)


@pytest.mark.parametrize("index", ["kept", "dropped"])
def test_parquet_holds_every_cell_as_json_lines_give_it(odd_db, tmp_path, monkeypatch, index):
    """Arrow reads each range's JSON arrays as CSV once their escapes are undone: every
    cell (odd texts, every JSON escape, a text "null", a missing value, numbers) is what
    the JSON lines of the same rows hold, in ranges or from one cursor."""
    import pyarrow.parquet as pq

    monkeypatch.setattr(export, "ROWS_PER_CHUNK", 4)
    with Store(odd_db) as s:
        for k, text in enumerate(ESCAPED):
            s.db.conn.execute("UPDATE coder_labels SET note = ? WHERE id = ?", (text, 5 + k))
            s.db.conn.execute(
                "UPDATE actions SET content = ? WHERE id = ?", (text, f"a{4 + k:02d}")
            )
        s.db.conn.execute(
            'UPDATE coder_labels SET seconds = 1e20, codes = \'["n1","-n3"]\' WHERE id = 2'
        )
        if index == "dropped":
            s.db.conn.execute("DROP INDEX actions_session_seq")
        for what in ("actions", "labels"):
            query = export.build(s, what)
            out = tmp_path / f"{what}.parquet"
            rows, lines = _counted(s, query, "jsonl")
            assert export.write(s, query, "parquet", out) == rows
            table = pq.read_table(out)
            assert table.schema.names == query.names
            assert table.to_pylist() == [
                json.loads(line) for line in lines.rstrip("\n").split("\n")
            ]


@pytest.fixture
def busy_db(tmp_path: Path) -> Path:
    """Keys repeated by many rows, three LLM runs with both phases, a session split."""
    db = tmp_path / "busy.db"
    _project(db)
    with Store(db) as s:
        add = (
            "INSERT INTO actions (id, session, seq, action_type, content) VALUES (?, ?, ?, 'm', ?)"
        )
        for k in range(23):
            s.db.conn.execute(add, (f"dup{k:02d}", "s1", 5, f"dup {k}"))
        for k in range(7):  # repeated at the end of a session
            s.db.conn.execute(add, (f"end{k}", "s2", 999, f"end {k}"))
        s.db.conn.execute(
            "INSERT INTO session_splits (name, n_test, seed, method, objective, created_at) "
            "VALUES ('sp', 1, 1, 'x', 0, 'now')"
        )
        s.db.conn.execute(
            "INSERT INTO session_split_items (split, session, part) "
            "VALUES ('sp', 's0', 'test'), ('sp', 's1', 'train')"
        )
        run = (
            "INSERT INTO llm_runs (id, started_at, coder, model, endpoint_host, codebook, "
            "codebook_hash, split, prompt_hash, shot_ids, temperature, votes, context) "
            "VALUES (?, 'now', ?, 'm', 'h', ?, 'hh', 'x', 'p', '[]', 0, 1, 0)"
        )
        for run_id, coder, book in (
            (1, "llm:a", "traum"),
            (2, "llm:b", "other"),
            (3, "llm:a", "traum"),
        ):
            s.db.conn.execute(run, (run_id, coder, book))
        ids = [r[0] for r in s.db.conn.execute("SELECT id FROM actions ORDER BY random()")]
        for n, action in enumerate(ids):
            for run_id in (1, 2, 3):
                if (n + run_id) % 3:
                    s.db.conn.execute(
                        "INSERT INTO llm_items (run_id, action_id, phase, valid, request_hashes, "
                        "raw_replies, tokens_in, tokens_out, latency_s, cached, created_at) "
                        "VALUES (?, ?, ?, 1, '[]', '[\"{\\\"act\\\": 1}\"]', 1, 1, 0.5, 0, 'now')",
                        (run_id, action, "validate" if n % 4 == 0 else "label"),
                    )
        s.db.conn.commit()
    return db


BUSY = {
    "actions": {"what": "actions"},
    "actions with a split": {"what": "actions", "split": "sp"},
    "two coders": {"what": "labels", "coders": ["ana", "ben"]},
    "a codebook, two coders, a split": {
        "what": "labels",
        "codebook": "traum",
        "coders": ["ben", "ana"],
        "split": "sp",
    },
    "llm": {"what": "llm"},
    "llm of a codebook": {"what": "llm", "codebook": "traum"},
    "llm with a split": {"what": "llm", "split": "sp"},
}


@pytest.mark.parametrize("name", list(BUSY))
@pytest.mark.parametrize("size", [1, 3, 11])
def test_repeated_keys_runs_and_splits_come_as_the_plain_query_gives_them(
    busy_db, monkeypatch, name, size
) -> None:
    """Against the query's plain ORDER BY run by SQLite (no index named), not only against
    the export's own other route: every row once, in the same order."""
    monkeypatch.setattr(export, "ROWS_PER_CHUNK", size)
    with Store(busy_db) as s:
        query = export.build(s, **BUSY[name])
        rows, text = _in_ranges(s, query, "jsonl")
        plain_sql = query.sql(query.json_objects()).replace(" INDEXED BY labels_answered", "")
        plain = [line for (line,) in s.db.conn.execute(plain_sql, query.params)]
        assert rows == len(plain) > 0
        assert text == "".join(line + "\n" for line in plain)
        assert _in_ranges(s, query, "csv") == _counted(s, query, "csv")


def test_a_range_over_sqlites_longest_text_is_read_row_by_row(odd_db, monkeypatch) -> None:
    """A range is one text of SQLite's, whose length has a limit (1 GB): rows of 200 KB, or
    many rows of one key, can pass it where each row is under it. Here the limit is 200 KB
    and 30 rows of 30 KB share one key: the range is read again one row at a time."""
    limit = 200_000
    with Store(odd_db) as s:
        add = (
            "INSERT INTO actions (id, session, seq, action_type, content) VALUES (?, ?, ?, 'm', ?)"
        )
        for k in range(30):
            s.db.conn.execute(add, (f"big{k:02d}", "s1", 5, f"{k} " + "x" * 30_000))
    real_connect = sqlite3.connect

    def limited(*args, **kwargs):
        conn = real_connect(*args, **kwargs)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, limit)
        return conn

    monkeypatch.setattr(sqlite3, "connect", limited)
    with Store(odd_db) as s:
        query = export.build(s, "actions")
        rows, text = _in_ranges(s, query, "jsonl")
        assert (rows, text) == _counted(s, query, "jsonl") and rows > 30
        assert max(map(len, text.splitlines())) < limit < len(text)


@pytest.mark.parametrize(
    ("column", "text"), [("elapsed_s", "nan"), ("elapsed_s", "inf"), ("seq", "0x10")]
)
def test_text_in_a_number_column_stops_parquet_naming_the_column(
    odd_db, tmp_path, column, text
) -> None:
    """SQLite keeps a text it cannot read as a number in a number column; Arrow would read
    these as numbers. JSON lines keep the text; Parquet stops with the column and the text,
    and leaves no file."""
    out = tmp_path / "actions.parquet"
    with Store(odd_db) as s:
        s.db.conn.execute(f"UPDATE actions SET {column} = ? WHERE id = 'a03'", (text,))
        query = export.build(s, "actions")
        line = next(x for x in _one_cursor(s, query, "jsonl").splitlines() if '"a03"' in x)
        assert json.loads(line)[column] == text
        with pytest.raises(UsageError) as raised:
            export.write(s, query, "parquet", out)
    assert str(raised.value) == (
        f"--format parquet: column {column} holds the text {text!r} among numbers, and a "
        "Parquet column has one type"
    )
    assert not list(tmp_path.glob("*.parquet*"))


@pytest.mark.parametrize(
    "texts",
    [
        ['a "quote"', "back\\slash", '{"a": "b\\\\"}', "", "null", '"', "\\", '\\"'],
        ["two\nlines", 'tab\t"q"', "C:\\new", "\\n", "é \x1b \U0001f600", "\x00"],
    ],
    ids=["quotes and backslashes: Arrow undoes them", "other escapes: undone first"],
)
def test_parquet_reads_every_escape_json_writes(texts, request, monkeypatch) -> None:
    """Lines whose only escapes are a quote's and a backslash's go to Arrow as they are;
    the others have their escapes undone first. Either way each text is read back whole."""
    from annotate.store.exports import Column, ExportQuery

    undone: list[str] = []
    real_unescaped = export._json_unescaped
    monkeypatch.setattr(export, "_json_unescaped", lambda t: undone.append(t) or real_unescaped(t))

    query = ExportQuery((Column("t", "t"), Column("n", "n", "int")), "", (), "")
    arrow = export._Arrow.load(query)
    with closing(sqlite3.connect(":memory:")) as conn:
        rows = [(t, k) for k, t in enumerate(texts)] + [(None, None)]
        arrays = "\n".join(
            conn.execute("SELECT json_array(?, ?)", row).fetchone()[0] for row in rows
        )
    table = arrow.table_of(arrays)
    assert bool(undone) == ("other" in request.node.callspec.id)
    assert table.column("t").to_pylist() == [*texts, None]
    assert table.column("n").to_pylist() == [*range(len(texts)), None]
