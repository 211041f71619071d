"""`annotate merge`: coders' files into one; conflicts, --prefer newer, idempotence, refusals."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from annotate.codebook import Answer, find_codebook
from annotate.models import Action
from annotate.store import Store
from tests.conftest import foreign_sqlite
from tests.test_analysis_support import DEMO_LABELS, demo_traum_rows, import_demo, write_csv

TRAUM = find_codebook("traum").codebook


def flat(text: str) -> str:
    """The output with its lines joined (a long line wraps between words)."""
    return " ".join(text.split())


def dump(path: Path) -> list[str]:
    """Every row of every table (the file's whole content, in a stable order)."""
    conn = sqlite3.connect(path)
    lines = [line for line in conn.iterdump() if not line.startswith('INSERT INTO "sqlite_')]
    conn.close()
    return sorted(lines)


@pytest.fixture
def files(cli, tmp_path):
    """ours.db: the demo with ana's labels on 100 actions and a sample; theirs.db: the demo plus
    one extra session, ana's labels on 150 actions (one answered differently), ben's labels on
    all, a mental-model codebook version and its own sample."""
    ours, theirs = tmp_path / "ours.db", tmp_path / "theirs.db"
    ana = demo_traum_rows("ana")
    for path in (ours, theirs):
        import_demo_into = cli("import", str(Path(DEMO_LABELS).parent / "demo"), db=path)
        assert import_demo_into.exit_code == 0
    assert cli("import-labels", str(write_csv(tmp_path / "a.csv", ana[:100])), "--codebook",
               "traum", db=ours).exit_code == 0  # fmt: skip
    assert cli("sample", "--n", "10", "--seed", "1", "--name", "mine", db=ours).exit_code == 0
    changed = dict(ana[5])
    changed["value"] = "Repair" if changed["value"] != "Repair" else "Initiate"
    changed["other_text"] = ""
    theirs_rows = [*ana[:5], changed, *ana[6:150], *demo_traum_rows("ben")]
    assert cli("import-labels", str(write_csv(tmp_path / "t.csv", theirs_rows)), "--codebook",
               "traum", db=theirs).exit_code == 0  # fmt: skip
    assert cli("sample", "--n", "12", "--seed", "2", "--name", "theirs", db=theirs).exit_code == 0
    with Store(theirs) as s:
        s.actions.add_actions(
            [Action(id=f"extra:{i}", session="extra", seq=i, action_type="message",
                    content=f"hi {i}", role="guide", condition="visible") for i in range(4)],
            path="extra", sha256="x", fmt="test",
        )  # fmt: skip
        s.codebooks.register_codebook(find_codebook("mental_model"))
    return ours, theirs, changed


def test_merge_carries_actions_labels_codebooks_and_samples(cli, files) -> None:
    ours, theirs, changed = files
    r = cli("merge", str(theirs), db=ours)
    assert r.exit_code == 0, r.output
    assert (
        f"{theirs}: 4 new actions of 347, 1 new codebook versions, "
        f"{50 + 343} new labels, 0 filled, 1 conflicts (0 took the newer answer); "
        "samples added: theirs." in flat(r.stdout)
    )
    assert "Conflicts in" in flat(r.stdout) and changed["action_id"] in flat(r.stdout)
    with Store(ours) as s:
        assert s.actions.count_actions() == 347
        assert s.labels.coders("traum") == ["ana", "ben"]
        assert len(s.labels.label_rows("traum", coders=["ana"])) == 150
        kept = s.labels.label_rows("traum", coders=["ana"], action_ids=[changed["action_id"]])[0]
        assert kept["value"] != changed["value"]  # ours kept
        assert {b["name"] for b in s.codebooks.codebook_versions()} == {"traum", "mental_model"}
        assert {x["name"] for x in s.samples.samples()} == {"mine", "theirs"}
        assert len(s.samples.sample_ids("theirs")) == 12
        imports = s.actions.import_history()
        assert imports[-1]["format"] == "merge" and imports[-1]["n_new"] == 4
        # labels keep their coder, codebook hash and timestamps
        mine = {(x["action_id"], x["coder"]): x for x in s.labels.label_rows("traum")}
    with Store(theirs) as t:
        for row in t.labels.label_rows("traum", coders=["ben"])[:20]:
            ours_row = mine[(row["action_id"], "ben")]
            for key in ("codebook_hash", "created_at", "updated_at", "value", "source"):
                assert ours_row[key] == row[key]


def test_merging_the_same_file_twice_changes_nothing(cli, files) -> None:
    ours, theirs, _ = files
    assert cli("merge", str(theirs), db=ours).exit_code == 0
    before = dump(ours)
    r = cli("merge", str(theirs), db=ours)
    assert r.exit_code == 0
    assert "0 new actions of 347, 0 new codebook versions, 0 new labels" in flat(r.stdout)
    assert "1 conflicts" in flat(r.stdout) and "nothing changed" in flat(r.stdout)
    assert dump(ours) == before


def test_prefer_newer_takes_the_later_answer_once(cli, files) -> None:
    ours, theirs, changed = files
    aid = changed["action_id"]
    conn = sqlite3.connect(ours)
    conn.execute(
        "UPDATE coder_labels SET updated_at = '2020-01-01T00:00:00.000Z' WHERE action_id = ?",
        (aid,),
    )
    conn.commit()
    conn.close()
    r = cli("merge", str(theirs), "--prefer", "newer", "--format", "json", db=ours)
    assert r.exit_code == 0, r.output
    (result,) = json.loads(r.stdout)
    assert result["replaced_labels"] == 1
    (conflict,) = result["conflicts"]
    assert conflict["action_id"] == aid and conflict["resolution"] == "took theirs (newer)"
    assert conflict["theirs"] == changed["value"]
    with Store(ours) as s:
        assert (
            s.labels.label_rows("traum", coders=["ana"], action_ids=[aid])[0]["value"]
            == (changed["value"])
        )
    before = dump(ours)
    again = json.loads(cli("merge", str(theirs), "--prefer", "newer", "-f", "json",
                           db=ours).stdout)  # fmt: skip
    assert again[0]["conflicts"] == [] and again[0]["changed"] is False
    assert dump(ours) == before


def _make_every_label_old(path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("UPDATE coder_labels SET updated_at = '2000-01-01T00:00:00.000Z'")
    conn.execute("UPDATE gold SET updated_at = '2000-01-01T00:00:00.000Z'")
    conn.commit()
    conn.close()


def test_prefer_newer_keeps_ours_when_ours_is_newer(cli, files) -> None:
    ours, theirs, _ = files
    _make_every_label_old(theirs)
    (result,) = json.loads(cli("merge", str(theirs), "--prefer", "newer", "-f", "json",
                               db=ours).stdout)  # fmt: skip
    assert result["replaced_labels"] == 0
    assert result["conflicts"][0]["resolution"] == "kept ours"


def test_an_answer_fills_a_flag_only_row_and_a_flag_never_overrides(cli, files) -> None:
    ours, theirs, _ = files
    ben = demo_traum_rows("ben")
    with Store(ours) as s:
        s.labels.set_flag(ben[0]["action_id"], TRAUM, "ben", ["act"])  # ours: flagged, no answer
    with Store(theirs) as t:
        t.labels.set_note(demo_traum_rows("ana")[0]["action_id"], TRAUM, "carl", ["act"], "unsure")
        t.labels.save_answer(ben[1]["action_id"], TRAUM, "act", "dora", Answer("Initiate"))
    (result,) = json.loads(cli("merge", str(theirs), "-f", "json", db=ours).stdout)
    assert result["filled_labels"] == 1
    with Store(ours) as s:
        filled = s.labels.label_rows("traum", coders=["ben"], action_ids=[ben[0]["action_id"]])[0]
        assert filled["value"] == ben[0]["value"]
        assert [r["note"] for r in s.labels.label_rows("traum", coders=["carl"])] == ["unsure"]


def test_merge_refuses_a_newer_file_and_itself(cli, files, tmp_path) -> None:
    ours, theirs, _ = files
    conn = sqlite3.connect(theirs)
    conn.execute("INSERT INTO _migrations VALUES (999, 'm999_future', 'x')")
    conn.commit()
    conn.close()
    before = dump(ours)
    r = cli("merge", str(theirs), db=ours)
    assert r.exit_code == 1
    assert "made by a newer version of annotate (schema 999" in r.stderr
    assert dump(ours) == before
    r = cli("merge", str(ours), db=ours)
    assert r.exit_code == 1 and "is the file being merged into" in r.stderr
    good = tmp_path / "good.db"
    assert cli("import", str(Path(DEMO_LABELS).parent / "demo"), db=good).exit_code == 0
    assert cli("sample", "--n", "5", "--seed", "1", "--name", "good", db=good).exit_code == 0
    r = cli("merge", str(good), str(theirs), db=ours)  # every file is checked first
    assert r.exit_code == 1 and "schema 999" in r.stderr
    assert dump(ours) == before
    r = cli("merge", str(tmp_path / "missing.db"), db=ours)
    assert r.exit_code == 1 and "missing.db: no such file" in r.stderr
    bad = tmp_path / "notes.db"
    bad.write_text("not a database " * 100)
    r = cli("merge", str(bad), db=ours)
    assert r.exit_code == 1 and "not an annotate database" in r.stderr


def test_merge_refuses_an_empty_or_foreign_sqlite_file_and_leaves_it_alone(
    cli, files, tmp_path
) -> None:
    ours, _, _ = files
    before = dump(ours)
    empty = tmp_path / "empty.db"
    empty.touch()
    r = cli("merge", str(empty), db=ours)
    assert r.exit_code == 1 and "empty.db: not an annotate database (it is empty)" in r.stderr
    assert empty.stat().st_size == 0
    foreign = tmp_path / "foreign.db"
    foreign_bytes = foreign_sqlite(foreign, "foo")
    r = cli("merge", str(foreign), db=ours)
    assert r.exit_code == 1
    assert "foreign.db: not an annotate database (it holds other tables: foo)" in r.stderr
    assert foreign.read_bytes() == foreign_bytes
    assert dump(ours) == before


def test_merge_upgrades_a_copy_of_an_older_file_and_merges_several(cli, tmp_path, db_path):
    import_demo(cli)
    old = tmp_path / "old.db"
    assert cli("import", str(Path(DEMO_LABELS).parent / "demo"), db=old).exit_code == 0
    conn = sqlite3.connect(old)
    conn.execute("DROP TABLE session_split_items")
    conn.execute("DROP TABLE session_splits")
    conn.execute("DELETE FROM _migrations WHERE id = 4")
    conn.commit()
    conn.close()
    old_bytes = old.read_bytes()
    other = tmp_path / "other.db"
    assert cli("import", str(Path(DEMO_LABELS).parent / "demo"), db=other).exit_code == 0
    assert cli("split-sessions", "--test", "1", "--name", "theirs", db=other).exit_code == 0
    r = cli("merge", str(old), str(other))
    assert r.exit_code == 0, r.output
    assert flat(r.stdout).count("0 new actions of 343") == 2
    assert "session splits added: theirs" in flat(r.stdout)
    assert old.read_bytes() == old_bytes  # the coder's file is read, never upgraded in place
    with Store(db_path) as s:
        assert s.analysis.session_split("theirs")["n_test"] == 1


def _label(path: Path, action_id: str, coder: str, question: str = "act") -> dict:
    with Store(path) as s:
        (row,) = [r for r in s.labels.label_rows("traum", coders=[coder], action_ids=[action_id])
                  if r["question"] == question]  # fmt: skip
    return row


def test_a_fill_keeps_our_note_and_flag(cli, files) -> None:
    ours, theirs, _ = files
    ben = demo_traum_rows("ben")[0]
    with Store(ours) as s:  # ours: unanswered, with a note and a flag
        s.labels.set_note(ben["action_id"], TRAUM, "ben", ["act"], "ask the PI")
        s.labels.set_flag(ben["action_id"], TRAUM, "ben", ["act"])
    with Store(theirs) as t:  # theirs: the answer, with another note
        t.labels.set_note(ben["action_id"], TRAUM, "ben", ["act"], "easy one")
    (result,) = json.loads(cli("merge", str(theirs), "-f", "json", db=ours).stdout)
    assert result["filled_labels"] == 1
    row = _label(ours, ben["action_id"], "ben")
    assert row["value"] == ben["value"]  # the answer filled in ...
    assert row["note"] == "ask the PI" and row["flagged"] == 1  # ... our note and flag kept
    (note,) = [c for c in result["conflicts"] if c["what"] == "note"]
    assert (note["ours"], note["theirs"], note["resolution"]) == (
        "ask the PI", "easy one", "kept ours",
    )  # fmt: skip


def test_notes_and_flags_of_labels_in_both_files_are_carried_once(cli, files) -> None:
    ours, theirs, _ = files
    ana = demo_traum_rows("ana")  # ana[10], ana[11] and ana[12]: the same answer in both files
    with Store(theirs) as t:
        t.labels.set_note(ana[10]["action_id"], TRAUM, "ana", ["act"], "check the map")
        t.labels.set_flag(ana[11]["action_id"], TRAUM, "ana", ["act"])
        t.labels.set_note(ana[12]["action_id"], TRAUM, "ana", ["act"], "their note")
    with Store(ours) as s:
        s.labels.set_note(ana[12]["action_id"], TRAUM, "ana", ["act"], "our note")
    before = _label(ours, ana[10]["action_id"], "ana")
    r = cli("merge", str(theirs), db=ours)
    assert r.exit_code == 0, r.output
    assert "1 notes and 1 flags carried over" in flat(r.stdout)
    assert "1 notes differ (0 took the newer note)" in flat(r.stdout)
    noted = _label(ours, ana[10]["action_id"], "ana")
    assert noted["note"] == "check the map"
    assert noted["updated_at"] == before["updated_at"]  # carrying a note keeps the times
    assert _label(ours, ana[11]["action_id"], "ana")["flagged"] == 1
    assert _label(ours, ana[12]["action_id"], "ana")["note"] == "our note"
    after = dump(ours)
    again = cli("merge", str(theirs), db=ours)
    assert "nothing changed" in flat(again.stdout) and "carried over" not in flat(again.stdout)
    assert dump(ours) == after
    # --prefer newer takes their note when their row is newer
    _make_every_label_old(ours)
    (result,) = json.loads(cli("merge", str(theirs), "--prefer", "newer", "-f", "json",
                               db=ours).stdout)  # fmt: skip
    assert result["replaced_notes"] == 1
    assert _label(ours, ana[12]["action_id"], "ana")["note"] == "their note"


def test_merge_reports_runs_left_behind_and_differing_session_splits(cli, files) -> None:
    ours, theirs, _ = files
    from annotate.store.agreement_runs import AgreementRunRecord

    for path, test in ((ours, "1"), (theirs, "2")):  # the same split name, other sessions
        assert cli("split-sessions", "--test", test, "--name", "main", db=path).exit_code == 0
    with Store(theirs) as t:
        run = t.llm.start_llm_run(
            coder="llm:fake", model="fake-model", endpoint_host="127.0.0.1", codebook="traum",
            codebook_hash="h", split="main", prompt_hash="p", shot_ids=[], temperature=0.0,
            votes=1, context=8,
        )  # fmt: skip
        agreed = t.agreement.save_agreement_run(
            AgreementRunRecord(
                codebook="traum", codebook_hash="h", label_codebook_hashes=["h"], sample=None,
                sample_hash=None, coders=["ana", "ben"], questions=["act"], label_ids=[1, 2],
                labels_hash="x", settings={}, results={}, annotate_version="0",
            )
        )  # fmt: skip
    r = cli("merge", str(theirs), db=ours)
    assert r.exit_code == 0, r.output
    assert "session splits differ (kept ours): main" in flat(r.stdout)
    assert (
        f"left in that file, not merged: 1 LLM runs (id {run}), 1 agreement runs (id {agreed})"
        in flat(r.stdout)
    )
    with Store(ours) as s:
        assert sorted(s.analysis.session_split("main")["parts"].values()).count("test") == 1
        assert s.analysis.stored_agreement_runs() == [] and s.analysis.llm_validation_runs() == []
    (result,) = json.loads(cli("merge", str(theirs), "-f", "json", db=ours).stdout)
    assert result["llm_runs_left"] == [run] and result["agreement_runs_left"] == [agreed]
    assert result["differing_session_splits"] == ["main"]
    # a run this file already holds (the same file copied) is not reported as left behind
    copy = ours.parent / "copy.db"
    copy.write_bytes(theirs.read_bytes())
    (result,) = json.loads(cli("merge", str(copy), "-f", "json", db=theirs).stdout)
    assert result["llm_runs_left"] == [] and result["agreement_runs_left"] == []
    assert result["differing_session_splits"] == [] and result["changed"] is False
