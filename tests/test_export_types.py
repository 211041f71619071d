"""One typing rule for every exported column (issues 34 and 37): each column has one
declared type, text, integer or real. Parquet stores it as that type, an empty column too;
JSON lines write numbers as numbers; CSV quotes every text and no number. Read back with
pandas (CSV told which columns are text, which an empty column cannot say), the three
formats give the same dtypes. A number question's answer is exported as a number."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pandas as pd
import pytest

from annotate.codebook import LoadedCodebook, parse_codebook
from annotate.io import export
from annotate.io.importing import import_files
from annotate.io.label_import import import_labels
from annotate.store import Store
from tests.conftest import DEMO, REPO
from tests.test_number_questions import BOOK

FORMATS = (export.ExportFormat.csv, export.ExportFormat.jsonl, export.ExportFormat.parquet)
PANDAS_TYPE = {"text": "str", "int": "int64", "real": "float64"}


@pytest.fixture
def rated(tmp_path: Path) -> Path:
    """The demo with the traum labels, and ratings (a number codebook) of three actions."""
    db = tmp_path / "p.db"
    with Store(db) as store:
        import_files(store, sorted(DEMO.glob("*.jsonl")))
        import_labels(store, REPO / "data" / "demo_labels.csv", _traum())
        book = LoadedCodebook(parse_codebook(BOOK, "rate.yaml"), BOOK, "rate.yaml")
        store.codebooks.register_codebook(book)
        ids = [r[0] for r in store.db.query("SELECT id FROM actions ORDER BY session, seq")][:3]
    ratings = tmp_path / "ratings.csv"
    ratings.write_text(
        "action_id,question,coder,value\n"
        f"{ids[0]},conf,ana,0.80\n{ids[1]},conf,ana,1\n{ids[2]},score,ana,7.5\n"
    )
    rate = tmp_path / "rate.yaml"
    rate.write_text(BOOK)
    with Store(db) as store:
        import_labels(store, ratings, _loaded(rate))
    return db


def _traum():
    from annotate.codebook import find_codebook

    return find_codebook("traum")


def _loaded(path: Path):
    from annotate.codebook import load_codebook_file

    return load_codebook_file(path)


def _write(db: Path, fmt: export.ExportFormat, out: Path, **filters) -> export.ExportQuery:
    with Store(db) as store:
        query = export.build(store, export.ExportWhat.labels, **filters)
        export.write(store, query, fmt, out)
    return query


def _read(path: Path, fmt: export.ExportFormat, query: export.ExportQuery) -> pd.DataFrame:
    if fmt is export.ExportFormat.parquet:
        return pd.read_parquet(path)
    if fmt is export.ExportFormat.jsonl:
        types = {c.name: PANDAS_TYPE[c.kind] for c in query.columns}
        return pd.read_json(path, lines=True, dtype=types, convert_dates=False)
    text = [c.name for c in query.columns if c.kind == "text"]
    return pd.read_csv(path, dtype=dict.fromkeys(text, "str"))


@pytest.mark.filterwarnings("ignore:The 'convert_dates' keyword")
@pytest.mark.parametrize("coders", [None, ["ana"]])
def test_the_three_formats_read_back_with_the_same_dtypes(rated, tmp_path, coders) -> None:
    frames = {}
    for fmt in FORMATS:
        out = tmp_path / f"labels.{fmt.value}"
        query = _write(rated, fmt, out, codebook="rate", coders=coders)
        frames[fmt] = _read(out, fmt, query)
    parquet = frames[export.ExportFormat.parquet]
    assert parquet["note"].isna().all() and parquet["codes"].isna().all()  # empty columns
    for column in query.columns:
        kinds = {fmt: str(frame[column.name].dtype) for fmt, frame in frames.items()}
        assert len(set(kinds.values())) == 1, (column.name, kinds)


def test_an_empty_column_keeps_its_declared_type_in_parquet(rated, tmp_path) -> None:
    import pyarrow.parquet as pq

    for sample in (None, "none"):
        if sample:
            with Store(rated) as store:
                store.samples.create_sample("none", [])
        out = tmp_path / f"labels-{sample}.parquet"
        query = _write(rated, export.ExportFormat.parquet, out, codebook="rate", sample=sample)
        schema = pq.read_schema(out)
        arrow = {"text": "string", "int": "int64", "real": "double"}
        assert {f.name: str(f.type) for f in schema} == {
            c.name: arrow[c.kind] for c in query.columns
        }
        assert "null" not in {str(f.type) for f in schema}


def test_a_number_answer_is_a_number_in_every_format(rated, tmp_path) -> None:
    outs = {fmt: tmp_path / f"labels.{fmt.value}" for fmt in FORMATS}
    for fmt, out in outs.items():
        _write(rated, fmt, out)
    csv_text = outs[export.ExportFormat.csv].read_text()
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    numbers = {(r["question"], r["value"]): r["number"] for r in rows if r["codebook"] == "rate"}
    assert numbers == {("conf", "0.8"): "0.8", ("conf", "1"): "1.0", ("score", "7.5"): "7.5"}
    assert {r["number"] for r in rows if r["codebook"] == "traum"} == {""}
    bare = [line for line in csv_text.splitlines() if '"score"' in line]
    assert len(bare) == 1 and ',"7.5",7.5,' in bare[0]  # the text quoted, the number bare
    lines = [json.loads(x) for x in outs[export.ExportFormat.jsonl].read_text().splitlines()]
    assert sorted(x["number"] for x in lines if x["codebook"] == "rate") == [0.8, 1.0, 7.5]
    assert {x["number"] for x in lines if x["codebook"] == "traum"} == {None}
    frame = pd.read_parquet(outs[export.ExportFormat.parquet])
    assert frame["number"].dtype == "float64"
    assert sorted(frame.loc[frame["codebook"] == "rate", "number"]) == [0.8, 1.0, 7.5]


def test_the_export_page_names_every_number_column(tmp_path) -> None:
    page = (REPO / "docs" / "how-to" / "export.md").read_text()
    section = page.split("## Column types")[1].split("\n## ")[0].replace("\n  ", " ")
    listed: dict[str, set[str]] = {}
    for item in (x for x in section.splitlines() if x.startswith("- `--what")):
        tables, _, columns = item.partition(":")
        for what in re.findall(r"--what (\w+)", tables):
            listed[what] = set(re.findall(r"`(\w+)`", columns))
    with Store(tmp_path / "p.db") as store:
        for what in export.ExportWhat:
            query = export.build(store, what)
            assert listed[what.value] == {c.name for c in query.columns if c.kind != "text"}
