"""Many action ids held as one string (a sample of a million items): a tuple of a million
``str`` objects takes 93 MB, the same ids as one newline-separated string and an array of
where each begins take 44 MB and no Python object per id."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar, overload

import numpy as np

T = TypeVar("T")


class ItemIds(Sequence[str]):
    """Action ids in order, read by position; each ``str`` is made when it is asked for."""

    __slots__ = ("_starts", "text")

    def __init__(self, text: str, starts: np.ndarray) -> None:
        self.text = text
        """The ids joined by newlines."""
        self._starts = starts
        """Where each id begins, and one more entry: the end of the text + 1."""

    @classmethod
    def joined(cls, text: str | None, n: int) -> ItemIds | None:
        """The ids of ``text`` (``n`` ids joined by newlines), or None when they cannot be
        told apart that way (an id holds a newline) or are not ASCII (positions in the
        text are then not byte positions)."""
        if n == 0:
            return cls("", np.zeros(1, dtype=np.int64))
        if text is None or not text.isascii():
            return None
        breaks = np.flatnonzero(np.frombuffer(text.encode("ascii"), dtype=np.uint8) == 10)
        if len(breaks) != n - 1:
            return None
        starts = np.empty(n + 1, dtype=np.int64)
        starts[0] = 0
        starts[1:-1] = breaks + 1
        starts[-1] = len(text) + 1
        return cls(text, starts)

    def __len__(self) -> int:
        return len(self._starts) - 1

    def _one(self, i: int) -> str:
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("item position out of range")
        return self.text[self._starts[i] : self._starts[i + 1] - 1]

    @overload
    def __getitem__(self, key: int) -> str: ...
    @overload
    def __getitem__(self, key: slice) -> list[str]: ...
    def __getitem__(self, key: Any) -> Any:
        """An id by position; a list for a slice; for a NumPy array of positions or a
        boolean mask (as :class:`agreement.LabelMatrix` indexes its items), an object array."""
        if isinstance(key, slice):
            return [self._one(i) for i in range(*key.indices(len(self)))]
        if isinstance(key, np.ndarray):
            rows = np.flatnonzero(key) if key.dtype == bool else key
            return np.array(self.at(rows), dtype=object)
        return self._one(int(key))

    def at(self, positions: np.ndarray) -> list[str]:
        """The ids at these positions (negative ones count from the end, as a tuple's), as
        a list: one slice each, found by NumPy."""
        n = len(self)
        if len(positions) and positions.min() < 0:
            positions = np.where(positions < 0, positions + n, positions)
        if len(positions) and (positions.min() < 0 or positions.max() >= n):
            raise IndexError("item position out of range")
        text = self.text
        begins = self._starts[positions].tolist()
        ends = (self._starts[positions + 1] - 1).tolist()
        return [text[b:e] for b, e in zip(begins, ends, strict=True)]

    def __iter__(self) -> Iterator[str]:
        return (self._one(i) for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ItemIds):
            return self.text == other.text and len(self) == len(other)
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:
        for i in range(start, len(self) if stop is None else stop):
            if self._one(i) == value:
                return i
        raise ValueError(f"{value!r} is not in the items")

    def take(self, positions: np.ndarray) -> ItemIds:
        """The ids at these positions (ascending or not), as another :class:`ItemIds`."""
        found = ItemIds.joined("\n".join(self.at(positions)), len(positions))
        assert found is not None  # ASCII ids without newlines, as this one's
        return found

    def __repr__(self) -> str:
        return f"ItemIds({len(self)} ids)"


class Later(Sequence[T]):
    """A sequence whose length is known at once and whose items are read when first asked
    for: the ids of a sample a command needs only the number of (``adjudicate
    --majority-only``, whose SQL reads the sample where it lies), the cases of a plan
    nobody looks at. ``read`` needs the store still open."""

    def __init__(self, n: int, read: Callable[[], Sequence[T]]) -> None:
        self._n = n
        self._read: Callable[[], Sequence[T]] | None = read
        self._items: Sequence[T] | None = None

    @property
    def loaded(self) -> bool:
        return self._items is not None

    @property
    def items(self) -> Sequence[T]:
        if self._items is None:
            assert self._read is not None
            self._items = self._read()
            self._read = None
        return self._items

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index: Any) -> Any:
        return self.items[index]

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._n}{', loaded' if self.loaded else ''})"


def compact(ids: Sequence[str]) -> Sequence[str]:
    """``ids`` as :class:`ItemIds` where they can be, else as they are."""
    return ItemIds.joined("\n".join(ids), len(ids)) or ids
