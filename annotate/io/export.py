"""`annotate export`: a table streamed to CSV, JSON lines or Parquet.

Nothing holds the table: it is read in ranges of its key (the order its index keeps) of
:data:`ROWS_PER_CHUNK` rows, :data:`READERS` at a time on connections of one snapshot, and
SQLite makes each range into one text (``json_array`` rows for CSV, ``json_object`` for
JSON lines and Parquet), so memory stays flat however many rows there are. Without its
key's index (an import that defers it is running) the table comes from one cursor.

CSV quotes every text cell and no number, so a text that looks like a number stays text
(``"007"``); an empty cell is a missing value. A real number is written with 15
significant digits, as SQLite prints it.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Generator
from contextlib import closing
from dataclasses import dataclass
from enum import StrEnum
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotate.errors import NotFoundError, UsageError
from annotate.render.output import write_data
from annotate.store import Store
from annotate.store.exports import NOT_A_NUMBER, ExportQuery

if TYPE_CHECKING:
    from concurrent.futures import Future

    import pyarrow as pa

ROWS_PER_CHUNK = 5_000
"""Rows a range (or a batch) holds: the unit read, made into text or a Parquet row group,
and written; small enough that two readers share even a table of 40,000 rows."""
BATCHES_AHEAD = 2
"""Batches read ahead of the one being written (memory: a few batches)."""
READERS = 2
"""Connections reading ranges of a table side by side (:func:`_in_ranges`). Two: the
machine of the benchmark has two cores, and each reader adds its ranges' memory (four put
a Parquet export of 92,000 rows at 218 MB against 171)."""


class ExportWhat(StrEnum):
    actions = "actions"
    labels = "labels"
    gold = "gold"
    llm = "llm"


class ExportFormat(StrEnum):
    csv = "csv"
    jsonl = "jsonl"
    parquet = "parquet"


def _check_filters(store: Store, codebook: str | None, coders: list[str] | None) -> None:
    """An unknown codebook or coder would give an empty table that looks like a result."""
    if codebook and not store.exports.has_labels_of(codebook):
        books = store.labels.labelled_codebooks()
        raise NotFoundError(
            f"--codebook: no labels of codebook '{codebook}' in this file",
            hint="codebooks with labels: " + (", ".join(books) or "none yet"),
        )
    if coders:
        known = store.labels.coders(codebook or None)
        unknown = [c for c in coders if c not in known]
        if unknown:
            raise NotFoundError(
                f"--coders: no labels by {', '.join(map(repr, unknown))}"
                + (f" in codebook '{codebook}'" if codebook else ""),
                hint="coders: " + (", ".join(known) or "none yet"),
            )


def build(
    store: Store,
    what: ExportWhat,
    *,
    codebook: str | None = None,
    coders: list[str] | None = None,
    sample: str | None = None,
    split: str | None = None,
) -> ExportQuery:
    """The query of the table to export; ``split=NAME`` adds a ``split`` column (train/test,
    by session) after ``session``."""
    what = ExportWhat(what)
    if split:
        store.analysis.session_split(split)  # NotFoundError naming the splits there are
    if what is ExportWhat.actions:
        return store.exports.export_actions_query(sample=sample, split=split)
    _check_filters(store, codebook, coders)
    if what is ExportWhat.llm:
        return store.exports.export_llm_query(
            codebook=codebook, coders=coders, sample=sample, split=split
        )
    if what is ExportWhat.gold:
        coders = ["gold"]
    return store.exports.export_labels_query(
        codebook=codebook, coders=coders, sample=sample, split=split
    )


# -- CSV from JSON arrays -----------------------------------------------------------------
#
# SQLite writes each row as a JSON array in which every text is in double quotes and no
# number is. Without its brackets, a row is already a CSV line that quotes every text, but
# for JSON's escapes: each becomes the character itself, except an escaped quote, which CSV
# doubles. A newline inside a text is escaped in JSON, so the rows of a batch joined by
# newlines are its lines. (json_array keeps a text whole where printf would cut it at a NUL
# character, and builds a row faster.)
#
# Inside a text cell of that CSV a quote is always one of a pair, so a quote that follows
# the start of a line or a comma and is followed by a formula's first character opens a
# text cell that starts a formula.
#
# Kept, though `csv` and Arrow's record batches have the mechanism (issue 32), because each
# makes the rows into Python objects a cell at a time while holding the GIL, where SQLite
# makes a range's text and Arrow's CSV reader parses it without it, two ranges side by
# side. 1M actions, 2026-11-27 (load 4.5-7 on 2 cores; CPU seconds of the process):
# csv.writer over the cursor's tuples 9.1 / 11.5 s against 4.5 / 4.9 s for this CSV;
# pyarrow arrays from the tuples, written batch by batch, 8.8 / 9.5 s against 6.9 / 7.9 s
# for this Parquet (+27%, and 40% more wall time). The bar was 5%.

JSON_ESCAPE = re.compile(r'\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))')
UNESCAPED = {'"': '""', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
OTHER_ESCAPE = re.compile(r"\\[nrtbfu/]")
"""An escape other than a quote's or a backslash's (or an escaped backslash before one of
these letters: a text that goes the longer way, undone in Python)."""
FORMULA_CELL = re.compile('"[=+@\t\r-]')
"""A quote followed by a formula's first character: the start of a cell to defuse when
the line starts there or a comma comes before it."""
PAIRED_BACKSLASH = "\x00"
"""Stands for an escaped backslash while the other escapes are undone: json_array escapes
every control character, so its text never holds this one."""


def _unescaped(match: re.Match[str]) -> str:
    code = match.group(1)
    return chr(int(code, 16)) if code else UNESCAPED[match.group(2)]


def _json_unescaped(text: str) -> str:
    """``text`` (a JSON array's insides) with each JSON escape undone, an escaped quote
    doubled as CSV does: a ``replace`` per kind of escape the text holds.
    (A search for one character is far cheaper than one for two: each step first asks
    whether a backslash is left.)"""
    if "\\" not in text:
        return text
    # most often every escape is a quote's (a JSON text in a cell)
    quoted = text.replace('\\"', '""')
    if "\\" not in quoted:
        return quoted
    # with the escaped backslashes set aside, each backslash left starts an escape
    paired = text.replace("\\\\", PAIRED_BACKSLASH).replace('\\"', '""')
    if "\\" in paired:
        if "\\u" in paired:  # a control character: rare enough for the general route
            return JSON_ESCAPE.sub(_unescaped, text)
        for letter in "/bfnrt":
            paired = paired.replace("\\" + letter, UNESCAPED[letter])
    return paired.replace(PAIRED_BACKSLASH, "\\")


def _defused(text: str) -> str:
    """``'`` after the opening quote of each text cell of ``text`` (whole CSV lines) that
    starts a formula."""
    if FORMULA_CELL.search(text) is None:
        return text

    def defuse(match: re.Match[str]) -> str:
        at = match.start()
        opens_cell = at == 0 or text[at - 1] in ",\n"
        return "\"'" + match.group()[1] if opens_cell else match.group()

    return FORMULA_CELL.sub(defuse, text)


def _batches(
    store: Store, query: ExportQuery, select: str, size: int | None = None
) -> Generator[list[tuple[str]]]:
    """The rows of ``select`` (one text per row) in batches, as the cursor gives them."""
    cursor = store.exports.export_rows(query, select)
    try:
        while rows := cursor.fetchmany(size or ROWS_PER_CHUNK):
            yield rows
    finally:
        cursor.close()


def _text_format(
    query: ExportQuery, fmt: ExportFormat, safe_csv: bool
) -> tuple[str, str, Callable[[str], str]]:
    """(the header, the expression SQLite makes each row with, the text of a range's rows
    as :meth:`~annotate.store.exports.Exports.export_range` gives them, or of a batch's
    :func:`_joined`) of the CSV or JSON-lines text of the table."""
    if ExportFormat(fmt) is ExportFormat.csv:
        header = ",".join(query.names) + "\n"
        return header, query.json_arrays(), lambda text: _csv_of_range(text, safe_csv)
    return "", query.json_objects(), _lines_of_range


def _csv_of_range(arrays: str, safe: bool) -> str:
    """The CSV lines of a range's JSON arrays (a newline between two): a newline outside
    a JSON text is always between rows (inside one it is escaped), so ``]\n[`` is where
    a row ends and the next begins."""
    text = _json_unescaped(_lines_of(arrays))
    return _defused(text) if safe else text


def _lines_of(arrays: str) -> str:
    """A range's JSON arrays as lines without their brackets (escapes kept)."""
    return arrays[1:-1].replace("]\n[", "\n") + "\n" if arrays else ""


def _joined(rows: list[tuple[str]]) -> str:
    """A batch's rows as a range's text (a newline between two)."""
    return "\n".join(row[0] for row in rows)


INFINITE_VALUE = re.compile(r'(?<!\\)":(-?)Inf(?=[,}])')
"""An infinite number as SQLite before 3.45 writes it in a JSON object (``"x":Inf``): not
JSON, so ``json.loads`` and pandas stop at that line. Only a value can follow ``":``
unescaped (inside a text a quote is escaped)."""


def _lines_of_range(lines: str) -> str:
    """A range's JSON objects as JSON lines; an infinite number is written ``9e999`` (a
    JSON number that reads back as infinite)."""
    if '":Inf' in lines or '":-Inf' in lines:
        lines = INFINITE_VALUE.sub(r'":\g<1>9e999', lines)
    return lines + "\n" if lines else ""


def _beside(batches: Generator[list[Any]], consume: Callable[[list[Any]], object]) -> int:
    """``consume`` each batch in a thread of its own, in order, while the next batch is
    read here; return the number of rows. SQLite makes rows without holding the GIL, so
    reading and writing take a core each (the connection stays in this thread). At most
    :data:`BATCHES_AHEAD` batches wait; an error on either side stops both, and nothing
    is consumed after it."""
    import threading
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    failed = threading.Event()

    def consume_unless_failed(batch: list[Any]) -> None:
        if failed.is_set():  # a batch sent before the failure was known here
            return
        try:
            consume(batch)
        except BaseException:
            failed.set()
            raise

    rows = 0
    waiting: deque[Future[None]] = deque()
    with ThreadPoolExecutor(1, thread_name_prefix="export") as pool, closing(batches):
        try:
            for batch in batches:
                while len(waiting) >= BATCHES_AHEAD:
                    waiting.popleft().result()
                waiting.append(pool.submit(consume_unless_failed, batch))
                rows += len(batch)
            while waiting:
                waiting.popleft().result()
        finally:
            for future in waiting:
                future.cancel()
    return rows


def _in_ranges(
    store: Store,
    query: ExportQuery,
    select: str,
    size: int,
    make: Callable[[str], Any],
    sink: Callable[[Any], object],
) -> int | None:
    """Read the table in ranges of its key of about ``size`` rows, :data:`READERS` at a
    time on connections of one snapshot, each in a thread that also ``make``s the
    range's text (its rows' texts, a newline between) into what ``sink`` takes; ``sink``
    each here, in key order. Return the number of rows, or None when the table cannot be
    read so (its key's index is missing, or the file was written to all the while) and
    nothing was sent.

    SQLite makes a range's text in one step, without holding the GIL, so on two cores the
    reading of a table (most of an export's time) takes half as long; the sqlite3 shell
    reads on one. At most ``READERS + BATCHES_AHEAD`` ranges are held; an error on
    either side stops both, and nothing is sent after it."""
    if not query.key:
        return None
    bounds = store.exports.export_bounds(query, size)
    try:
        first = next(bounds, None)
    except sqlite3.OperationalError as exc:
        if "no such index" in str(exc):  # an import that defers them is running
            return None
        raise
    with store.db.snapshot_readers(READERS) as readers:
        if not readers:
            return None
        import queue
        from collections import deque
        from concurrent.futures import ThreadPoolExecutor

        idle: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        for conn in readers:
            idle.put(conn)

        def read(lo: tuple[Any, ...] | None, hi: tuple[Any, ...] | None) -> tuple[int, Any]:
            conn = idle.get()
            try:
                count, text = store.exports.export_range(conn, query, select, lo, hi)
            finally:
                idle.put(conn)
            return count, make(text)

        count = 0
        waiting: deque[Future[tuple[int, Any]]] = deque()
        with ThreadPoolExecutor(READERS, thread_name_prefix="export") as pool:
            try:
                lo: tuple[Any, ...] | None = None
                highs = () if first is None else chain((first,), bounds)
                for hi in chain(highs, (None,)):
                    while len(waiting) >= READERS + BATCHES_AHEAD:
                        count += _sent_in_order(waiting.popleft(), sink)
                    waiting.append(pool.submit(read, lo, hi))
                    lo = hi
                while waiting:
                    count += _sent_in_order(waiting.popleft(), sink)
            finally:
                for future in waiting:
                    future.cancel()
        return count


def _sent_in_order(future: Future[tuple[int, Any]], sink: Callable[[Any], object]) -> int:
    rows, made = future.result()
    sink(made)
    return rows


# -- Parquet --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Arrow:
    """What writing Parquet needs of Arrow: the table's schema, a CSV reader set to read
    JSON arrays made into CSV lines against it, and the writer's module."""

    pa: Any
    pq: Any
    pa_csv: Any
    schema: pa.Schema
    read: Any
    parse: Any
    parse_escaped: Any
    """For lines whose only escapes are ``\\"`` and ``\\\\`` (a JSON text in a cell): Arrow's
    reader undoes them itself, without the GIL."""
    convert: Any

    @classmethod
    def load(cls, query: ExportQuery) -> _Arrow:
        import pyarrow as pa
        import pyarrow.csv as pa_csv
        import pyarrow.parquet as pq

        # malloc's pool: Arrow's default (mimalloc) keeps what each reading thread freed,
        # 240 MB at the peak of a table of 41,000 rows against 150
        pa.set_memory_pool(pa.system_memory_pool())
        types = {"text": pa.string(), "int": pa.int64(), "real": pa.float64()}
        schema = pa.schema([pa.field(c.name, types[c.kind]) for c in query.columns])
        return cls(
            pa,
            pq,
            pa_csv,
            schema,
            # one thread, one block per range: threads only add memory on a range this small
            pa_csv.ReadOptions(column_names=schema.names, use_threads=False, block_size=1 << 30),
            pa_csv.ParseOptions(newlines_in_values=True),
            pa_csv.ParseOptions(newlines_in_values=True, escape_char="\\", double_quote=False),
            # JSON's bare null is a missing value; a text "null" is quoted, so it stays text
            pa_csv.ConvertOptions(
                column_types=schema,
                null_values=["null"],
                strings_can_be_null=True,
                quoted_strings_can_be_null=False,
            ),
        )

    def table_of(self, arrays: str) -> pa.Table:
        """The table of a range's JSON arrays (:meth:`ExportQuery.json_values`), read as
        CSV lines by Arrow's CSV reader: twice as fast as its JSON reader reads the same
        rows as objects. JSON's escapes of a quote and a backslash are Arrow's to undo;
        any other (rarer) escape is undone here first."""
        if not arrays:  # a range of the index holding none of the table's rows
            return self.schema.empty_table()
        lines = _lines_of(arrays)
        parse = self.parse
        if "\\" in lines:
            if OTHER_ESCAPE.search(lines) is None:
                parse = self.parse_escaped
            else:
                lines = _json_unescaped(lines)
        data = lines.encode("utf-8", "surrogatepass")
        try:
            return self.pa_csv.read_csv(
                self.pa.BufferReader(data),
                read_options=self.read,
                parse_options=parse,
                convert_options=self.convert,
            )
        except self.pa.ArrowInvalid as exc:
            raise self.not_a_number(str(exc)) from None

    def not_a_number(self, arrow_says: str) -> UsageError:
        """The one-line error for a text in a number column (Parquet keeps one type a
        column), from Arrow's ``In CSV column #N: ... invalid value 'X'``."""
        found = re.search(r"column #(\d+).*invalid value '(.*)'", arrow_says)
        if found is None:
            return UsageError(f"--format parquet: {arrow_says}")
        name = self.schema.names[int(found.group(1))]
        value = found.group(2).removeprefix(NOT_A_NUMBER)
        return UsageError(
            f"--format parquet: column {name} holds the text {value!r} among numbers, and a "
            "Parquet column has one type",
            hint="export this table as --format csv or jsonl, which keep it as it is",
        )


def _write_parquet(store: Store, query: ExportQuery, path: Path) -> int:
    """Each range is read by Arrow and written as a row group. Arrow is
    imported in a thread of its own while the first ranges are read: it costs 0.1 s, as
    long as the sqlite3 shell's whole export of 40,000 rows takes."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1, thread_name_prefix="import") as loader:
        loading = loader.submit(_Arrow.load, query)
        writer = None
        try:

            def write_table(table: pa.Table) -> None:
                nonlocal writer
                if writer is None:
                    writer = loading.result().pq.ParquetWriter(path, table.schema)
                if table.num_rows:
                    writer.write_table(table)

            def table_of(lines: str) -> pa.Table:
                return loading.result().table_of(lines)

            select = query.json_values()
            # half a text range: a range's text, its lines and its table are held at once
            # (2,500 rows: the gold's peak at 144-152 MB against 181-187, the same time)
            size = max(1, ROWS_PER_CHUNK // 2)
            rows = _in_ranges(store, query, select, size, table_of, write_table)
            if rows is None:
                batches = _batches(store, query, select, size)
                rows = _beside(batches, lambda rows: write_table(table_of(_joined(rows))))
            if writer is None:  # an empty table: its schema alone
                write_table(loading.result().schema.empty_table())
        finally:
            if writer is not None:
                writer.close()
    return rows


# -- writing ----------------------------------------------------------------------------------


def write(
    store: Store,
    query: ExportQuery,
    fmt: ExportFormat,
    out: Path | None,
    *,
    safe_csv: bool = True,
) -> int:
    """Write the table to ``out``, or to standard output through the one writer (a failed
    write is an error, exit 1; in a file or pipe every byte of the content is kept, escape
    sequences included; on a terminal they are shown escaped). Return the number of rows.

    The file is written beside ``out`` and renamed into place, so a failed export never
    leaves a half-written file where an earlier one was."""
    fmt = ExportFormat(fmt)
    if fmt is ExportFormat.parquet and out is None:
        raise UsageError("--format parquet needs --out FILE")
    if out is None:
        return _send(store, query, fmt, safe_csv, write_data)
    partial = out.with_name(f".{out.name}.partial")
    try:
        if fmt is ExportFormat.parquet:
            rows = _write_parquet(store, query, partial)
        else:
            # bytes: a text file's writer costs three times the encoding itself
            with partial.open("wb") as f:
                rows = _send(store, query, fmt, safe_csv, lambda t: f.write(t.encode("utf-8")))
        partial.replace(out)
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot write ({exc.strerror or exc})") from None
    finally:
        partial.unlink(missing_ok=True)  # gone after the rename; a failed write's leftovers
    return rows


def _send(
    store: Store, query: ExportQuery, fmt: ExportFormat, safe_csv: bool, sink: Callable[[str], Any]
) -> int:
    """Send the table's text to ``sink`` range by range (read and made side by side:
    :func:`_in_ranges`), or batch by batch from one cursor (made beside the reading:
    :func:`_beside`); a failed write stops the reading at once, while the file is open."""
    header, select, text_of = _text_format(query, fmt, safe_csv)
    if header:
        sink(header)
    rows = _in_ranges(store, query, select, ROWS_PER_CHUNK, text_of, sink)
    if rows is None:
        batches = _batches(store, query, select)
        rows = _beside(batches, lambda batch: sink(text_of(_joined(batch))))
    return rows


def check_out(out: Path | None) -> None:
    """Fail before any work when ``--out`` cannot be written."""
    if out is not None and not out.parent.is_dir():
        raise UsageError(f"--out {out}: folder {out.parent} does not exist")
    if out is not None and out.is_dir():
        raise UsageError(f"--out {out}: is a folder; give a file name")
