"""Every CSV the tool writes defuses a text cell a spreadsheet would run as a formula, with
the one guard `export` uses; numbers, negative ones included, stay numbers."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from annotate.render.cells import safe_cell
from annotate.render.rows import csv_text


def test_csv_text_guards_text_and_keeps_numbers() -> None:
    rows = [{"name": "=1+1", "at": "@A1", "kappa": -0.25, "low": "-1.0", "dash": "-1-1",
             "n": 3, "none": None}]  # fmt: skip
    got = next(csv.DictReader(io.StringIO(csv_text(rows, list(rows[0])))))
    assert got == {"name": "'=1+1", "at": "'@A1", "kappa": "-0.250000", "low": "-1.0",
                   "dash": "'-1-1", "n": "3", "none": ""}  # fmt: skip
    assert safe_cell("-x") == "'-x" and safe_cell(-1) == -1


def test_stats_csv_defuses_roles_and_conditions(cli, tmp_path: Path) -> None:
    log = tmp_path / "log.csv"
    log.write_text("d,who,text,cond\nd1,=ROLE(),hello,@COND\nd1,follower,ok,@COND\n")
    r = cli("import", str(log), "--map", "session=d,content=text,role=who,condition=cond")
    assert r.exit_code == 0, r.stderr
    r = cli("stats", "--format", "csv")
    assert r.exit_code == 0, r.stderr
    rows = list(csv.DictReader(io.StringIO(r.stdout)))
    assert {row["condition"] for row in rows} == {"'@COND"}
    assert "'=ROLE()" in {row["role"] for row in rows}
