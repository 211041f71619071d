"""The shipped codebooks, codebook validation messages, answer checks, and the demo data."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from annotate.codebook import (
    NO,
    OTHER,
    YES,
    Answer,
    find_codebook,
    load_codebook_file,
    parse_codebook,
)
from annotate.errors import CodebookError

ROOT = Path(__file__).resolve().parent.parent
CODEBOOKS = ROOT / "codebooks"
DATA = ROOT / "data"

TRAUM_CODES = ["Initiate", "Continue", "Acknowledge", "Repair", "ReqRepair", "ReqAck", "Cancel"]
HCRC_CODES = [
    "instruct",
    "explain",
    "align",
    "check",
    "query_yn",
    "query_w",
    "acknowledge",
    "reply_y",
    "reply_n",
    "reply_w",
    "clarify",
    "ready",
]
MENTAL_MODEL = {
    "Q1": (
        "single",
        "At this moment, my partner and I were:",
        {
            "t1": "Still figuring out what we needed to do",
            "t2": "Working toward a shared understanding",
            "t3": "Clear on what to do and working on it",
            "t4": "Something was unclear and we were working it out",
        },
    ),
    "Q2": (
        "single",
        "At this moment, I thought my partner:",
        {
            "p1": "Understood the situation and we were on the same page",
            "p2": "Probably understood our situation but I was not fully sure",
            "p3": "Is waiting for more information to understand the situation",
            "p4": "Misunderstood and we were not aligned",
            "p5": "Gave no clear signal either way",
        },
    ),
    "Q3": (
        "single",
        "At this moment, my action was driven by:",
        {
            "r1": "Executing a plan we already agreed on",
            "r2": "Exploring on my own to gather information",
            "r3": "Confirming the situation with my partner",
            "r4": "Grounding by sharing or requesting information to align",
            "r5": "Repairing a mistake or misunderstanding",
            "r6": "Waiting for more information",
        },
    ),
    "Q4": (
        "yes_no_reasons",
        "At this moment, my partner and I were on the same page:",
        {
            "n1": "Different understanding of the task goal",
            "n2": "Different understanding of the current state",
            "n3": "One of us was missing key information",
            "n4": "Communication was unclear or ambiguous",
            "n5": "Technical or interface issue got in the way",
        },
    ),
}


def shipped(name: str):
    return load_codebook_file(CODEBOOKS / f"{name}.yaml").codebook


def raw(name: str) -> dict:
    return yaml.safe_load((CODEBOOKS / f"{name}.yaml").read_text(encoding="utf-8"))


def write_yaml(tmp_path: Path, data: dict, filename: str = "traum.yaml") -> Path:
    path = tmp_path / filename
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def error_of(path: Path) -> CodebookError:
    with pytest.raises(CodebookError) as info:
        find_codebook(str(path))
    return info.value


# ---------------------------------------------------------------------------------------------
# The shipped codebooks


@pytest.mark.parametrize("name", ["traum", "mental_model", "hcrc_moves"])
def test_shipped_codebook_found_by_name_and_valid(name: str) -> None:
    loaded = find_codebook(name)
    assert loaded.codebook.name == name
    assert Path(loaded.source).resolve() == (CODEBOOKS / f"{name}.yaml").resolve()
    assert find_codebook(str(CODEBOOKS / f"{name}.yaml")).codebook == loaded.codebook
    for q in loaded.codebook.questions:
        for opt in q.options:
            assert opt.label.strip()


def test_traum_codes_and_keys() -> None:
    cb = shipped("traum")
    assert cb.applies_to == ["message", "draw", "erase", "undo", "reset"]
    assert [q.id for q in cb.questions] == ["act"]
    act = cb.question("act")
    assert act.kind == "single"
    assert [o.code for o in act.options] == TRAUM_CODES
    assert [o.key for o in act.options] == list("1234567")
    assert act.allow_other and act.other_key == "o"
    assert act.codes == [*TRAUM_CODES, OTHER]
    for opt in act.options:
        assert opt.definition.strip(), opt.code
        assert 2 <= len(opt.examples) <= 3, opt.code
        assert 1 <= len(opt.counterexamples) <= 2, opt.code
    assert "hidden" in cb.instructions and "precedence" in cb.instructions


def test_hcrc_moves_codes_and_keys() -> None:
    cb = shipped("hcrc_moves")
    assert cb.applies_to == ["message"]
    move = cb.question("move")
    assert [q.id for q in cb.questions] == ["move"]
    assert move.kind == "single"
    assert not move.allow_other
    assert [o.code for o in move.options] == HCRC_CODES
    assert move.codes == HCRC_CODES  # closed scheme: no "other"
    keys = [o.key for o in move.options]
    assert keys[:10] == list("1234567890")
    assert len(set(keys)) == 12 and all(k.isalpha() and k != "o" for k in keys[10:])
    assert all(o.definition.strip() for o in move.options)


def test_hcrc_codes_match_the_corpus_labels() -> None:
    dialogues = Path("/work/shared/maptask/dialogues")
    if not dialogues.is_dir():
        pytest.skip("HCRC Map Task corpus not available")
    labels = set()
    for path in sorted(dialogues.glob("*.txt"))[:20]:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                labels.add(line.rsplit("|", 1)[-1].strip())
    assert labels <= set(HCRC_CODES)


def test_mental_model_wording_is_verbatim() -> None:
    cb = shipped("mental_model")
    assert [q.id for q in cb.questions] == list(MENTAL_MODEL)
    for q in cb.questions:
        kind, prompt, options = MENTAL_MODEL[q.id]
        assert q.kind == kind
        assert q.prompt == prompt
        assert {o.code: o.label for o in q.options} == options
        assert [o.code for o in q.options] == list(options)
        assert q.allow_other, f"{q.id} must allow Other with free text"
        keys = [o.key for o in q.options]
        assert len(set(keys)) == len(keys)
        reserved = {q.other_key} | ({q.yes_key, q.no_key} if kind == "yes_no_reasons" else set())
        assert not set(keys) & reserved
    q4 = cb.question("Q4")
    assert q4.codes == [YES, NO]
    assert q4.set_codes == ["n1", "n2", "n3", "n4", "n5", OTHER]


# ---------------------------------------------------------------------------------------------
# Content hash


def test_version_hash_is_stable() -> None:
    a = find_codebook("traum").codebook.version_hash
    b = find_codebook("traum").codebook.version_hash
    assert a == b
    assert len(a) == 12 and all(c in "0123456789abcdef" for c in a)
    hashes = {
        find_codebook(n).codebook.version_hash for n in ("traum", "mental_model", "hcrc_moves")
    }
    assert len(hashes) == 3


def test_version_hash_ignores_formatting_but_not_content(tmp_path: Path) -> None:
    original = shipped("traum").version_hash
    data = raw("traum")
    # same content, different layout and comments: same hash
    text = "# reformatted\n" + yaml.safe_dump(data, sort_keys=True, width=60)
    assert parse_codebook(text, "traum.yaml").version_hash == original
    # one definition changed: different hash
    data["questions"][0]["options"][0]["definition"] += " (edited)"
    changed = find_codebook(str(write_yaml(tmp_path, data))).codebook.version_hash
    assert changed != original
    # explicit defaults are the same content as omitted ones
    data = raw("hcrc_moves")
    data["questions"][0]["other_key"] = "o"
    assert parse_codebook(yaml.safe_dump(data), "x.yaml").version_hash == (
        shipped("hcrc_moves").version_hash
    )


# ---------------------------------------------------------------------------------------------
# Invalid codebooks: every message names the file and the YAML path


def test_duplicate_key_message(tmp_path: Path) -> None:
    data = raw("traum")
    data["questions"][0]["options"][2]["key"] = "4"  # Acknowledge now collides with Repair
    err = error_of(write_yaml(tmp_path, data))
    assert err.message == "traum.yaml: questions[0].options[3].key: duplicate key '4'"


def test_key_colliding_with_other_key(tmp_path: Path) -> None:
    data = raw("traum")
    data["questions"][0]["options"][6]["key"] = "o"
    err = error_of(write_yaml(tmp_path, data))
    assert err.message == "traum.yaml: questions[0].options[6].key: duplicate key 'o'"


def test_key_colliding_with_yes_key(tmp_path: Path) -> None:
    data = raw("mental_model")
    data["questions"][3]["options"][0]["key"] = "y"
    err = error_of(write_yaml(tmp_path, data, "mental_model.yaml"))
    assert err.message == "mental_model.yaml: questions[3].options[0].key: duplicate key 'y'"


def test_duplicate_code_and_reserved_code(tmp_path: Path) -> None:
    data = raw("traum")
    data["questions"][0]["options"][1]["code"] = "Initiate"
    data["questions"][0]["options"][2]["code"] = "other"
    err = error_of(write_yaml(tmp_path, data))
    assert err.details == [
        "traum.yaml: questions[0].options[1].code: duplicate code 'Initiate'",
        "traum.yaml: questions[0].options[2].code: 'other' is reserved",
    ]


def test_unknown_field(tmp_path: Path) -> None:
    data = raw("traum")
    data["questions"][0]["options"][0]["colour"] = "red"
    err = error_of(write_yaml(tmp_path, data))
    assert err.message.startswith("traum.yaml: questions[0].options[0].colour: ")
    assert "not permitted" in err.message


def test_missing_options(tmp_path: Path) -> None:
    data = raw("traum")
    del data["questions"][0]["options"]
    err = error_of(write_yaml(tmp_path, data))
    assert err.message == "traum.yaml: questions[0].options: Field required"


def test_empty_options(tmp_path: Path) -> None:
    data = raw("traum")
    data["questions"][0]["options"] = []
    err = error_of(write_yaml(tmp_path, data))
    assert err.message.startswith("traum.yaml: questions[0].options: ")


def test_bad_kind(tmp_path: Path) -> None:
    data = raw("traum")
    data["questions"][0]["kind"] = "ranking"
    err = error_of(write_yaml(tmp_path, data))
    assert err.message.startswith("traum.yaml: questions[0].kind: Input should be ")
    assert "'yes_no_reasons'" in err.message


def test_action_types_are_open_but_not_empty(tmp_path: Path) -> None:
    data = raw("traum")
    data["applies_to"] = ["message", "pickup"]  # an agent's action: a type like any other
    assert load_codebook_file(write_yaml(tmp_path, data)).codebook.applies("pickup")
    data["applies_to"] = ["message", " "]
    err = error_of(write_yaml(tmp_path, data))
    assert err.message == "traum.yaml: applies_to: an action type cannot be empty"


def test_unquoted_numeric_key_means_the_string(tmp_path: Path) -> None:
    # YAML reads `key: 1` as an int; the model takes it as the key "1".
    text = (CODEBOOKS / "traum.yaml").read_text(encoding="utf-8").replace('key: "1"', "key: 1")
    path = tmp_path / "traum.yaml"
    path.write_text(text, encoding="utf-8")
    cb = load_codebook_file(path).codebook
    assert cb.questions[0].options[0].key == "1"


def test_yaml_key_given_twice_is_an_error(tmp_path: Path) -> None:
    text = (
        (CODEBOOKS / "traum.yaml")
        .read_text(encoding="utf-8")
        .replace('key: "1"', 'key: "1"\n        key: "9"', 1)
    )
    path = tmp_path / "traum.yaml"
    path.write_text(text, encoding="utf-8")
    assert "key 'key' appears twice" in error_of(path).message


def test_special_keys_may_not_collide(tmp_path: Path) -> None:
    text = (CODEBOOKS / "mental_model.yaml").read_text(encoding="utf-8")
    path = tmp_path / "mental_model.yaml"
    data = yaml.safe_load(text)
    data["questions"][3]["other_key"] = data["questions"][3].get("no_key", "n")
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert "questions[3]." in error_of(path).message
    assert "duplicate key" in error_of(path).message


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "traum.yaml"
    path.write_text("name: traum\ntitle: x\nquestions: [\n  - id: act\n", encoding="utf-8")
    err = error_of(path)
    assert err.message.startswith("traum.yaml:")
    line = err.message.split(":")[1]
    assert line.isdigit() and int(line) >= 3
    assert "not valid YAML" in err.message
    assert "\n" not in err.message


def test_not_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "traum.yaml"
    path.write_text("- just\n- a list\n", encoding="utf-8")
    assert error_of(path).message.startswith("traum.yaml: a codebook must be a mapping")


def test_unknown_codebook_name_lists_choices() -> None:
    with pytest.raises(CodebookError) as info:
        find_codebook("no_such_codebook")
    assert "unknown codebook 'no_such_codebook'" in info.value.message
    for name in ("traum", "mental_model", "hcrc_moves"):
        assert name in (info.value.hint or "")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(CodebookError) as info:
        find_codebook(str(tmp_path / "absent.yaml"))
    assert "cannot read" in info.value.message


# ---------------------------------------------------------------------------------------------
# Answer.check


def check(name: str, question: str, answer: Answer) -> None:
    answer.check(shipped(name).question(question))


@pytest.mark.parametrize(
    ("name", "question", "answer"),
    [
        ("traum", "act", Answer("Initiate")),
        ("traum", "act", Answer("ReqAck")),
        ("traum", "act", Answer(OTHER, other_text="drawing the guide cannot see")),
        ("hcrc_moves", "move", Answer("reply_w")),
        ("mental_model", "Q1", Answer("t4")),
        ("mental_model", "Q3", Answer(OTHER, other_text="testing the interface")),
        ("mental_model", "Q4", Answer(YES)),
        ("mental_model", "Q4", Answer(NO, codes=("n2", "n4"))),
        ("mental_model", "Q4", Answer(NO, codes=("n3", OTHER), other_text="maps differ")),
    ],
)
def test_valid_answers(name: str, question: str, answer: Answer) -> None:
    check(name, question, answer)


@pytest.mark.parametrize(
    ("name", "question", "answer", "message"),
    [
        ("traum", "act", Answer("Ack"), "question act: unknown code 'Ack'"),
        ("traum", "act", Answer("initiate"), "question act: unknown code 'initiate'"),
        ("traum", "act", Answer(None), "question act: no value given"),
        ("traum", "act", Answer(OTHER), "question act: 'other' needs a free-text description"),
        (
            "traum",
            "act",
            Answer(OTHER, other_text="   "),
            "question act: 'other' needs a free-text description",
        ),
        ("traum", "act", Answer("Initiate", codes=("Continue",)), "question act: unknown code(s)"),
        (
            "hcrc_moves",
            "move",
            Answer(OTHER, other_text="laughter"),
            "question move: unknown code 'other'",
        ),
        ("mental_model", "Q1", Answer("p1"), "question Q1: unknown code 'p1'"),
        ("mental_model", "Q4", Answer("n1"), "question Q4: unknown code 'n1'"),
        (
            "mental_model",
            "Q4",
            Answer(YES, codes=("n1",)),
            "question Q4: reasons are only given with 'no'",
        ),
        ("mental_model", "Q4", Answer(NO, codes=("t1",)), "question Q4: unknown code(s) 't1'"),
        (
            "mental_model",
            "Q4",
            Answer(NO, codes=(OTHER,)),
            "question Q4: 'other' needs a free-text description",
        ),
    ],
)
def test_invalid_answers(name: str, question: str, answer: Answer, message: str) -> None:
    with pytest.raises(CodebookError) as info:
        check(name, question, answer)
    assert info.value.message.startswith(message)


def test_no_without_reasons_is_rejected() -> None:
    with pytest.raises(CodebookError, match="'no' needs at least one reason"):
        check("mental_model", "Q4", Answer(NO))


# ---------------------------------------------------------------------------------------------
# Demo data

BASE_FIELDS = [
    "action_id",
    "timestamp",
    "session_id",
    "participant_id",
    "session_name",
    "participant_name",
    "is_human",
    "action_type",
    "action_content",
    "result",
    "metadata",
    "page",
    "experiment_type",
]
OPTIONAL_FIELDS = {"session_elapsed_seconds"}
EXTRA_FIELDS = ["role", "condition"]


def load_demo() -> list[dict]:
    rows = []
    files = sorted((DATA / "demo").glob("*.jsonl"))
    assert len(files) == 12
    for path in files:
        lines = path.read_text(encoding="utf-8").splitlines()
        assert lines
        for n, line in enumerate(lines, 1):
            row = json.loads(line)
            assert row["participant_id"] == path.stem, f"{path.name}:{n}"
            rows.append(row)
        stamps = [json.loads(line)["timestamp"] for line in lines]
        assert stamps == sorted(stamps), path.name
    return rows


def test_demo_files_have_the_export_fields() -> None:
    rows = load_demo()
    assert 300 <= len(rows) <= 400
    assert len({r["action_id"] for r in rows}) == len(rows)
    for row in rows:
        keys = list(row)
        assert keys[: len(BASE_FIELDS)] == BASE_FIELDS
        assert set(keys) - set(BASE_FIELDS) - OPTIONAL_FIELDS == set(EXTRA_FIELDS)
        assert keys[-2:] == EXTRA_FIELDS
        assert row["timestamp"].endswith("Z") and len(row["timestamp"]) == 27
        assert row["is_human"] is True and row["result"] == "success"
        assert row["experiment_type"] == "maptask"
        assert row["role"] in {"guide", "follower"}
        assert row["condition"] in {"visible", "hidden"}
        kind, content, meta = row["action_type"], row["action_content"], row["metadata"]
        if kind == "send_message":
            assert content.strip() and row["page"] == "social_panel"
            assert set(meta) == {"message_id", "receiver", "message_type"}
            assert meta["receiver"] != row["participant_id"]
        elif kind == "map_draw_stop":
            assert (content, meta) in [
                ("brush_release", {"stroke_tool": "brush"}),
                ("eraser_release", {"stroke_tool": "eraser"}),
            ]
        else:
            assert kind == "map_tool_click" and content in {"reset", "undo"} and meta == {}
        if "session_elapsed_seconds" in row:
            assert isinstance(row["session_elapsed_seconds"], int)
            assert row["session_elapsed_seconds"] >= 0


def test_demo_sessions_shape() -> None:
    rows = load_demo()
    sessions: dict[str, list[dict]] = {}
    for row in rows:
        sessions.setdefault(row["session_id"], []).append(row)
    assert len(sessions) == 6
    conditions = Counter()
    for actions in sessions.values():
        assert 40 <= len(actions) <= 70
        assert len({a["condition"] for a in actions}) == 1
        assert len({a["session_name"] for a in actions}) == 1
        roles = {a["participant_id"]: a["role"] for a in actions}
        assert sorted(roles.values()) == ["follower", "guide"]
        for a in actions:
            if a["action_type"] == "send_message":
                assert a["metadata"]["receiver"] in roles
        conditions[actions[0]["condition"]] += 1
        kinds = Counter(a["action_type"] for a in actions)
        assert kinds["send_message"] and kinds["map_draw_stop"] and kinds["map_tool_click"]
    assert conditions == {"visible": 3, "hidden": 3}
    contents = Counter(r["action_content"] for r in rows if r["action_type"] != "send_message")
    assert contents["eraser_release"] and contents["undo"] and contents["reset"]


def test_demo_labels_cover_every_action_with_valid_codes() -> None:
    ids = {r["action_id"] for r in load_demo()}
    act = shipped("traum").question("act")
    with open(DATA / "demo_labels.csv", encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames == ["action_id", "coder", "question", "value", "other_text"]
        labels = list(reader)
    seen = Counter((r["action_id"], r["coder"]) for r in labels)
    assert set(seen.values()) == {1}
    assert {a for a, _ in seen} == ids
    assert {c for _, c in seen} == {"ana", "ben", "caro"}
    for r in labels:
        assert r["question"] == "act"
        Answer(r["value"], other_text=r["other_text"] or None).check(act)
        assert bool(r["other_text"]) == (r["value"] == OTHER)


def test_make_demo_regenerates_identical_files(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(DATA / "make_demo.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
        env={"PYTHONHASHSEED": "123", "PATH": ""},
    )
    committed = sorted(p.name for p in (DATA / "demo").glob("*.jsonl"))
    generated = sorted(p.name for p in (tmp_path / "demo").glob("*.jsonl"))
    assert generated == committed
    for name in committed:
        assert (tmp_path / "demo" / name).read_bytes() == (DATA / "demo" / name).read_bytes()
    for name in (
        "demo_labels.csv",
        "demo_self_reports.jsonl",
        "demo_self_report_mapping.yaml",
        "demo_traces/overcooked.jsonl",
        "demo_traces_labels.csv",
    ):
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes()
    # the self-annotation demo (log, checkpoints, screenshots) too
    committed_self = sorted(p.relative_to(DATA) for p in (DATA / "demo_self").rglob("*.*"))
    generated_self = sorted(p.relative_to(tmp_path) for p in (tmp_path / "demo_self").rglob("*.*"))
    assert generated_self == committed_self and len(committed_self) == 19
    for rel in committed_self:
        assert (tmp_path / rel).read_bytes() == (DATA / rel).read_bytes(), rel


def test_traum_leaves_hidden_canvas_drawing_to_judgement(cli, db_path, tmp_path) -> None:
    """traum 1.1 (issue 35): drawing in the hidden condition is not coded Other by rule; the
    guidance describes the judgement, and labels made under another version keep it."""
    from annotate.store import Store
    from tests.conftest import DEMO
    from tests.test_analysis_support import demo_traum_rows, write_csv

    book = find_codebook("traum")
    text = book.codebook.instructions
    assert book.codebook.version == "1.1"
    assert "code them Other" not in text and "Only messages ground" not in text
    assert "not the answer" in text and "made known" in text and "a tendency" in text
    # labels coded under an earlier version keep its hash when the new version codes more
    earlier = tmp_path / "traum.yaml"
    earlier.write_text(book.text.replace('version: "1.1"', 'version: "1.0"'))
    assert cli("import", str(DEMO)).exit_code == 0
    rows = demo_traum_rows("ana")
    old = write_csv(tmp_path / "old.csv", rows[:10])
    new = write_csv(tmp_path / "new.csv", [r | {"coder": "ben"} for r in rows[:10]])
    assert cli("import-labels", str(old), "--codebook", str(earlier)).exit_code == 0
    assert cli("import-labels", str(new), "--codebook", "traum").exit_code == 0
    with Store(db_path) as s:
        hashes = dict(s.db.query("SELECT coder, min(codebook_hash) FROM labels GROUP BY coder"))
    assert hashes == {
        "ana": find_codebook(str(earlier)).codebook.version_hash,
        "ben": book.codebook.version_hash,
    }
    assert hashes["ana"] != hashes["ben"]
