"""ItemIds: a sample's action ids held as one string, read by position as a tuple would be."""

from __future__ import annotations

import numpy as np
import pytest

from annotate.store.item_ids import ItemIds, compact

IDS = ["a1", "bb-22", "c", "d4444", "e-5", "f"]


def test_reads_as_the_tuple_it_holds() -> None:
    held = ItemIds.joined("\n".join(IDS), len(IDS))
    assert held is not None
    assert len(held) == len(IDS) and list(held) == IDS and held == IDS
    assert [held[i] for i in range(-len(IDS), len(IDS))] == IDS + IDS
    assert held[1:5:2] == IDS[1:5:2]
    assert list(held[np.array([5, 0, 3])]) == ["f", "a1", "d4444"]
    assert list(held[np.array([True, False, True, False, False, True])]) == ["a1", "c", "f"]
    assert held.index("d4444") == 3
    assert list(held.take(np.array([4, 2]))) == ["e-5", "c"]
    with pytest.raises(IndexError):
        held[6]


def test_at_gives_the_ids_of_many_positions_at_once() -> None:
    held = ItemIds.joined("\n".join(IDS), len(IDS))
    assert held is not None
    positions = np.array([3, 0, 5, 5, 1, 2, 4])
    assert held.at(positions) == [IDS[i] for i in positions]
    assert held.at(np.zeros(0, dtype=np.int64)) == []
    assert held.at(np.array([-1, -6, 2])) == ["f", "a1", "c"]  # from the end, as a tuple
    assert list(held[np.array([-2, 0])]) == ["e-5", "a1"]
    for wrong in ([6], [-7], [0, 7]):
        with pytest.raises(IndexError):
            held.at(np.array(wrong))


def test_ids_it_cannot_hold_stay_as_they_are() -> None:
    assert ItemIds.joined("x\ny", 3) is None  # an id holds a newline
    assert ItemIds.joined("é\nb", 2) is None  # not ASCII
    odd = ["a\nb", "c"]
    assert compact(odd) is odd
    assert isinstance(compact(IDS), ItemIds) and list(compact(IDS)) == IDS
    empty = ItemIds.joined("", 0)
    assert empty is not None and len(empty) == 0 and list(empty) == []
