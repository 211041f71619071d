"""Building label matrices from long-form and wide ratings; count tables; confusion matrices."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import agreement as ag


@pytest.fixture
def long() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "item": ["u2", "u1", "u1", "u2", "u3", "u1"],
            "coder": ["bob", "ann", "bob", "ann", "ann", "cy"],
            "value": ["ack", "Initiate", "Initiate", "query", "ack", "ack"],
        }
    )


def test_from_long_pivots_to_items_by_coders(long):
    matrix = ag.from_long(long)
    assert matrix.coders == ("ann", "bob", "cy")
    assert list(matrix.items) == ["u1", "u2", "u3"]
    assert matrix.categories == ("Initiate", "ack", "query")
    assert matrix.to_frame().to_dict(orient="index") == {
        "u1": {"ann": "Initiate", "bob": "Initiate", "cy": "ack"},
        "u2": {"ann": "query", "bob": "ack", "cy": None},
        "u3": {"ann": "ack", "bob": None, "cy": None},
    }
    assert matrix.ratings_per_item().tolist() == [3, 2, 1]
    back = matrix.to_long().sort_values(["item", "coder"]).reset_index(drop=True)
    expected = long.sort_values(["item", "coder"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(back, expected, check_dtype=False)


def test_long_and_wide_give_the_same_statistics(long):
    wide = ag.from_long(long).to_frame()
    assert ag.agreement_report(long).to_dict() == ag.agreement_report(wide).to_dict()


def test_as_label_matrix_detects_long_form_by_its_three_columns(long):
    assert ag.as_label_matrix(long).coders == ("ann", "bob", "cy")
    # Any other DataFrame is wide: its columns are coders.
    assert ag.as_label_matrix(long.rename(columns={"value": "label"})).coders == (
        "item",
        "coder",
        "label",
    )


def test_from_long_with_other_column_names():
    frame = pd.DataFrame({"utt": [1, 1], "who": ["a", "b"], "code": ["x", "y"]})
    matrix = ag.from_long(frame, item="utt", coder="who", value="code")
    assert matrix.codes.tolist() == [[0, 1]] and matrix.items.tolist() == [1]


def test_from_wide_with_arrays_and_frames():
    matrix = ag.from_wide([["a", "b"], ["b", None]])
    assert matrix.coders == ("coder1", "coder2") and list(matrix.items) == [0, 1]
    assert matrix.codes.tolist() == [[0, 1], [1, -1]]
    named = ag.from_wide([["a", "b"]], coders=["ann", "bob"], items=["u9"])
    assert named.coders == ("ann", "bob") and list(named.items) == ["u9"]
    frame = pd.DataFrame({"ann": ["a", pd.NA], "bob": ["b", "a"]}, index=["x", "y"], dtype="string")
    assert ag.from_wide(frame).codes.tolist() == [[0, 1], [-1, 0]]


def test_numbers_and_strings_are_the_same_label():
    frame = pd.DataFrame({"ann": [1, 2, 10], "bob": [1.0, np.nan, 10.0], "cy": ["1", "2", "10"]})
    matrix = ag.from_wide(frame)
    assert matrix.categories == ("1", "2", "10")  # natural order
    assert matrix.codes.tolist() == [[0, 0, 0], [1, -1, 1], [2, 2, 2]]


def test_categories_fix_the_order_and_may_include_unused_labels():
    matrix = ag.from_wide([["b", "a"]], categories=["c", "b", "a"])
    assert matrix.categories == ("c", "b", "a")
    assert matrix.codes.tolist() == [[1, 2]]
    again = matrix.with_categories(["a", "b", "c", "d"])
    assert again.codes.tolist() == [[1, 0]] and again.categories == ("a", "b", "c", "d")
    with pytest.raises(ValueError, match="Labels outside the allowed categories: 'b'"):
        matrix.with_categories(["a", "c"])


def test_label_matrix_is_read_only_and_validated():
    matrix = ag.from_wide([["a", "b"]])
    with pytest.raises(ValueError):
        matrix.codes[0, 0] = 1
    with pytest.raises(ValueError, match="outside the category list"):
        ag.LabelMatrix(np.array([[0, 5]]), ("a",), ("x", "y"), pd.Index([0]))
    with pytest.raises(ValueError, match="Coder names must be unique"):
        ag.LabelMatrix(np.array([[0, 0]]), ("a",), ("x", "x"), pd.Index([0]))


def test_codes_use_a_small_integer_type():
    assert ag.from_wide([["a", "b"]]).codes.dtype == np.int8
    many = [[str(i), str(i + 1)] for i in range(300)]
    assert ag.from_wide(many).codes.dtype == np.int16


def test_count_table(long):
    table = ag.count_table(long)
    assert table.to_dict(orient="index") == {
        "u1": {"Initiate": 2, "ack": 1, "query": 0},
        "u2": {"Initiate": 0, "ack": 1, "query": 1},
        "u3": {"Initiate": 0, "ack": 1, "query": 0},
    }


def test_confusion_matrix(long):
    confusion = ag.confusion_matrix(long, "ann", "bob")
    assert confusion.labels == ("Initiate", "ack", "query")
    assert confusion.counts == ((1, 0, 0), (0, 0, 0), (0, 1, 0))
    assert confusion.n_items == 2
    frame = confusion.to_frame()
    assert frame.index.name == "ann" and frame.columns.name == "bob"
    assert json.loads(json.dumps(confusion.to_dict()))["counts"][2] == [0, 1, 0]


def test_sets_from_long_and_wide():
    frame = pd.DataFrame(
        {
            "item": [1, 1, 2, 2, 3],
            "coder": ["ann", "bob", "ann", "bob", "ann"],
            "value": [["late", "unclear"], {"unclear", "late"}, [], "late", None],
        }
    )
    matrix = ag.sets_from_long(frame)
    assert matrix.values == (frozenset(), frozenset({"late"}), frozenset({"late", "unclear"}))
    assert matrix.categories == ("late", "unclear")
    assert matrix.codes.tolist() == [[2, 2], [0, 1], [-1, -1]]
    wide = ag.sets_from_wide(matrix.to_frame())
    assert wide.codes.tolist() == matrix.codes.tolist()
    binary = matrix.code_matrix("unclear")
    assert binary.categories == ("absent", "present")
    assert binary.codes.tolist() == [[1, 1], [0, 0], [-1, -1]]
    with pytest.raises(ValueError, match="Labels outside the allowed categories: 'unclear'"):
        ag.sets_from_long(frame, categories=["late"])


def test_agreement_loads_no_peer_and_no_io_library():
    code = "import sys, agreement; print(' '.join(sorted(sys.modules)))"
    loaded = {
        m.split(".")[0]
        for m in subprocess.check_output([sys.executable, "-c", code], text=True).split()
    }
    assert not loaded & {"statsmodels", "krippendorff", "scipy", "sqlite3", "textual", "annotate"}


def test_factorizing_in_pieces_gives_the_same_matrix(monkeypatch):
    from agreement import matrix as matrix_module

    rng = np.random.default_rng(0)
    cells = rng.choice(np.array(["b", "a", "nan", "c", None], dtype=object), size=(50, 3))
    frame = pd.DataFrame(cells, columns=["x", "y", "z"])
    whole_array, whole_frame = ag.from_wide(cells), ag.from_wide(frame)
    monkeypatch.setattr(matrix_module, "_PIECE_CELLS", 7)
    monkeypatch.setattr(matrix_module, "_SINGLE_CALL_CELLS", 7)
    for whole, data in ((whole_array, cells), (whole_frame, frame)):
        pieces = ag.from_wide(data)
        assert pieces.categories == whole.categories == ("a", "b", "c", "nan")
        assert (pieces.codes == whole.codes).all()
    long = whole_frame.to_long()
    assert (ag.from_long(long).codes == ag.from_long(long.iloc[::-1]).codes).all()
