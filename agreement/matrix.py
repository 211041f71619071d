"""Item x coder label matrices, built from long-form or wide ratings, and count tables.

Every statistic in :mod:`agreement` takes a :class:`LabelMatrix` (or anything
:func:`as_label_matrix` accepts). Two input shapes are supported:

- long form: a DataFrame with one row per rating and columns ``item``, ``coder``,
  ``value`` (:func:`from_long`);
- wide form: an items x coders 2-D array or DataFrame (:func:`from_wide`; a DataFrame's
  columns name the coders and its index the items).

Missing ratings are ``None``, ``np.nan`` or ``pd.NA``. Any non-blank string is a label,
including the string ``"nan"``; a blank or whitespace-only string is refused (as the CLI
refuses it), because it is neither a missing rating nor a code. Labels are compared by
their text in Unicode normal form NFC, so the two encodings of "café" are one label, and
``1``, ``1.0`` and ``"1"`` are the same label ``"1"``. Multi-select answers (sets of codes)
use :class:`SetLabelMatrix` (:func:`sets_from_long`, :func:`sets_from_wide`).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from agreement._core import MISSING, ratings_per_item
from agreement.results import ConfusionMatrix

LONG_COLUMNS = ("item", "coder", "value")

__all__ = [
    "MISSING",
    "LabelMatrix",
    "SetLabelMatrix",
    "as_label_matrix",
    "as_set_matrix",
    "confusion_matrix",
    "count_table",
    "from_long",
    "from_wide",
    "sets_from_long",
    "sets_from_wide",
]


@functools.lru_cache(maxsize=4096)
def _natural_key(text: str) -> tuple:
    parts = re.split(r"(\d+)", text)
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts)


@functools.lru_cache(maxsize=64)
def _code_dtype(n_values: int) -> np.dtype:
    for dtype in (np.int8, np.int16, np.int32):
        if n_values < np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.int64)


def _is_missing(value: Any) -> bool:
    if value is None or value is pd.NA:
        return True
    return isinstance(value, (float, np.floating)) and bool(np.isnan(value))


def _python(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def label_name(value: Any) -> str:
    """The text of a label: strings in Unicode NFC, integral numbers without a decimal part.

    Raises
    ------
    ValueError
        If ``value`` is a blank or whitespace-only string, or neither a string nor a number
        (e.g. a set of codes).
    """
    if isinstance(value, str):
        if not value.strip():
            raise ValueError(
                f"A label is blank ({str(value)!r}): give every rating a code, or None for no "
                "rating."
            )
        return unicodedata.normalize("NFC", str(value))
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        number = float(value)
        return str(int(number)) if number.is_integer() else repr(number)
    raise ValueError(
        f"Labels must be strings or numbers; got {type(value).__name__} {value!r}. "
        "For multi-select answers (sets of codes) use sets_from_long or sets_from_wide."
    )


def _check_categories(categories: Iterable[Any] | None) -> tuple[str, ...] | None:
    return None if categories is None else _category_names(categories)


def _category_names(categories: Iterable[Any]) -> tuple[str, ...]:
    if isinstance(categories, str):
        raise ValueError(
            f"categories must be a list of labels, not the single string {categories!r}."
        )
    names = tuple(label_name(c) for c in categories)
    if not names:
        raise ValueError("categories must list at least one label.")
    seen: set[str] = set()
    duplicates = sorted({n for n in names if n in seen or seen.add(n)})
    if duplicates:
        raise ValueError(f"categories lists these labels more than once: {_quote(duplicates)}.")
    return names


def _quote(names: Iterable[Any], limit: int = 20) -> str:
    names = list(names)
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _resolve_categories(
    found: Iterable[str], categories: tuple[str, ...] | None
) -> tuple[str, ...]:
    found = set(found)
    if categories is None:
        return tuple(sorted(found, key=_natural_key))
    outside = sorted(found.difference(categories), key=_natural_key)
    if outside:
        raise ValueError(
            f"Labels outside the allowed categories: {_quote(outside)} "
            f"(allowed: {_quote(categories)})."
        )
    return categories


# Labels are factorized in pieces of at most this many cells: pandas sizes its hash table
# and int64 codes by the input, so pieces keep memory flat however many items there are.
_PIECE_CELLS = 1 << 16


def _factorize(piece: Any, compact: bool) -> tuple[np.ndarray, list[str]]:
    """pandas' codes of ``piece`` (-1 = missing) and the names of its distinct labels.

    ``compact`` narrows the codes to the smallest integer type, for pieces that are kept
    until all are done; a lone piece keeps pandas' intp codes, which index faster.
    """
    try:
        codes, uniques = pd.factorize(piece, use_na_sentinel=True)
    except TypeError as error:
        raise ValueError(
            "Labels must be strings or numbers; found an unhashable value "
            f"({error}). For multi-select answers use sets_from_long or sets_from_wide."
        ) from None
    names = [label_name(u) for u in uniques]
    return (codes.astype(_code_dtype(len(names)), copy=False) if compact else codes), names


def _encode_blocks(
    blocks: Sequence[Any], categories: tuple[str, ...] | None
) -> tuple[list[np.ndarray], tuple[str, ...]]:
    """Encode 1-D blocks of labels (arrays or Series) as category indices (MISSING = -1)."""
    factorized = []
    compact = len(blocks) > 1 or sum(len(block) for block in blocks) > _PIECE_CELLS
    for block in blocks:
        slicer = block.iloc if isinstance(block, pd.Series) else block
        pieces = [
            _factorize(slicer[start : start + _PIECE_CELLS], compact)
            for start in range(0, len(block), _PIECE_CELLS)
        ]
        factorized.append((len(block), pieces))
    found = {name for _, pieces in factorized for _, names in pieces for name in names}
    resolved = _resolve_categories(found, categories)
    position = {name: i for i, name in enumerate(resolved)}
    dtype = _code_dtype(len(resolved))
    out = []
    for length, pieces in factorized:
        codes = np.empty(length, dtype=dtype)
        start = 0
        for local, names in pieces:
            # Index -1 (missing) picks the trailing MISSING.
            lookup = np.array([position[n] for n in names] + [MISSING], dtype=dtype)
            codes[start : start + len(local)] = lookup.take(local)
            start += len(local)
        out.append(codes)
    return out, resolved


def _encode_columns(
    columns: Sequence[Any], n_rows: int, categories: tuple[str, ...] | None
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Encode label columns into an (n_rows, len(columns)) array of category indices."""
    encoded, resolved = _encode_blocks(columns, categories)
    out = np.empty((n_rows, len(columns)), dtype=_code_dtype(len(resolved)))
    for j, codes in enumerate(encoded):
        out[:, j] = codes
    return out, resolved


# Up to this many cells a 2-D array is factorized in one call (less overhead than one call
# per column).
_SINGLE_CALL_CELLS = _PIECE_CELLS


@dataclass(frozen=True, eq=False)
class LabelMatrix:
    """Nominal labels of every item (rows) by every coder (columns).

    Build one with :func:`from_long`, :func:`from_wide` or :func:`as_label_matrix`.

    Attributes
    ----------
    codes : ndarray of int, shape (n_items, n_coders)
        Index into ``categories`` of each rating, ``MISSING`` (-1) when the coder did not
        rate the item. Read-only.
    categories : tuple of str
        The category labels.
    coders : tuple of str
        Coder names, one per column.
    items : pandas.Index
        Item identifiers, one per row.
    """

    codes: np.ndarray
    categories: tuple[str, ...]
    coders: tuple[str, ...]
    items: pd.Index

    def __post_init__(self) -> None:
        codes = np.asarray(self.codes)
        if codes.ndim != 2 or codes.dtype.kind not in "iu":
            raise ValueError("LabelMatrix.codes must be a 2-D integer array.")
        if codes.shape[1] != len(self.coders):
            raise ValueError(
                f"LabelMatrix has {codes.shape[1]} columns but {len(self.coders)} coder names."
            )
        if codes.shape[0] != len(self.items):
            raise ValueError(
                f"LabelMatrix has {codes.shape[0]} rows but {len(self.items)} item ids."
            )
        if len(set(self.coders)) != len(self.coders):
            raise ValueError(f"Coder names must be unique; got {_quote(self.coders)}.")
        if codes.size and (codes.min() < MISSING or codes.max() >= len(self.categories)):
            raise ValueError("LabelMatrix.codes holds indices outside the category list.")
        view = codes.view()
        view.flags.writeable = False
        object.__setattr__(self, "codes", view)
        object.__setattr__(self, "categories", tuple(self.categories))
        object.__setattr__(self, "coders", tuple(self.coders))
        if not isinstance(self.items, pd.Index):
            object.__setattr__(self, "items", pd.Index(self.items))

    @property
    def n_items(self) -> int:
        """Number of items (rows)."""
        return int(self.codes.shape[0])

    @property
    def n_coders(self) -> int:
        """Number of coders (columns)."""
        return int(self.codes.shape[1])

    def ratings_per_item(self) -> np.ndarray:
        """Number of coders who rated each item."""
        return ratings_per_item(self.codes)

    def to_frame(self) -> pd.DataFrame:
        """Wide DataFrame of labels (items x coders), ``None`` where missing."""
        lookup = np.array([*self.categories, None], dtype=object)
        return pd.DataFrame(
            lookup[self.codes], index=self.items, columns=list(self.coders), dtype=object
        )

    def to_long(self) -> pd.DataFrame:
        """Long DataFrame with columns item, coder, value; missing ratings are left out."""
        rows, cols = np.nonzero(self.codes >= 0)
        return pd.DataFrame(
            {
                "item": self.items[rows],
                "coder": np.array(self.coders, dtype=object)[cols],
                "value": np.array(self.categories, dtype=object)[self.codes[rows, cols]],
            }
        )

    def select(self, coders: Sequence[str]) -> LabelMatrix:
        """Keep only the named coders, in the order given.

        Raises
        ------
        ValueError
            If a name is not a coder of this matrix, or is given twice.
        """
        coders = [str(c) for c in coders]
        unknown = [c for c in coders if c not in self.coders]
        if unknown:
            raise ValueError(f"Unknown coders {_quote(unknown)}; known: {_quote(self.coders)}.")
        if len(set(coders)) != len(coders):
            raise ValueError(f"Each coder may be selected once; got {_quote(coders)}.")
        columns = [self.coders.index(c) for c in coders]
        return _trusted(self.codes[:, columns], self.categories, tuple(coders), self.items)

    def with_categories(self, categories: Iterable[Any]) -> LabelMatrix:
        """Re-index onto another category list (e.g. a codebook's allowed codes).

        Raises
        ------
        ValueError
            Naming every used label that ``categories`` does not contain.
        """
        checked = _category_names(categories)
        if checked == self.categories:
            return self
        used = np.unique(self.codes[self.codes >= 0])
        resolved = _resolve_categories((self.categories[i] for i in used), checked)
        position = {name: i for i, name in enumerate(resolved)}
        dtype = _code_dtype(len(resolved))
        lookup = np.array(
            [position.get(name, MISSING) for name in self.categories] + [MISSING], dtype=dtype
        )
        return _trusted(lookup[self.codes], resolved, self.coders, self.items)


def _trusted(
    codes: np.ndarray, categories: tuple[str, ...], coders: tuple[str, ...], items: pd.Index
) -> LabelMatrix:
    """A LabelMatrix from parts this module built and checked (skips re-validation)."""
    if len(set(coders)) != len(coders):
        raise ValueError(f"Coder names must be unique; got {_quote(coders)}.")
    if codes.shape != (len(items), len(coders)):
        return LabelMatrix(codes, categories, coders, items)  # raises with the reason
    matrix = object.__new__(LabelMatrix)
    view = codes.view()
    view.flags.writeable = False
    for name, value in (("codes", view), ("categories", categories), ("coders", coders),
                        ("items", items)):  # fmt: skip
        object.__setattr__(matrix, name, value)
    return matrix


def from_wide(
    table: Any,
    *,
    coders: Sequence[str] | None = None,
    items: Sequence[Hashable] | None = None,
    categories: Iterable[Any] | None = None,
) -> LabelMatrix:
    """Build a :class:`LabelMatrix` from an items x coders table.

    Parameters
    ----------
    table : 2-D array_like or pandas.DataFrame
        One row per item, one column per coder; ``None``/``np.nan``/``pd.NA`` are missing.
    coders : sequence of str, optional
        Coder names. Default: the DataFrame's column names, else ``"coder1"``, ``"coder2"``…
    items : sequence, optional
        Item ids. Default: the DataFrame's index, else ``0, 1, 2, …``.
    categories : iterable of str, optional
        Allowed labels, in reporting order. Default: the labels used, in natural order.

    Returns
    -------
    LabelMatrix

    Raises
    ------
    ValueError
        If the table is not 2-D, a label is not in ``categories``, or a cell holds a set.
    """
    checked = _check_categories(categories)
    if isinstance(table, LabelMatrix | SetLabelMatrix):
        raise ValueError("from_wide takes a table of labels, not an already built matrix.")
    if isinstance(table, pd.DataFrame):
        columns = [table.iloc[:, j] for j in range(table.shape[1])]
        codes, resolved = _encode_columns(columns, table.shape[0], checked)
        default_coders = [str(c) for c in table.columns]
        default_items = table.index
    else:
        array = table if isinstance(table, np.ndarray) else np.asarray(table, dtype=object)
        if array.ndim != 2:
            raise ValueError(
                f"A wide label table must be 2-D (items x coders); got {array.ndim} dimension(s)."
            )
        if array.size <= _SINGLE_CALL_CELLS:
            encoded, resolved = _encode_blocks([array.ravel()], checked)
            codes = encoded[0].reshape(array.shape)
        else:
            columns = [array[:, j] for j in range(array.shape[1])]
            codes, resolved = _encode_columns(columns, array.shape[0], checked)
        default_coders = [f"coder{j + 1}" for j in range(array.shape[1])]
        default_items = pd.RangeIndex(array.shape[0])
    coder_names = tuple(str(c) for c in (coders if coders is not None else default_coders))
    item_ids = pd.Index(items) if items is not None else default_items
    return _trusted(codes, resolved, coder_names, item_ids)


def _factorize_ids(values: pd.Series, what: str) -> tuple[np.ndarray, pd.Index]:
    if values.isna().any():
        rows = list(values.index[values.isna()][:5])
        raise ValueError(f"The {what} column has missing values (rows {_quote(rows)}).")
    try:
        codes, uniques = pd.factorize(values, sort=True)
    except TypeError:
        codes, uniques = pd.factorize(values, sort=False)
    return codes, pd.Index(uniques)


def _long_index(
    frame: pd.DataFrame, item: str, coder: str, value: str
) -> tuple[np.ndarray, pd.Index, np.ndarray, tuple[str, ...]]:
    if not isinstance(frame, pd.DataFrame):
        raise ValueError("Long-form ratings must be a pandas DataFrame.")
    absent = [c for c in (item, coder, value) if c not in frame.columns]
    if absent:
        raise ValueError(
            f"Long-form ratings need columns {item!r}, {coder!r} and {value!r}; "
            f"missing {_quote(absent)}."
        )
    item_codes, item_ids = _factorize_ids(frame[item], "item")
    coder_codes, coder_uniques = _factorize_ids(frame[coder], "coder")
    coder_names = tuple(str(c) for c in coder_uniques)
    if len(set(coder_names)) != len(coder_names):
        raise ValueError(f"Coder names collide once written as text: {_quote(coder_uniques)}.")
    key = pd.Series(item_codes.astype(np.int64) * max(len(coder_names), 1) + coder_codes)
    duplicated = key.duplicated(keep="first").to_numpy()
    if duplicated.any():
        rows = np.flatnonzero(duplicated)[:5]
        pairs = [(_python(item_ids[item_codes[r]]), coder_names[coder_codes[r]]) for r in rows]
        raise ValueError(
            f"{int(duplicated.sum())} rating(s) repeat an (item, coder) pair, e.g. "
            f"{_quote(pairs, 5)}; give each coder one rating per item."
        )
    return item_codes, item_ids, coder_codes, coder_names


def from_long(
    frame: pd.DataFrame,
    *,
    item: str = "item",
    coder: str = "coder",
    value: str = "value",
    categories: Iterable[Any] | None = None,
) -> LabelMatrix:
    """Build a :class:`LabelMatrix` from long-form ratings (one row per rating).

    Parameters
    ----------
    frame : pandas.DataFrame
        Ratings with an item id, a coder name and a label per row. A missing label
        (``None``/``np.nan``/``pd.NA``) counts as no rating.
    item, coder, value : str
        Column names.
    categories : iterable of str, optional
        Allowed labels, in reporting order. Default: the labels used, in natural order.

    Returns
    -------
    LabelMatrix
        Items and coders sorted (when sortable), items rated by nobody absent.

    Raises
    ------
    ValueError
        If a column is missing, an id is missing, a coder rated an item twice, or a label is
        not in ``categories``.
    """
    checked = _check_categories(categories)
    item_codes, item_ids, coder_codes, coder_names = _long_index(frame, item, coder, value)
    (values,), resolved = _encode_blocks([frame[value]], checked)
    codes = np.full((len(item_ids), len(coder_names)), MISSING, dtype=values.dtype)
    codes[item_codes, coder_codes] = values
    return _trusted(codes, resolved, coder_names, item_ids)


def as_label_matrix(data: Any, categories: Iterable[Any] | None = None) -> LabelMatrix:
    """Return ``data`` as a :class:`LabelMatrix`.

    Parameters
    ----------
    data : LabelMatrix, pandas.DataFrame or 2-D array_like
        A LabelMatrix is used as is (re-indexed onto ``categories`` when given). A DataFrame
        whose columns are exactly ``item``, ``coder`` and ``value`` is long form
        (:func:`from_long`); any other DataFrame or 2-D array is wide, items x coders
        (:func:`from_wide`).
    categories : iterable of str, optional
        Allowed labels; a label outside the list is a ValueError naming it.

    Returns
    -------
    LabelMatrix
    """
    if isinstance(data, LabelMatrix):
        return data if categories is None else data.with_categories(categories)
    if isinstance(data, SetLabelMatrix):
        raise ValueError(
            "This statistic takes single labels; for multi-select answers use masi_alpha, "
            "per_code_kappas or multi_select_report."
        )
    if isinstance(data, pd.DataFrame) and set(data.columns) == set(LONG_COLUMNS):
        return from_long(data, categories=categories)
    return from_wide(data, categories=categories)


def count_table(data: Any, *, categories: Iterable[Any] | None = None) -> pd.DataFrame:
    """Items x categories table: how many coders gave each item each label.

    Parameters
    ----------
    data : LabelMatrix or anything :func:`as_label_matrix` accepts
    categories : iterable of str, optional

    Returns
    -------
    pandas.DataFrame
        Integer counts, indexed by item, one column per category (missing ratings are not
        counted, so row sums are the number of coders who rated the item).
    """
    matrix = as_label_matrix(data, categories)
    k = len(matrix.categories)
    present = matrix.codes >= 0
    rows = np.broadcast_to(np.arange(matrix.n_items)[:, None], matrix.codes.shape)[present]
    counts = np.bincount(rows * k + matrix.codes[present], minlength=matrix.n_items * k).reshape(
        matrix.n_items, k
    )
    return pd.DataFrame(counts, index=matrix.items, columns=list(matrix.categories))


def confusion_matrix(
    data: Any,
    rows_coder: str,
    columns_coder: str,
    *,
    categories: Iterable[Any] | None = None,
) -> ConfusionMatrix:
    """Cross-tabulate two coders over the items both rated.

    Parameters
    ----------
    data : LabelMatrix or anything :func:`as_label_matrix` accepts
    rows_coder, columns_coder : str
        The coder whose labels index the rows, and the one for the columns.
    categories : iterable of str, optional

    Returns
    -------
    ConfusionMatrix
    """
    matrix = as_label_matrix(data, categories).select([rows_coder, columns_coder])
    codes = matrix.codes
    return confusion_from_codes(
        codes[:, 0], codes[:, 1], matrix.categories, rows_coder, columns_coder
    )


def confusion_from_codes(
    a: np.ndarray, b: np.ndarray, categories: tuple[str, ...], name_a: str, name_b: str
) -> ConfusionMatrix:
    k = len(categories)
    both = (a >= 0) & (b >= 0)
    table = np.bincount(a[both].astype(np.intp) * k + b[both], minlength=k * k).reshape(k, k)
    return ConfusionMatrix(
        name_a, name_b, categories, tuple(tuple(int(x) for x in row) for row in table)
    )


# --- multi-select answers -------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class SetLabelMatrix:
    """Multi-select answers (sets of codes) of every item (rows) by every coder (columns).

    Attributes
    ----------
    codes : ndarray of int, shape (n_items, n_coders)
        Index into ``values`` of each answer, ``MISSING`` (-1) when not rated. Read-only.
    values : tuple of frozenset of str
        The distinct answers (sets; the empty set is a valid answer).
    categories : tuple of str
        Every individual code.
    coders : tuple of str
    items : pandas.Index
    """

    codes: np.ndarray
    values: tuple[frozenset[str], ...]
    categories: tuple[str, ...]
    coders: tuple[str, ...]
    items: pd.Index

    def __post_init__(self) -> None:
        codes = np.asarray(self.codes)
        if codes.ndim != 2 or codes.dtype.kind not in "iu":
            raise ValueError("SetLabelMatrix.codes must be a 2-D integer array.")
        if codes.shape != (len(self.items), len(self.coders)):
            raise ValueError("SetLabelMatrix.codes does not match its items and coders.")
        if codes.size and (codes.min() < MISSING or codes.max() >= len(self.values)):
            raise ValueError("SetLabelMatrix.codes holds indices outside its answer list.")
        view = codes.view()
        view.flags.writeable = False
        object.__setattr__(self, "codes", view)
        object.__setattr__(self, "items", pd.Index(self.items))

    @property
    def n_items(self) -> int:
        """Number of items (rows)."""
        return int(self.codes.shape[0])

    @property
    def n_coders(self) -> int:
        """Number of coders (columns)."""
        return int(self.codes.shape[1])

    def to_frame(self) -> pd.DataFrame:
        """Wide DataFrame of answers (frozensets), ``None`` where missing."""
        lookup = np.empty(len(self.values) + 1, dtype=object)
        lookup[: len(self.values)] = list(self.values)
        return pd.DataFrame(
            lookup[self.codes], index=self.items, columns=list(self.coders), dtype=object
        )

    def code_matrix(self, code: str) -> LabelMatrix:
        """Binary LabelMatrix for one code: ``"present"`` or ``"absent"`` in each answer."""
        if code not in self.categories:
            raise ValueError(f"Unknown code {code!r}; known: {_quote(self.categories)}.")
        lookup = np.array([int(code in v) for v in self.values] + [MISSING], dtype=np.int8)
        return LabelMatrix(lookup[self.codes], ("absent", "present"), self.coders, self.items)


def _answer(value: Any) -> frozenset[str] | None:
    if _is_missing(value):
        return None
    if isinstance(value, str):
        return frozenset([label_name(value)])
    if isinstance(value, (set, frozenset, list, tuple, np.ndarray, pd.Series)):
        codes = list(value)
        if any(_is_missing(c) for c in codes):
            raise ValueError(f"A multi-select answer holds a missing code: {value!r}.")
        return frozenset(label_name(c) for c in codes)
    return frozenset([label_name(value)])


def _encode_sets(
    cells: Sequence[Any], categories: tuple[str, ...] | None
) -> tuple[np.ndarray, tuple[frozenset[str], ...], tuple[str, ...]]:
    answers = [_answer(v) for v in cells]
    distinct = {a for a in answers if a is not None}
    resolved = _resolve_categories((c for a in distinct for c in a), categories)
    order = {c: i for i, c in enumerate(resolved)}
    values = tuple(sorted(distinct, key=lambda s: (len(s), sorted(order[c] for c in s))))
    position = {v: i for i, v in enumerate(values)}
    dtype = _code_dtype(len(values))
    codes = np.array([MISSING if a is None else position[a] for a in answers], dtype=dtype)
    return codes, values, resolved


def sets_from_long(
    frame: pd.DataFrame,
    *,
    item: str = "item",
    coder: str = "coder",
    value: str = "value",
    categories: Iterable[Any] | None = None,
) -> SetLabelMatrix:
    """Build a :class:`SetLabelMatrix` from long-form multi-select answers.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per answer; ``value`` holds a set/list/tuple of codes (a single string is a
        one-code answer, an empty collection is the empty answer, ``None`` is no rating).
    item, coder, value : str
        Column names.
    categories : iterable of str, optional
        Allowed codes; a code outside the list is a ValueError naming it.

    Returns
    -------
    SetLabelMatrix
    """
    checked = _check_categories(categories)
    item_codes, item_ids, coder_codes, coder_names = _long_index(frame, item, coder, value)
    cell_codes, values, resolved = _encode_sets(list(frame[value]), checked)
    codes = np.full((len(item_ids), len(coder_names)), MISSING, dtype=cell_codes.dtype)
    codes[item_codes, coder_codes] = cell_codes
    return SetLabelMatrix(codes, values, resolved, coder_names, item_ids)


def sets_from_wide(
    table: Any,
    *,
    coders: Sequence[str] | None = None,
    items: Sequence[Hashable] | None = None,
    categories: Iterable[Any] | None = None,
) -> SetLabelMatrix:
    """Build a :class:`SetLabelMatrix` from an items x coders table of answers (sets).

    Parameters
    ----------
    table : pandas.DataFrame or 2-D sequence
        Cells hold sets/lists/tuples of codes, ``None`` where not rated.
    coders, items, categories
        As in :func:`from_wide`.

    Returns
    -------
    SetLabelMatrix
    """
    checked = _check_categories(categories)
    if isinstance(table, pd.DataFrame):
        rows = [list(r) for r in table.itertuples(index=False, name=None)]
        default_coders = [str(c) for c in table.columns]
        default_items = table.index
        n_coders = table.shape[1]
    else:
        rows = [list(r) for r in table]
        if rows:
            n_coders = len(rows[0])
        elif np.ndim(table) == 2:  # no item: the coders are the columns of an empty array
            n_coders = np.shape(table)[1]
        else:
            n_coders = len(coders) if coders is not None else 0
        if any(len(r) != n_coders for r in rows):
            raise ValueError("Every row of a wide answer table must have one cell per coder.")
        default_coders = [f"coder{j + 1}" for j in range(n_coders)]
        default_items = pd.RangeIndex(len(rows))
    flat = [cell for row in rows for cell in row]
    cell_codes, values, resolved = _encode_sets(flat, checked)
    codes = cell_codes.reshape(len(rows), n_coders)
    coder_names = tuple(str(c) for c in (coders if coders is not None else default_coders))
    item_ids = pd.Index(items) if items is not None else pd.Index(default_items)
    return SetLabelMatrix(codes, values, resolved, coder_names, item_ids)


def as_set_matrix(data: Any, categories: Iterable[Any] | None = None) -> SetLabelMatrix:
    """Return ``data`` as a :class:`SetLabelMatrix`.

    A SetLabelMatrix is used as is (``categories`` then must contain all its codes); a
    DataFrame with exactly the columns item, coder, value is long form; anything else is
    a wide items x coders table.
    """
    if isinstance(data, SetLabelMatrix):
        if categories is not None:
            checked = _category_names(categories)
            resolved = _resolve_categories(data.categories, checked)
            return SetLabelMatrix(data.codes, data.values, resolved, data.coders, data.items)
        return data
    if isinstance(data, LabelMatrix):
        raise ValueError("Multi-select statistics take a SetLabelMatrix (sets of codes).")
    if isinstance(data, pd.DataFrame) and set(data.columns) == set(LONG_COLUMNS):
        return sets_from_long(data, categories=categories)
    return sets_from_wide(data, categories=categories)
