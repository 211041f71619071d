"""The queries behind `annotate export`: one SELECT per table, read row by row.

Each table is an :class:`ExportQuery`: its columns (name, SQL expression, kind), the FROM
and WHERE it reads, and its order. :mod:`annotate.io.export` asks SQLite for each row as one
piece of text (``json_object`` for JSON lines and Parquet, ``json_array`` for a CSV line),
so that a million rows cost a million strings, not ten million cells.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from annotate.coders import GOLD
from annotate.store.base import Database
from annotate.store.gold import GOLD_AS_LABELS, VIEW_COLUMNS, has_gold

if TYPE_CHECKING:
    from annotate.store.gold import Gold
    from annotate.store.samples import Samples

Kind = Literal["text", "int", "real"]
NOT_A_NUMBER = "!"
"""Put before a text held by a number column (:meth:`ExportQuery.json_values`)."""


@dataclass(frozen=True)
class Column:
    name: str
    expr: str
    kind: Kind = "text"
    """"text": the expression gives text or NULL (a TEXT column, or text built from one)"""
    nullable: bool = True
    json: bool = False
    """The text is JSON (a list, an object): JSON lines nest it as JSON, not as a string
    holding JSON; CSV and Parquet keep the text (a text that is not valid JSON stays a
    string everywhere)."""

    @property
    def json_expr(self) -> str:
        """The value as a JSON object's member takes it: nested when it is JSON."""
        if not self.json:
            return self.expr
        return f"CASE WHEN json_valid({self.expr}) THEN json({self.expr}) ELSE {self.expr} END"


@dataclass(frozen=True)
class ExportQuery:
    columns: tuple[Column, ...]
    source: str
    """``FROM ...`` with its joins"""
    where: tuple[str, ...]
    order_by: str
    params: tuple[Any, ...] = field(default=())
    key: tuple[str, ...] = ()
    """The columns of ``order_by`` that an index keeps in order (not always unique), for
    reading the table in ranges of that key side by side; () when it cannot be."""
    key_source: str = ""
    """``FROM ... INDEXED BY ...`` of the keys: the index alone, with ``key_where`` a
    superset of the table's rows (a range holds the rows whose key is in it)."""
    key_where: tuple[str, ...] = ()
    key_params: tuple[Any, ...] = field(default=())

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def sql(self, select: str, extra: Sequence[str] = ()) -> str:
        where = [*self.where, *extra]
        condition = f" WHERE {' AND '.join(where)}" if where else ""
        return f"SELECT {select} {self.source}{condition} ORDER BY {self.order_by}"

    def range_sql(self, select: str, lo: bool, hi: bool) -> str:
        """``select`` of the rows whose key is above the lower bound (``lo``: there is one)
        and at most the upper one (``hi``); the bounds' parameters follow the query's."""
        key = f"({', '.join(self.key)})"
        marks = f"({_marks(self.key)})"
        return self.sql(select, [f"{key} > {marks}"] * lo + [f"{key} <= {marks}"] * hi)

    def bound_sql(self, after: bool) -> str:
        """The key ``offset`` keys after a bound (``after``) or after the start: the next
        bound, read from the index alone. Parameters: the key parameters, the bound, the
        offset."""
        key = ", ".join(self.key)
        where = [*self.key_where, *[f"({key}) > ({_marks(self.key)})"] * after]
        condition = f" WHERE {' AND '.join(where)}" if where else ""
        return f"SELECT {key} {self.key_source}{condition} ORDER BY {key} LIMIT 1 OFFSET ?"

    def json_arrays(self) -> str:
        """Each row as a JSON array; a missing value is '' (an empty CSV cell), not null."""
        cells = (f"coalesce({c.expr}, '')" if c.nullable else c.expr for c in self.columns)
        return f"json_array({', '.join(cells)})"

    def json_values(self) -> str:
        """Each row as a JSON array; a missing value is null, and a text in a number
        column starts with :data:`NOT_A_NUMBER` (SQLite keeps a text such as ``nan`` or
        ``0x10`` that it cannot read as a number in such a column, and Arrow would read
        it as one)."""
        values = (
            c.expr
            if c.kind == "text"
            else f"CASE WHEN typeof({c.expr}) = 'text' THEN '{NOT_A_NUMBER}' || {c.expr} "
            f"ELSE {c.expr} END"
            for c in self.columns
        )
        return f"json_array({', '.join(values)})"

    def json_objects(self) -> str:
        """Each row as a JSON object keyed by the column names."""
        pairs = (f"'{c.name}', {c.json_expr}" for c in self.columns)
        return f"json_object({', '.join(pairs)})"

    def plain_sql(self) -> str:
        """One column per field (what the sqlite3 shell would export)."""
        return self.sql(", ".join(f"{c.expr} AS {c.name}" for c in self.columns))


# the action's own fields, in the order every table gives them
ACTION_EXPORT: tuple[tuple[str, Kind, bool], ...] = (
    ("id", "text", False),
    ("session", "text", False),
    ("seq", "int", False),
    ("participant", "text", True),
    ("role", "text", True),
    ("condition", "text", True),
    ("timestamp", "text", True),
    ("elapsed_s", "real", True),
    ("action_type", "text", False),
    ("content", "text", True),
)
LABEL_EXPORT: tuple[tuple[str, str, Kind], ...] = (
    ("action_id", "l.action_id", "text"),
    ("codebook", "l.codebook", "text"),
    ("codebook_hash", "l.codebook_hash", "text"),
    ("question", "l.question", "text"),
    ("coder", "l.coder", "text"),
    ("value", "l.value", "text"),
    ("number", "NULL", "real"),  # the value as a number, for number questions (_number_column)
    # stored as a JSON list; exported as "n1;n3"
    ("codes", "(SELECT group_concat(value, ';') FROM json_each(l.codes))", "text"),
    ("other_text", "l.other_text", "text"),
    ("note", "l.note", "text"),
    ("flagged", "l.flagged", "int"),
    ("skipped", "l.skipped", "int"),
    ("seconds", "l.seconds", "real"),
    ("source", "l.source", "text"),
    ("meta", "CASE WHEN l.meta IN ('{}', '') THEN NULL ELSE l.meta END", "text"),
    ("created_at", "l.created_at", "text"),
    ("updated_at", "l.updated_at", "text"),
)
JSON_COLUMNS = frozenset({"meta", "shot_ids", "answer", "raw_replies"})
"""Columns of the label and LLM tables that hold JSON (nested in JSON lines)."""
LLM_EXPORT: tuple[tuple[str, str, Kind], ...] = (
    ("run_id", "i.run_id", "int"),
    ("coder", "r.coder", "text"),
    ("model", "r.model", "text"),
    ("endpoint_host", "r.endpoint_host", "text"),
    ("codebook", "r.codebook", "text"),
    ("codebook_hash", "r.codebook_hash", "text"),
    ("prompt_hash", "r.prompt_hash", "text"),
    ("shot_ids", "r.shot_ids", "text"),
    ("temperature", "r.temperature", "real"),
    ("votes", "r.votes", "int"),
    ("phase", "i.phase", "text"),
    ("action_id", "i.action_id", "text"),
    ("valid", "i.valid", "int"),
    ("answer", "i.answer", "text"),
    ("error", "i.error", "text"),
    ("confidence", "i.confidence", "real"),
    ("raw_replies", "i.raw_replies", "text"),
    ("tokens_in", "i.tokens_in", "int"),
    ("tokens_out", "i.tokens_out", "int"),
    ("latency_s", "i.latency_s", "real"),
    ("cached", "i.cached", "int"),
    ("created_at", "i.created_at", "text"),
)


def _action_columns(alias: str, *, with_id: bool, joined: bool) -> list[Column]:
    """The action's fields read through ``alias``; ``joined``: a LEFT JOIN (all nullable)."""
    return [
        Column(name, f"{alias}.{name}", kind, nullable or joined)
        for name, kind, nullable in ACTION_EXPORT
        if with_id or name != "id"
    ]


ACTION_META = Column("meta", "CASE WHEN a.meta IN ('{}', '') THEN NULL ELSE a.meta END", json=True)
"""An action's ``meta`` (screenshot references, a generic import's extra columns), in the
actions table only: the label table's ``meta`` is the label's."""


def _with_split(columns: list[Column], split: str | None) -> list[Column]:
    """A ``split`` column (train/test of the session) after ``session``."""
    if not split:
        return columns
    at = next((k + 1 for k, c in enumerate(columns) if c.name == "session"), len(columns))
    return [*columns[:at], Column("split", "sp.part"), *columns[at:]]


def _split_join(split: str | None, session: str) -> tuple[str, tuple[Any, ...]]:
    if not split:
        return "", ()
    return (
        f" LEFT JOIN session_split_items sp ON sp.split = ? AND sp.session = {session}",
        (split,),
    )


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" * len(values))


def _literal(text: str) -> str:
    """``text`` as an SQL string literal (a column's expression holds no parameters)."""
    return "'" + text.replace("'", "''") + "'"


class Exports:
    def __init__(self, db: Database, gold: Gold, samples: Samples) -> None:
        self.db = db
        self.gold = gold
        self.samples = samples

    def export_actions_query(
        self, *, sample: str | None = None, split: str | None = None
    ) -> ExportQuery:
        """Every action in session order, or a sample's in the sample's order."""
        join, params = _split_join(split, "a.session")
        columns = tuple(
            _with_split([*_action_columns("a", with_id=True, joined=False), ACTION_META], split)
        )
        if sample:
            self.samples.sample_exists_or_fail(sample)
            return ExportQuery(
                columns,
                f"FROM sample_items s JOIN actions a ON a.id = s.action_id{join}",
                ("s.sample = ?",),
                "s.position",
                (*params, sample),
                key=("s.position",),
                key_source="FROM sample_items s",
                key_where=("s.sample = ?",),
                key_params=(sample,),
            )
        return ExportQuery(
            columns,
            f"FROM actions a{join}",
            (),
            "a.session, a.seq",
            params,
            key=("a.session", "a.seq"),
            key_source="FROM actions a INDEXED BY actions_session_seq",
        )

    def export_labels_query(
        self,
        *,
        codebook: str | None = None,
        coders: Sequence[str] | None = None,
        sample: str | None = None,
        split: str | None = None,
    ) -> ExportQuery:
        """Answered labels (an answer or codes), each with its action's fields, in the
        order of the index of answered labels (no sort, even of one coder's)."""
        join, params = _split_join(split, "a.session")
        answered = "(l.value IS NOT NULL OR l.codes IS NOT NULL)"
        gold_only = coders is not None and set(coders) == {GOLD}
        if gold_only:  # the gold table, in the order of its key (the coder is 'gold')
            coders = None
            labels, keys = f"({GOLD_AS_LABELS}) l", "gold l INDEXED BY gold_item"
            key_columns: tuple[str, ...] = ("l.codebook", "l.action_id", "l.question")
        elif has_gold(coders) and self.gold.rows_exist(codebook):
            # the coders' and the gold together, each through its own index, in one cursor
            # that SQLite sorts (spilling to a file beyond its cache): ranges cut in one
            # index would hold every gold row of a codebook without coders' labels
            labels = (
                f"(SELECT {', '.join(VIEW_COLUMNS)} FROM coder_labels "
                f"INDEXED BY labels_answered UNION ALL {GOLD_AS_LABELS}) l"
            )
            keys, key_columns = "", ()
        else:
            labels = keys = "coder_labels l INDEXED BY labels_answered"
            key_columns = ("l.codebook", "l.action_id", "l.question", "l.coder")
        where = [answered]
        params += self._filters("l", "l", codebook, coders, sample, where)
        keyed = [] if gold_only else [answered]
        key_params = self._filters("l", "l", codebook, coders, None, keyed)
        number = self._number_column("l")
        columns = [
            number if n == "number" else Column(n, e, k, json=n in JSON_COLUMNS)
            for n, e, k in LABEL_EXPORT
        ]
        columns += _action_columns("a", with_id=False, joined=True)
        return ExportQuery(
            tuple(_with_split(columns, split)),
            f"FROM {labels} LEFT JOIN actions a ON a.id = l.action_id{join}",
            tuple(where),
            "l.codebook, l.action_id, l.question, l.coder",
            params,
            # a key after an equal column: SQLite searches a row value in an index only
            # from its first column or one after the equal ones
            key=key_columns[1 if codebook else 0 :] if key_columns else (),
            key_source=f"FROM {keys}" if keys else "",
            key_where=tuple(keyed),
            key_params=key_params,
        )

    def _number_column(self, alias: str) -> Column:
        """``number``: the answer of a number question (``kind: number`` in the version of
        the codebook it was given under) as a real number, so that CSV writes it bare and
        JSON lines and Parquet as a number; empty for every other question."""
        pairs = sorted(self._number_questions())
        if not pairs:
            return Column("number", "NULL", "real")
        values = ", ".join(f"({_literal(c)}, {_literal(h)}, {_literal(q)})" for c, h, q in pairs)
        return Column(
            "number",
            f"CASE WHEN ({alias}.codebook, {alias}.codebook_hash, {alias}.question) "
            f"IN (VALUES {values}) THEN CAST({alias}.value AS REAL) END",
            "real",
        )

    def _number_questions(self) -> set[tuple[str, str, str]]:
        """(codebook, version hash, question) of every number question of the stored
        codebook versions (a few; each read once)."""
        found: set[tuple[str, str, str]] = set()
        rows = self.db.conn.execute(
            "SELECT name, version_hash, text, other_by_default FROM codebooks"
        ).fetchall()
        for name, version, text, other_by_default in rows:
            if "number" not in text:  # no question of this version can be one
                continue
            # the codebook model (pydantic, 0.1 s) only for a version that may have one
            from annotate.codebook import parse_codebook

            book = parse_codebook(text, f"{name}.yaml (stored)", other_by_default=other_by_default)
            found |= {(name, version, q.id) for q in book.questions if q.kind == "number"}
        return found

    def has_labels_of(self, codebook: str) -> bool:
        """One index lookup (the export's check of --codebook, which needs no list of every
        codebook unless it fails)."""
        sql = "SELECT EXISTS (SELECT 1 FROM coder_labels WHERE codebook = ?)"
        found = self.db.conn.execute(sql, (codebook,)).fetchone()[0]
        return bool(found) or self.gold.rows_exist(codebook)

    def _filters(
        self,
        coded: str,
        item: str,
        codebook: str | None,
        coders: Sequence[str] | None,
        sample: str | None,
        where: list[str],
    ) -> tuple[Any, ...]:
        """Adds the --codebook, --coders and --sample conditions to ``where`` (``coded``: the
        alias with codebook and coder, ``item``: the one with action_id); returns their
        parameters."""
        params: tuple[Any, ...] = ()
        if codebook:
            where.append(f"{coded}.codebook = ?")
            params += (codebook,)
        if coders:
            where.append(f"{coded}.coder IN ({_marks(coders)})")
            params += tuple(coders)
        if sample:
            self.samples.sample_exists_or_fail(sample)
            # a lookup a row, not a list: a range of the key's index drives the reading
            where.append(
                "EXISTS (SELECT 1 FROM sample_items si WHERE si.sample = ? "
                f"AND si.action_id = {item}.action_id)"
            )
            params += (sample,)
        return params

    def export_llm_query(
        self,
        *,
        codebook: str | None = None,
        coders: Sequence[str] | None = None,
        sample: str | None = None,
        split: str | None = None,
    ) -> ExportQuery:
        """Every item an LLM run coded, with the run's provenance and the action's fields.

        A run that took an item's replies from the cache of an earlier run's requests did
        not label it again: that copy is left out, and the earlier run's row stands for it.
        """
        join, params = _split_join(split, "a.session")
        where = [
            "NOT (i.cached AND EXISTS (SELECT 1 FROM llm_items e WHERE "
            "e.action_id = i.action_id AND e.request_hashes = i.request_hashes "
            "AND e.run_id < i.run_id))"
        ]
        params += self._filters("r", "i", codebook, coders, sample, where)
        columns = [Column(n, e, k, json=n in JSON_COLUMNS) for n, e, k in LLM_EXPORT]
        columns += _action_columns("a", with_id=False, joined=True)
        return ExportQuery(
            tuple(_with_split(columns, split)),
            "FROM llm_items i JOIN llm_runs r ON r.id = i.run_id "
            f"LEFT JOIN actions a ON a.id = i.action_id{join}",
            tuple(where),
            "i.run_id, i.phase, i.action_id",
            params,
            key=("i.run_id", "i.phase", "i.action_id"),
            key_source="FROM llm_items i INDEXED BY llm_items_run_phase_action",
        )

    def export_rows(self, query: ExportQuery, select: str) -> sqlite3.Cursor:
        """A cursor over ``select`` (one expression per row) of ``query``, rows as tuples."""
        cursor = self.db.conn.cursor()
        cursor.row_factory = None
        return cursor.execute(query.sql(select), query.params)

    def export_bounds(self, query: ExportQuery, every: int) -> Iterator[tuple[Any, ...]]:
        """Keys of ``query`` ``every`` keys apart, in order, read from the key's index
        alone (a few milliseconds a bound): the bounds of ranges of about ``every`` rows
        (fewer where the rows are a subset of the index). Fails at once when the index is
        missing (an import that defers the indexes of actions is running)."""
        if not query.key:
            raise ValueError("this table has no key to read in ranges")
        cursor = self.db.conn.cursor()
        cursor.row_factory = None
        after: tuple[Any, ...] | None = None
        while True:
            sql = query.bound_sql(after is not None)
            row = cursor.execute(sql, (*query.key_params, *(after or ()), every - 1)).fetchone()
            if row is None:
                return
            yield row
            after = row

    @staticmethod
    def export_range(
        conn: sqlite3.Connection,
        query: ExportQuery,
        select: str,
        lo: tuple[Any, ...] | None,
        hi: tuple[Any, ...] | None,
    ) -> tuple[int, str]:
        """(count, text) of the rows of ``select`` (one text per row) whose key is above
        ``lo`` and at most ``hi`` (None: no bound), read on ``conn`` (a reader of
        :meth:`snapshot_readers`): the rows' texts in order with a newline between, made
        by SQLite in one step, so the thread that asked holds no lock of Python's while
        the range is read (a step a row would take and give it back for each)."""
        inner = query.range_sql(f"{select} AS line", lo is not None, hi is not None)
        # the ORDER BY of a subquery under group_concat is kept (SQLite omits one only
        # under no aggregate or count, min, max)
        sql = f"SELECT count(*), coalesce(group_concat(line, char(10)), '') FROM ({inner})"
        params = (*query.params, *(lo or ()), *(hi or ()))
        try:
            count, text = conn.execute(sql, params).fetchone()
        except sqlite3.DataError as exc:
            if "too big" not in str(exc):
                raise
            # over SQLite's longest text (1 GB: rows of 200 KB, or many rows of one key):
            # the rows one by one, joined here
            cursor = conn.cursor()
            cursor.row_factory = None
            rows = cursor.execute(query.range_sql(select, lo is not None, hi is not None), params)
            lines = [line for (line,) in rows]
            return len(lines), "\n".join(lines)
        return count, text
