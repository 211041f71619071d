"""Result types shared by the agreement modules, and their conversion to JSON-ready dicts.

Every result is a frozen dataclass. A statistic that cannot be computed is ``None`` (never
NaN), and the result's ``undefined_reason`` says why in one sentence. ``to_dict()`` returns
plain Python objects that ``json.dumps(..., allow_nan=False)`` accepts.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from agreement._lazy import is_pandas, pd


def to_jsonable(value: Any) -> Any:
    """Convert a result (or any nested value) to JSON-ready Python objects.

    Dataclasses become dicts, tuples and lists become lists, sets become sorted lists,
    NumPy scalars become Python scalars and non-finite floats become ``None``.
    """
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:  # most leaves, first
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(to_jsonable(v) for v in value)
    if isinstance(value, (tuple, list, np.ndarray)) or is_pandas(value, "Index"):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)


class ResultMixin:
    """Adds ``to_dict()`` to a result dataclass."""

    def to_dict(self) -> dict[str, Any]:
        """Return the result as a JSON-serialisable dict (no NaN: undefined values are None)."""
        return to_jsonable(self)


@dataclass(frozen=True)
class Interval(ResultMixin):
    """A confidence interval.

    Attributes
    ----------
    low, high : float or None
        The limits; ``None`` when the interval cannot be computed (see ``undefined_reason``).
    level : float
        Confidence level, e.g. 0.95.
    method : str
        ``"asymptotic"`` (estimate ± z · ASE), ``"BCa bootstrap over items"`` or
        ``"percentile bootstrap over items"``.
    n_boot : int or None
        Resamples drawn (bootstrap only).
    n_valid : int or None
        Resamples where the statistic was defined (usable); the quantiles use only these.
    seed : int or None
        Seed of the bootstrap generator (bootstrap only).
    undefined_reason : str or None
        Why ``low``/``high`` are None.
    note : str or None
        A remark on a defined interval, e.g. how many resamples were left out and why.
    """

    low: float | None
    high: float | None
    level: float
    method: str
    n_boot: int | None = None
    n_valid: int | None = None
    seed: int | None = None
    undefined_reason: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class ConfusionMatrix(ResultMixin):
    """Counts of items by the label of one coder (rows) and another (columns).

    Attributes
    ----------
    rows_coder, columns_coder : str
        Whose labels index the rows and the columns.
    labels : tuple of str
        Category labels, in the order of both rows and columns.
    counts : tuple of tuple of int
        ``counts[i][j]`` items labelled ``labels[i]`` by ``rows_coder`` and ``labels[j]`` by
        ``columns_coder``.
    """

    rows_coder: str
    columns_coder: str
    labels: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]

    @property
    def n_items(self) -> int:
        """Total number of items counted."""
        return int(sum(sum(row) for row in self.counts))

    def to_array(self) -> np.ndarray:
        """Return the counts as a square integer array."""
        return np.array(self.counts, dtype=np.int64).reshape(len(self.labels), len(self.labels))

    def to_frame(self) -> pd.DataFrame:
        """Return the counts as a DataFrame indexed and labelled by category."""
        frame = pd.DataFrame(self.to_array(), index=list(self.labels), columns=list(self.labels))
        frame.index.name = self.rows_coder
        frame.columns.name = self.columns_coder
        return frame
