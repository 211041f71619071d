""" "Other" is opt-in: a codebook declares it with `allow_other: true`, an Other answer always
carries free text, codebook versions stored before schema 7 keep the old reading (an omitted
`allow_other` meant true) with their hash and labels, and every agreement report states how
many categories entered its figures (Gwet's AC1 depends on it)."""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path

import pytest

from annotate.analysis.agreement_section import agreement_rows
from annotate.codebook import OTHER, Answer, find_codebook, parse_codebook
from annotate.errors import CodebookError
from annotate.reliability.majority_pass import adjudicate_majority
from annotate.reliability.selection import select
from annotate.store import Store
from annotate.store.migrations import MIGRATIONS
from tests.conftest import DEMO

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
DX_OLD_HASH = "0d007d4130ad"
"""DX's version hash as annotate computed it before Other was opt-in (an implicit Other)."""

SHIPPED_HASHES = {
    "traum": "df387c5b9632",  # 1.1 (issue 35): the hidden-canvas guidance; 1.0 was 69aaed989bc4
    "mental_model": "bdbebcb2fbcf",
    "hcrc_moves": "cbfc352190f5",
}
"""The shipped codebooks' hashes before Other was opt-in: their meaning did not change."""

AC1_5 = 0.4478845  # Gwet's AC1 on Fleiss (1971), its 5 categories (refs/README.md)
AC1_6 = 0.4734  # the same table with an unused sixth category "other"


# -- the codebook model -----------------------------------------------------------------------


def test_a_question_without_allow_other_has_no_other() -> None:
    q = parse_codebook(DX, "dx.yaml").questions[0]
    assert not q.allow_other
    assert q.codes == DX_CODES
    with pytest.raises(CodebookError, match="unknown code 'other'"):
        Answer(OTHER, other_text="a greeting").check(q)


def test_importing_other_where_it_is_not_declared_says_how_to_declare_it(
    cli, tmp_path: Path
) -> None:
    assert cli("import", str(DEMO)).exit_code == 0
    labels = tmp_path / "moves.csv"
    with Store(tmp_path / "project.db") as s:
        first = next(a["id"] for a in s.actions.action_rows() if a["action_type"] == "message")
    labels.write_text(f"action_id,coder,question,value,other_text\n{first},ana,move,other,hi\n")
    r = cli("import-labels", str(labels), "--codebook", "hcrc_moves")
    assert r.exit_code != 0
    assert "unknown code 'other'" in r.output
    assert "does not declare Other (add `allow_other: true` to offer it)" in r.output


def test_shipped_codebooks_declare_other_where_the_scheme_has_it() -> None:
    traum = find_codebook("traum").codebook.questions[0]
    assert traum.allow_other and traum.codes[-1] == OTHER
    for q in find_codebook("mental_model").codebook.questions:
        assert q.allow_other, q.id
        assert OTHER in (q.codes if q.kind == "single" else q.set_codes)
    moves = find_codebook("hcrc_moves").codebook.questions[0]
    assert not moves.allow_other and len(moves.codes) == 12  # the 12 HCRC moves, closed


def test_shipped_hashes_are_unchanged() -> None:
    got = {name: find_codebook(name).codebook.version_hash for name in SHIPPED_HASHES}
    assert got == SHIPPED_HASHES


@pytest.mark.parametrize("name", ["traum", "mental_model"])
def test_other_always_needs_free_text(name: str) -> None:
    for q in find_codebook(name).codebook.questions:
        bare = Answer(OTHER) if q.kind == "single" else Answer("no", (OTHER,))
        with pytest.raises(CodebookError, match="'other' needs a free-text description"):
            bare.check(q)
        texted = Answer(bare.value, bare.codes, "a greeting")
        texted.check(q)


def test_old_reading_keeps_the_implicit_other_and_the_old_hash() -> None:
    old = parse_codebook(DX, "dx.yaml", other_by_default=True)
    assert old.questions[0].codes == [*DX_CODES, OTHER]
    assert old.version_hash == DX_OLD_HASH
    assert parse_codebook(DX, "dx.yaml").version_hash != DX_OLD_HASH  # the meaning changed


def test_other_key_without_allow_other_is_a_mistake(cli, tmp_path: Path) -> None:
    path = tmp_path / "dx.yaml"
    path.write_text(DX.replace("    options:", '    other_key: "o"\n    options:'))
    r = cli("codebooks", "validate", str(path), db=None)
    assert r.exit_code == 1
    assert "questions[0].other_key: set, but the question does not declare Other" in r.stderr
    assert "add `allow_other: true`" in r.stderr


def test_validate_and_show_say_which_questions_offer_other(cli, tmp_path: Path) -> None:
    path = tmp_path / "dx.yaml"
    path.write_text(DX)
    r = cli("codebooks", "validate", str(path), str(Path("codebooks/traum.yaml")), db=None)
    assert r.exit_code == 0, r.output
    assert "dx.yaml: ok (dx v1, hash 58a8a61f5dfb; Other: no question)" in r.stdout
    assert "traum.yaml: ok (traum v1.1, hash df387c5b9632; Other: act)" in r.stdout
    shown = cli("codebooks", "show", str(path), db=None).stdout
    assert "Other" not in shown.replace("Other diagnosis", "")
    assert "Other (free text)" in cli("codebooks", "show", "traum", db=None).stdout


# -- AC1 on Fleiss (1971) through the CLI -----------------------------------------------------


def _fleiss_1971(cli, shared: Path, tmp_path: Path, book: Path) -> dict:
    """Import Fleiss' 30 patients x 6 psychiatrists under ``book``; the agree JSON."""
    raw = list(csv.DictReader((shared / "refs" / "fleiss1971_diagnoses_raw.csv").open()))
    log = tmp_path / "patients.csv"
    log.write_text("session,content\n" + "".join(f"fleiss,patient {r['subject']}\n" for r in raw))
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


def test_ac1_on_fleiss_1971_uses_the_tables_5_categories(cli, shared, tmp_path) -> None:
    book = tmp_path / "dx.yaml"
    book.write_text(DX)
    q = _fleiss_1971(cli, shared, tmp_path, book)
    assert q["value"]["ac1"]["ac1"] == pytest.approx(AC1_5, abs=5e-8)
    assert q["value"]["fleiss"]["kappa"] == pytest.approx(0.4302445, abs=5e-8)
    assert q["categories"] == [
        {"part": "value", "n": 5, "codes": DX_CODES, "undeclared": [], "note": None}
    ]
    line = "Categories: 5 (" + ", ".join(DX_CODES) + ") in kappa, alpha and AC1."
    assert line in cli("agree", "--codebook", "dx").stdout
    assert line in cli("agree", "--codebook", "dx", "-f", "markdown").stdout
    rows = list(csv.DictReader(cli("agree", "--codebook", "dx", "-f", "csv").stdout.splitlines()))
    count = next(r for r in rows if r["statistic"] == "n_categories")
    assert (count["part"], count["estimate"]) == ("value", "5")
    assert count["note"] == ", ".join(DX_CODES)


def test_a_declared_other_is_a_sixth_category(cli, shared, tmp_path) -> None:
    book = tmp_path / "dx.yaml"
    book.write_text(DX.replace("    options:", "    allow_other: true\n    options:"))
    q = _fleiss_1971(cli, shared, tmp_path, book)
    assert q["categories"][0]["n"] == 6 and q["categories"][0]["codes"][-1] == OTHER
    assert q["value"]["ac1"]["ac1"] == pytest.approx(AC1_6, abs=5e-5)
    assert q["value"]["fleiss"]["kappa"] == pytest.approx(0.4302445, abs=5e-8)  # unaffected


# -- a project file written before Other was opt-in --------------------------------------------


def _old_project(path: Path) -> None:
    """A file at schema 5, as annotate wrote it before Other was opt-in: the stored ``dx``
    omits ``allow_other`` (then: Other offered) and two labels use Other."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE _migrations (id INTEGER PRIMARY KEY, name TEXT, applied_at TEXT)")
    for number, migration in MIGRATIONS:
        if number <= 5:
            migration(conn)
            conn.execute(
                "INSERT INTO _migrations VALUES (?, ?, 'then')", (number, migration.__name__)
            )
    conn.execute(
        "INSERT INTO codebooks (name, version_hash, title, version, text, source, added_at) "
        "VALUES ('dx', ?, 'Psychiatric diagnoses (Fleiss 1971)', '1', ?, 'dx.yaml', ?)",
        (DX_OLD_HASH, DX, "2025-01-01T00:00:00.000Z"),
    )
    answers = {
        "ana": ["depression", "other", "neurosis", "other"],
        "ben": ["depression", "other", "schizophrenia", "neurosis"],
    }
    for seq in range(4):
        conn.execute(
            "INSERT INTO actions (id, session, seq, action_type, content) "
            "VALUES (?, 's', ?, 'message', ?)",
            (f"s:{seq}", seq, f"patient {seq}"),
        )
        for coder, values in answers.items():
            value = values[seq]
            conn.execute(
                "INSERT INTO labels (action_id, codebook, codebook_hash, question, coder, value, "
                "other_text, created_at, updated_at) VALUES (?, 'dx', ?, 'dx', ?, ?, ?, 't', 't')",
                (f"s:{seq}", DX_OLD_HASH, coder, value,
                 "adjustment disorder" if value == OTHER else None),
            )  # fmt: skip
    conn.close()


def _labels(path: Path) -> list[tuple]:
    conn = sqlite3.connect(path)
    rows = conn.execute(
        "SELECT action_id, coder, codebook_hash, value, other_text FROM labels ORDER BY 1, 2"
    ).fetchall()
    conn.close()
    return rows


def test_an_old_file_opens_and_keeps_its_labels_and_other(cli, db_path: Path) -> None:
    _old_project(db_path)
    before = _labels(db_path)
    with Store(db_path) as s:
        assert s.db.schema_version() == max(n for n, _ in MIGRATIONS)
        book = s.codebooks.stored_codebook("dx", DX_OLD_HASH)
        assert book.version_hash == DX_OLD_HASH  # the stored version is still that version
        assert book.questions[0].codes == [*DX_CODES, OTHER]
        assert s.codebooks.stored_codebook("dx").version_hash == DX_OLD_HASH
    assert _labels(db_path) == before
    r = cli("agree", "--codebook", "dx", "-f", "json")
    assert r.exit_code == 0, r.output
    q = json.loads(r.stdout)["results"][0]
    assert q["categories"][0]["n"] == 6 and q["categories"][0]["undeclared"] == []
    assert q["n_items"] == 4 and q["value"]["percent_agreement"]["proportion"] == 0.5
    export = cli("export", "--what", "labels", "--format", "csv").stdout
    assert export.count("adjustment disorder") == 3


def test_other_labels_survive_a_new_version_without_other(cli, db_path, tmp_path) -> None:
    """The codebook, re-registered under the new reading, no longer offers Other: the old
    Other answers still count, as a category the report names, and are not coded away."""
    _old_project(db_path)
    book = tmp_path / "dx.yaml"
    book.write_text(DX)
    loaded = find_codebook(str(book))
    with Store(db_path) as s:
        assert s.codebooks.register_codebook(loaded) != DX_OLD_HASH
        s.labels.save_answer("s:3", loaded.codebook, "dx", "ben", Answer("neurosis"))
        assert OTHER not in s.codebooks.stored_codebook("dx").questions[0].codes
    r = cli("agree", "--codebook", "dx", "-f", "json")
    assert r.exit_code == 0, r.output
    cats = json.loads(r.stdout)["results"][0]["categories"][0]
    assert cats["n"] == 6 and cats["undeclared"] == [OTHER]
    assert "3 answer(s) made under a version that offered Other" in cats["note"]
    table = cli("agree", "--codebook", "dx").stdout
    assert "Categories: 6 (" in table and "it is counted as a category" in table
    kept = [r for r in _labels(db_path) if r[3] == OTHER]
    assert len(kept) == 3 and {r[2] for r in kept} == {DX_OLD_HASH}
    with Store(db_path) as s:
        (row,) = agreement_rows(s, n_boot=200)  # agree's own run: its least for a 95% CI
    assert row["codebook"] == "dx" and row["categories"] == 6 and not row["note"]
    # a majority for Other is not written as gold under a version without Other: a person
    # decides it, told why
    r = cli("adjudicate", "--codebook", "dx", "--majority-only")
    assert r.exit_code == 0, r.output
    assert "majority gold for 1 (item, question) cases; 3 to decide" in r.stdout
    with Store(db_path) as s:
        selection = select(s, codebook="dx")
        plan, _ = adjudicate_majority(s, selection, "zoe", read_cases=True)
        gold = s.labels.label_rows("dx", coders=["gold"])
    assert [(g["action_id"], g["value"]) for g in gold] == [("s:0", "depression")]
    (case,) = [c for c in plan.undecided if c.action.id == "s:1"]
    assert "'other (adjustment disorder)' is not a code of this codebook version" in case.reason
    assert case.short_reason == "majority not a code"  # the status line's short form


def test_merge_keeps_the_old_reading_of_a_merged_codebook(cli, db_path, tmp_path) -> None:
    theirs = tmp_path / "theirs.db"
    _old_project(theirs)
    Store(db_path).close()
    r = cli("merge", str(theirs))
    assert r.exit_code == 0, r.output
    with Store(db_path) as s:
        book = s.codebooks.stored_codebook("dx", DX_OLD_HASH)
    assert book.questions[0].allow_other and book.version_hash == DX_OLD_HASH
