""""Other" is opt-in: a codebook declares it with `allow_other: true`, an Other answer always
carries free text, codebook versions stored before schema 7 keep the old reading (an omitted
`allow_other` meant true) with their hash and labels, and every agreement report states how
many categories entered its figures (Gwet's AC1 depends on it)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from annotate.codebook import OTHER

DX = """\
name: dx
title: Psychiatric diagnoses (Fleiss 1971)
version: "1"
questions:
  - id: dx
    prompt: Which diagnosis?
    options:
      - {code: depression, label: Depression, key: "1"}
      - {code: personality, label: Personality disorder, key: "2"}
      - {code: schizophrenia, label: Schizophrenia, key: "3"}
      - {code: neurosis, label: Neurosis, key: "4"}
      - {code: other_dx, label: Other diagnosis, key: "5"}
"""
DX_CODES = ["depression", "personality", "schizophrenia", "neurosis", "other_dx"]

AC1_6 = 0.4734  # the same table with an unused sixth category "other"


# -- AC1 on Fleiss (1971) through the CLI -----------------------------------------------------


def _fleiss_1971(cli, shared: Path, tmp_path: Path, book: Path) -> dict:
    """Import Fleiss' 30 patients x 6 psychiatrists under ``book``; the agree JSON."""
    raw = list(csv.DictReader((shared / "refs" / "fleiss1971_diagnoses_raw.csv").open()))
    log = tmp_path / "patients.csv"
    log.write_text(
        "session,content\n" + "".join(f"fleiss,patient {r['subject']}\n" for r in raw)
    )
    assert cli("import", str(log)).exit_code == 0
    labels = tmp_path / "diagnoses.csv"
    with labels.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["action_id", "coder", "question", "value"])
        for seq, row in enumerate(raw):
            for rater in range(1, 7):
                code = DX_CODES[int(row[f"rater{rater}"]) - 1]
                out.writerow([f"fleiss:{seq}", f"rater{rater}", "dx", code])
    r = cli("import-labels", str(labels), "--codebook", str(book))
    assert r.exit_code == 0, r.output
    r = cli("agree", "--codebook", str(book), "-f", "json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["results"][0]


def test_a_declared_other_is_a_sixth_category(cli, shared, tmp_path) -> None:
    book = tmp_path / "dx.yaml"
    book.write_text(DX.replace("    options:", "    allow_other: true\n    options:"))
    q = _fleiss_1971(cli, shared, tmp_path, book)
    assert q["categories"][0]["n"] == 6 and q["categories"][0]["codes"][-1] == OTHER
    assert q["value"]["ac1"]["ac1"] == pytest.approx(AC1_6, abs=5e-5)
    assert q["value"]["fleiss"]["kappa"] == pytest.approx(0.4302445, abs=5e-8)  # unaffected
    line = "Categories: 6 (" + ", ".join([*DX_CODES, OTHER]) + ") in kappa, alpha and AC1."
    assert line in cli("agree", "--codebook", "dx").stdout
    assert line in cli("agree", "--codebook", "dx", "-f", "markdown").stdout
    rows = list(csv.DictReader(cli("agree", "--codebook", "dx", "-f", "csv").stdout.splitlines()))
    count = next(r for r in rows if r["statistic"] == "n_categories")
    assert (count["part"], count["estimate"]) == ("value", "6")
