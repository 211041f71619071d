"""annotate.render.tables: width-aware terminal tables that never split a word."""

from __future__ import annotations

import io

from rich.console import Console

from annotate.render.tables import Col, column_widths, fit_rows, fitted, wrap_list
from tests.narrow import assert_reads_at, split_words

PROSE = "Opens a new unit of content that has not been presented before: the first part"


def render(renderable, width: int) -> str:
    console = Console(width=width, color_system=None, file=io.StringIO())
    console.print(renderable)
    return console.file.getvalue()


def test_widths_shrink_the_widest_prose_first_and_never_below_a_word() -> None:
    cells = [["1", "Request acknowledgement", PROSE]]
    widths = column_widths(["key", "label", "definition"], cells, [False, True, True], 60)
    assert widths is not None and sum(widths) <= 60
    assert widths[:2] == [3, 23]  # the label keeps its line; the definition narrows
    assert column_widths(["key", "label", "definition"], cells, [False, True, True], 24) is None


def test_a_column_that_does_not_wrap_keeps_its_line() -> None:
    cells = [["227.9 (124.0)", "x"]]
    assert column_widths(["mean (SD)", "y"], cells, [False, False], 12) is None
    assert column_widths(["mean (SD)", "y"], cells, [True, False], 12) == [11, 1]


def test_short_headers_then_constant_columns_then_optional_columns() -> None:
    rows = [
        {"name": f"book{i}", "version_hash": "69aaed98", "path": "/a/long/path/to.yaml"}
        for i in range(2)
    ]
    cols = ["name", Col("version_hash", short="hash"), Col("path", optional=True)]
    full = render(fitted(rows, cols, 80), 80)
    assert "version_hash" in full and "/a/long/path/to.yaml" in full
    short = render(fitted(rows, cols, 44), 44)
    assert "hash" in short and "version_hash" not in short
    lifted = render(fitted(rows, cols, 30), 30)
    assert "In every row: version_hash 69aaed98, path /a/long/path/to.yaml." in " ".join(
        lifted.split()
    )
    rows[1]["path"] = "/another/long/path.yaml"
    dropped = " ".join(render(fitted(rows, cols, 30), 30).split())
    assert "Not shown at 30 columns: path (a wider terminal or --format csv" in dropped
    assert "/another" not in dropped
    assert fitted(rows, ["name", "version_hash", "path"], 30) is None


def test_vertical_layout_wraps_values_between_words() -> None:
    rows = [{"key": "1", "definition": PROSE}, {"key": "2", "definition": "Short."}]
    text = render(fit_rows(rows, ["key", "definition"], 30, "Options"), 30)  # no wrap: too wide
    assert text.startswith("Options\nkey         1\ndefinition  Opens a new unit\n")
    assert_reads_at(text, 30, [PROSE])
    assert not any(line != line.rstrip() for line in text.splitlines())


def test_grouped_rows_show_the_group_once() -> None:
    rows = [{"c": "ec", "role": r, "n": i} for i, r in enumerate(["all", "guide"])]
    text = render(fitted(rows, ["c", "role", "n"], 40, group=1), 40)
    assert text.count("ec") == 1


def test_split_words_finds_a_word_broken_across_lines() -> None:
    assert split_words("│ acknowl │\n│ edgement │", ["acknowledgement"]) == ["acknowledgement"]
    assert split_words("│ acknowledgement │", ["acknowledgement"]) == []


def test_cells_are_text_not_markup() -> None:
    rows = [{"ours": "no [n1, n3]", "theirs": "[bold]yes[/bold]"}]
    text = render(fitted(rows, ["ours", "theirs"], 80), 80)
    assert "no [n1, n3]" in text and "[bold]yes[/bold]" in text


def test_the_line_of_constant_values_breaks_between_values() -> None:
    text = wrap_list("In every row: ", ["draws 0.0 (0.0)", "erases 0.0 (0.0)"], 34)
    assert text == "In every row: draws 0.0 (0.0),\nerases 0.0 (0.0)"
