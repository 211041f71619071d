"""Participants' self-reports: import with a mapping (`import-labels --mapping`), self coders
in `agree`, and partner alignment in `report`, checked on a hand-computed example."""

from __future__ import annotations

import csv
import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from annotate.analysis.alignment import ActSource, AlignmentCount, partner_alignment
from annotate.codebook import Answer, find_codebook, parse_codebook
from annotate.store import Store

PROBE_BOOK = """\
name: probe
title: Probe
version: "1"
questions:
  - id: Q1
    prompt: "At this moment, my partner and I were:"
    allow_other: true
    options:
      - {code: a, label: Clear, key: "1"}
      - {code: b, label: Unclear, key: "2"}
  - id: Q4
    prompt: "We were on the same page:"
    kind: yes_no_reasons
    options:
      - {code: r1, label: Goal, key: "1"}
      - {code: r2, label: State, key: "2"}
  - id: R
    prompt: "What was I trying to do?"
    kind: text
    min_chars: 3
"""
MAPPING = """\
codebook: probe
questions:
  task_state:
    to: Q1
    answers: {clear: a, unclear: b, something_else: other}
  same_page:
    to: Q4
    answers: {yes: "yes", no: "no"}
    reasons: {goal: r1, state: r2}
  rationale:
    to: R
"""
# 20 actions in session s1 (participants A and B); the reports are on the first 10.
TYPES = ["message"] * 5 + ["draw"] * 3 + ["message"] * 12
# Q1 per action: (A's answer, B's answer); None: no report.
Q1 = {
    0: ("clear", "clear"),
    1: ("clear", "unclear"),
    2: ("unclear", "unclear"),
    3: ("clear", None),
    4: ("something_else", "something_else"),  # other, with different texts: aligned
    5: ("clear", "clear"),
    6: ("unclear", "clear"),
    8: ("clear", "clear"),
    9: ("unclear", "unclear"),
}
# Q4: (answer, reasons) per participant; the reasons do not count, only yes or no.
Q4 = {
    0: (("yes", []), ("yes", [])),
    1: (("no", ["goal"]), ("no", ["state"])),
    2: (("yes", []), ("no", ["state"])),
    5: (("yes", []), ("yes", [])),
    9: (("no", ["goal"]), ("yes", [])),
}
ACTS = {0: "Initiate", 1: "Initiate", 2: "Initiate", 4: "Acknowledge", 5: "Acknowledge"}
ACTS |= {6: "Acknowledge", 8: "Repair", 9: "Repair"}


def query(db: Path, sql: str) -> list[tuple]:
    with closing(sqlite3.connect(db)) as conn:
        return conn.execute(sql).fetchall()


@pytest.fixture
def project(tmp_path: Path, cli) -> Path:
    """The actions of s1 (and of s2, people C and D), the codebook, the mapping, the log."""
    log = tmp_path / "log.csv"
    with log.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "session", "participant", "action_type", "content"])
        for i, t in enumerate(TYPES):
            w.writerow([f"a{i}", "s1", "AB"[i % 2], t, f"turn {i}"])
        w.writerow(["c0", "s2", "C", "message", "hi"])
        w.writerow(["c1", "s2", "D", "message", "hello"])
    cli("import", str(log), "--format", "csv", "--map", "id=id")
    (tmp_path / "probe.yaml").write_text(PROBE_BOOK)
    (tmp_path / "mapping.yaml").write_text(MAPPING)
    lines = []
    for i, pair in Q1.items():
        for who, answer in zip("AB", pair, strict=True):
            if answer is not None:
                line = {"action_id": f"a{i}", "participant": who, "question": "task_state"}
                line["answer"] = answer
                if answer == "something_else":
                    line["text"] = f"{who} was chatting"
                lines.append(line)
    for i, pair in Q4.items():
        for who, (answer, reasons) in zip("AB", pair, strict=True):
            line = {"session": "s1", "seq": i, "participant": who, "question": "same_page"}
            lines.append(line | {"answer": answer} | ({"reasons": reasons} if reasons else {}))
    lines.append({"action_id": "a0", "participant": "A", "question": "rationale", "text": "why"})
    lines.append({"action_id": "a0", "participant": "B", "question": "rationale", "text": "why"})
    write_jsonl(tmp_path / "reports.jsonl", lines)
    return tmp_path


def write_jsonl(path: Path, lines: list[dict]) -> None:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


def import_reports(cli, tmp: Path, reports: str = "reports.jsonl", mapping: str = "mapping.yaml"):
    return cli(
        "import-labels",
        str(tmp / reports),
        "--codebook",
        str(tmp / "probe.yaml"),
        "--mapping",
        str(tmp / mapping),
    )


def test_import_stores_self_coders_with_their_source(project: Path, cli, db_path: Path):
    result = import_reports(cli, project)
    assert result.exit_code == 0, result.output
    n = sum(a is not None for p in Q1.values() for a in p) + 2 * len(Q4) + 2
    assert f"{n} labels read: {n} new" in result.stdout
    assert "coders: self:A, self:B" in result.stdout
    rows = query(
        db_path,
        "SELECT coder, question, value, codes, other_text, source, meta FROM labels "
        "WHERE action_id IN ('a0', 'a1', 'a4') ORDER BY action_id, question, coder",
    )
    by = {(r[0], r[1], json.loads(r[6])["line"]): r for r in rows}
    assert {r[5] for r in rows} == {"self-report"}
    a1_q4 = [r for r in rows if r[1] == "Q4" and json.loads(r[6])["probe"] == "same_page"]
    assert ("self:B", "Q4", "no", '["r2"]', None) in [r[:5] for r in a1_q4]
    other = [r for r in rows if r[2] == "other"]
    assert sorted(r[4] for r in other) == ["A was chatting", "B was chatting"]
    text = [r for r in rows if r[1] == "R"]
    assert [(r[2], r[3], r[4]) for r in text] == [("why", None, None)] * 2
    assert all(json.loads(r[6])["file"] == "reports.jsonl" for r in by.values())
    again = import_reports(cli, project)
    assert f"0 new, 0 answers replaced, {n} unchanged" in again.stdout


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            ("to: Q1", "to: Q9"),
            "bad.yaml:4: questions.task_state.to: 'Q9' is not a question of probe",
        ),
        (
            ("unclear: b", "unclear: z"),
            "bad.yaml:5: questions.task_state.answers.unclear: 'z' is not a code of probe Q1",
        ),
        (
            ("    to: R", "    to: R\n    answers: {x: a}"),
            "bad.yaml:12: questions.rationale.answers: R is a text",
        ),
        (("codebook: probe", "codebook: traum"), "bad.yaml:1: codebook: 'traum', but"),
        (
            ("  rationale:", "  rationale:\n    too: R"),
            "bad.yaml:11: questions.rationale.too: unknown key",
        ),
    ],
)
def test_a_wrong_mapping_names_file_line_and_key(project, cli, db_path, edit, message):
    (project / "bad.yaml").write_text(MAPPING.replace(*edit))
    result = import_reports(cli, project, mapping="bad.yaml")
    assert result.exit_code == 1
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"error: {project}/bad.yaml:"), first
    assert message in first, first
    assert query(db_path, "SELECT count(*) FROM labels") == [(0,)]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"answer": "muddled"}, "key 'answer': 'muddled' is not a code of Q1 nor in"),
        ({"participant": "C"}, "key 'participant': 'C' has no action in session 's1'"),
        ({"question": "mood"}, "key 'question': 'mood' is not in mapping.yaml"),
        ({"action_id": "zz"}, "key 'action_id': unknown action id 'zz'"),
        ({"colour": "red"}, "unknown key 'colour'"),
        ({"answer": "something_else"}, "'other' needs a free-text description"),
        ({"answer": None}, "missing key 'answer' for task_state (Q1)"),
    ],
)
def test_a_bad_line_names_file_line_and_key_and_stores_nothing(
    project, cli, db_path, line, message
):
    good = {"action_id": "a0", "participant": "A", "question": "task_state", "answer": "clear"}
    bad = {k: v for k, v in (good | line).items() if v is not None}
    write_jsonl(project / "bad.jsonl", [good, good | {"action_id": "a2"}, bad])
    result = import_reports(cli, project, reports="bad.jsonl")
    assert result.exit_code == 1
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"error: {project / 'bad.jsonl'}:3: "), first
    assert message in first, first
    assert query(db_path, "SELECT count(*) FROM labels") == [(0,)]


def test_text_question_needs_its_minimum(project, cli, db_path):
    short = {"action_id": "a0", "participant": "A", "question": "rationale", "text": "ok"}
    write_jsonl(project / "short.jsonl", [short])
    result = import_reports(cli, project, reports="short.jsonl")
    assert result.exit_code == 1
    assert "short.jsonl:1: question R: write at least 3 characters (2 so far)" in result.stderr


def test_session_and_seq_must_name_the_same_action_as_action_id(project, cli):
    line = {"action_id": "a1", "session": "s1", "seq": 0, "participant": "A"}
    write_jsonl(project / "x.jsonl", [line | {"question": "task_state", "answer": "clear"}])
    result = import_reports(cli, project, reports="x.jsonl")
    assert result.exit_code == 1
    assert "x.jsonl:1: key 'action_id': 'a1' is not the action at session 's1', seq 0" in (
        result.stderr
    )


def test_self_coders_count_in_agree_only_when_named(project, cli):
    assert import_reports(cli, project).exit_code == 0
    plain = cli("agree", "--codebook", "probe", "--question", "Q1")
    assert plain.exit_code == 1
    assert "gold, llm:* and self:* count only when named" in plain.stderr
    named = cli("agree", "--codebook", "probe", "--question", "Q1", "--coders", "self:A,self:B")
    assert named.exit_code == 0, named.output
    assert "coders self:A, self:B (a self:NAME coder is a participant's own answers)." in (
        " ".join(named.stdout.split())
    )
    # a0, a1, a2, a4, a5, a6, a8, a9: both answered, 6 of the 8 agree (a3: A only)
    assert "9 items, 2 coders" in named.stdout
    assert "all coders agree on 75.0% of items" in " ".join(named.stdout.split())


# -- partner alignment, by hand -------------------------------------------------------------

# Q1 by action type: messages with both reports a0 a1 a2 a4 a8 a9, aligned a0 a2 a4 a8 a9;
# draws a5 a6, aligned a5. Q4: messages a0 a1 a2 a9, aligned a0 a1 (reasons ignored);
# draws a5, aligned.
BY_TYPE = [
    AlignmentCount("Q1", "draw", 2, 1),
    AlignmentCount("Q1", "message", 6, 5),
    AlignmentCount("Q4", "draw", 1, 1),
    AlignmentCount("Q4", "message", 4, 2),
]
# 20 actions: action p is in decile floor(10 p / 20) = p // 2.
BY_DECILE = [
    AlignmentCount("Q1", "0-10%", 2, 1),  # a0 yes, a1 no
    AlignmentCount("Q1", "10-20%", 1, 1),  # a2 (a3 has one report)
    AlignmentCount("Q1", "20-30%", 2, 2),  # a4 (other = other), a5
    AlignmentCount("Q1", "30-40%", 1, 0),  # a6
    AlignmentCount("Q1", "40-50%", 2, 2),  # a8, a9
    AlignmentCount("Q4", "0-10%", 2, 2),  # a0, a1 (no + no)
    AlignmentCount("Q4", "10-20%", 1, 0),  # a2
    AlignmentCount("Q4", "20-30%", 1, 1),  # a5
    AlignmentCount("Q4", "40-50%", 1, 0),  # a9
]
# by the gold traum act: Initiate a0 a1 a2; Acknowledge a4 a5 a6; Repair a8 a9.
BY_CODE = [
    AlignmentCount("Q1", "Acknowledge", 3, 2),
    AlignmentCount("Q1", "Initiate", 3, 2),
    AlignmentCount("Q1", "Repair", 2, 2),
    AlignmentCount("Q4", "Acknowledge", 1, 1),
    AlignmentCount("Q4", "Initiate", 3, 2),
    AlignmentCount("Q4", "Repair", 1, 0),
]


def import_gold_acts(cli, tmp: Path) -> None:
    with (tmp / "acts.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["action_id", "coder", "question", "value"])
        for i, act in ACTS.items():
            w.writerow([f"a{i}", "gold", "act", act])
            w.writerow([f"a{i}", "ana", "act", "Cancel"])  # not first in line: never used
    assert cli("import-labels", str(tmp / "acts.csv"), "--codebook", "traum").exit_code == 0


def test_partner_alignment_matches_the_hand_count(project, cli, db_path):
    assert import_reports(cli, project).exit_code == 0
    import_gold_acts(cli, project)
    book = parse_codebook(PROBE_BOOK, "probe.yaml")
    traum = find_codebook("traum").codebook
    with Store(db_path) as store:
        act = ActSource(traum, traum.questions[0], ("gold", "ana"))
        result = partner_alignment(store, book, act=act)
        assert result.questions == ("Q1", "Q4")  # R is text: left out
        assert result.text_questions == ["R"]
        assert list(result.by_type) == BY_TYPE
        assert list(result.by_decile) == BY_DECILE
        assert list(result.by_code) == BY_CODE
        assert not partner_alignment(store, book, sessions={"s2"}).by_type


def test_report_shows_partner_alignment(project, cli, db_path):
    assert import_reports(cli, project).exit_code == 0
    import_gold_acts(cli, project)
    out = project / "rep"
    result = cli("report", "--codebook", "traum", "--out", str(out))
    assert result.exit_code == 0, result.output
    html = (out / "report.html").read_text()
    assert "Partner alignment: Probe self-reports" in html
    assert "Text questions are left out (no codes to compare): R." in html
    for key in ("by_type", "by_traum", "progress"):
        assert f'id="c-probe_partner_alignment_{key}"' in html
        assert f'id="t-probe_partner_alignment_{key}"' in html
    with (out / "probe_partner_alignment_by_type.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["action type"] for r in rows] == ["draw", "message", "all"]
    assert [r["Q1 n"] for r in rows] == ["2", "6", "8"]
    assert [float(r["Q1"]) for r in rows] == [0.5, 5 / 6, 6 / 8]
    assert [float(r["Q4"]) for r in rows] == [1.0, 0.5, 3 / 5]
    with (out / "probe_partner_alignment_progress.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["Q4 n"] for r in rows] == ["2", "1", "1", "0", "1", "0", "0", "0", "0", "0"]
    assert [r["Q1"] for r in rows][:5] == ["0.5", "1.0", "1.0", "0.0", "1.0"]


def test_a_mapping_nested_too_deeply_is_one_line(project, cli, db_path):
    (project / "deep.yaml").write_text("codebook: probe\nquestions: " + "[" * 5000 + "]" * 5000)
    result = import_reports(cli, project, mapping="deep.yaml")
    assert result.exit_code == 1 and "Traceback" not in result.stderr
    assert result.stderr.splitlines()[0] == (
        f"error: {project}/deep.yaml: not valid YAML (nested too deeply)"
    )
    assert query(db_path, "SELECT count(*) FROM labels") == [(0,)]


def test_a_changed_rationale_on_the_same_answer_is_stored_and_counted(project, cli, db_path):
    """One rule for a label write: a rationale beside an unchanged answer is not the answer
    (the revision stays), but it is the participant's words: a new one is stored and the
    summary counts it; a report without one leaves the stored one."""

    def report(text: str | None) -> None:
        line = {"action_id": "a0", "participant": "A", "question": "task_state", "answer": "clear"}
        write_jsonl(project / "one.jsonl", [line | ({"text": text} if text else {})])

    def stored() -> tuple:
        (row,) = query(
            db_path,
            "SELECT value, other_text, json_extract(meta, '$.text'), revision FROM labels "
            "WHERE action_id = 'a0' AND coder = 'self:A' AND question = 'Q1'",
        )
        return row

    report("we agreed on the route")
    assert import_reports(cli, project, "one.jsonl").exit_code == 0
    first = stored()
    assert first[:3] == ("a", None, "we agreed on the route")
    report("I followed my partner")
    again = import_reports(cli, project, "one.jsonl")
    assert again.exit_code == 0, again.output
    assert "1 labels read: 0 new, 0 answers replaced, 1 rationales replaced, 0 unchanged" in (
        again.stdout
    )
    assert stored() == ("a", None, "I followed my partner", first[3])
    report(None)
    assert "1 unchanged" in import_reports(cli, project, "one.jsonl").stdout
    assert stored() == ("a", None, "I followed my partner", first[3])
    # a write that changes something else (time spent on the screen) brings no rationale:
    # the stored one stays
    with Store(db_path) as store:
        book = store.codebooks.stored_codebook("probe")
        store.labels.save_answer("a0", book, "Q1", "self:A", Answer("a"), seconds=3.0)
    assert stored() == ("a", None, "I followed my partner", first[3])
