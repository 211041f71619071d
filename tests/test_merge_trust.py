"""`annotate merge` trusts nothing of the other file it can check: every codebook version
must hash to its name, and its copies of the other files never outlive the merge."""

from __future__ import annotations

import os
import signal
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from annotate.analysis import merge as merge_module
from annotate.analysis.merge import merge_files
from annotate.codebook import find_codebook, parse_codebook
from annotate.store import Store
from tests.test_analysis_merge import dump
from tests.test_analysis_support import DEMO, demo_traum_rows, write_csv

TRAUM = find_codebook("traum")
MADE_UP = "name: traum\ntitle: Made up\nversion: '9'\nquestions:\n" + "".join(
    f"  - id: q{i}\n    prompt: P{i}\n    options:\n      - {{code: a, label: A, key: a}}\n"
    for i in range(100)
)


@pytest.fixture
def pair(cli, tmp_path: Path) -> tuple[Path, Path]:
    """ours.db and theirs.db: the demo; theirs also has ana's traum labels."""
    ours, theirs = tmp_path / "ours.db", tmp_path / "theirs.db"
    for path in (ours, theirs):
        assert cli("import", str(DEMO), db=path).exit_code == 0
    rows = write_csv(tmp_path / "ana.csv", demo_traum_rows("ana"))
    assert cli("import-labels", str(rows), "--codebook", "traum", db=ours).exit_code == 0
    assert cli("import-labels", str(rows), "--codebook", "traum", db=theirs).exit_code == 0
    return ours, theirs


def _sql(path: Path, sql: str, *params: object) -> None:
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(sql, params)


def test_a_codebook_whose_text_does_not_give_its_hash_is_refused(cli, pair) -> None:
    ours, theirs = pair
    forged = "f0f0f0f0f0f0"
    _sql(
        theirs,
        "INSERT INTO codebooks (name, version_hash, title, version, text, source, added_at, "
        "other_by_default) VALUES ('traum', ?, 'Made up', '9', ?, 'x', '2099-01-01T00:00:00Z', 0)",
        forged,
        MADE_UP,
    )
    before = dump(ours)
    r = cli("merge", str(theirs), db=ours)
    assert r.exit_code == 1
    error, hint = r.stderr.splitlines()
    real = parse_codebook(MADE_UP, "traum.yaml").version_hash
    assert error == (
        f"error: {theirs}: codebook 'traum' version {forged}: its text hashes to {real}, "
        "not to its version"
    )
    assert hint.startswith("hint: the file was changed outside annotate: nothing was merged")
    assert dump(ours) == before
    with Store(ours) as s:  # what agree --codebook traum uses: the newest stored version
        assert s.codebooks.stored_codebook("traum").version_hash == TRAUM.codebook.version_hash


def test_a_true_hash_with_a_mismatched_title_or_a_broken_text_is_refused(cli, pair) -> None:
    ours, theirs = pair
    _sql(theirs, "UPDATE codebooks SET title = 'Other title' WHERE name = 'traum'")
    r = cli("merge", str(theirs), db=ours)
    assert r.exit_code == 1 and "its title column differs from its text" in r.stderr
    _sql(theirs, "UPDATE codebooks SET title = ?, text = 'a: *b' WHERE name = 'traum'",
         TRAUM.codebook.title)  # fmt: skip
    r = cli("merge", str(theirs), db=ours)
    assert r.exit_code == 1
    assert f"version {TRAUM.codebook.version_hash}: its text is not a valid codebook" in r.stderr


def test_a_version_stored_before_other_was_opt_in_is_verified_as_it_was_read(
    cli, pair, tmp_path: Path
) -> None:
    """Schema 7: other_by_default = 1 means an omitted allow_other meant true; the hash of
    such a row is the hash of that reading."""
    ours, theirs = pair
    text = TRAUM.text.replace("    allow_other: true\n", "").replace('    other_key: "o"\n', "")
    text = text.replace('version: "1.1"', 'version: "0.9"')
    assert 'version: "0.9"' in text
    old = parse_codebook(text, "traum.yaml", other_by_default=True)
    assert old.version_hash != parse_codebook(text, "traum.yaml").version_hash
    insert = (
        "INSERT INTO codebooks (name, version_hash, title, version, text, source, added_at, "
        "other_by_default) VALUES ('traum', ?, ?, ?, ?, 'x', '2099-01-01T00:00:00Z', ?)"
    )
    _sql(theirs, insert, old.version_hash, old.title, old.version, text, 0)
    r = cli("merge", str(theirs), db=ours)
    assert r.exit_code == 1 and f"version {old.version_hash}: its text hashes to" in r.stderr
    _sql(
        theirs, "UPDATE codebooks SET other_by_default = 1 WHERE version_hash = ?", old.version_hash
    )
    r = cli("merge", str(theirs), db=ours)
    assert r.exit_code == 0, r.output
    with Store(ours) as s:
        stored = {v["version_hash"]: v for v in s.codebooks.codebook_versions()}
    assert old.version_hash in stored
    assert stored[old.version_hash]["added_at"] < "2099"  # a future date is copied as now


def test_a_merge_killed_with_sigterm_leaves_no_copy(pair, monkeypatch) -> None:
    ours, theirs = pair
    real = merge_module.snapshot_project
    seen: list[Path] = []

    def snapshot_then_sigterm(path: Path, dest: Path, **options: object) -> None:
        real(path, dest, **options)
        seen.append(dest)
        assert dest.stat().st_size > 0
        os.kill(os.getpid(), signal.SIGTERM)  # as `kill PID` from another shell

    def unhandled(signum: int, frame: object) -> None:
        raise RuntimeError("the merge left SIGTERM to the handler it found")

    monkeypatch.setattr(merge_module, "snapshot_project", snapshot_then_sigterm)
    before = dump(ours)
    signal.signal(signal.SIGTERM, unhandled)  # stands in for "the process dies"
    try:
        with Store(ours) as store, pytest.raises(Exception, match=r"merge stopped \(SIGTERM\)"):
            merge_files(store, [theirs])
        assert signal.getsignal(signal.SIGTERM) is unhandled  # the handler is put back
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    assert seen and not seen[0].parent.exists()
    assert dump(ours) == before


def test_the_next_merge_removes_what_a_kill_9_left(cli, pair) -> None:
    ours, theirs = pair
    dead = ours.parent / f".{ours.name}.merge-{2**22 + 12345}"  # above any pid_max: no process
    dead.mkdir()
    (dead / "0.db").write_bytes(b"x" * 1000)
    alive = ours.parent / f".{ours.name}.merge-{os.getpid()}x"  # not ours to judge: kept
    alive.mkdir()
    r = cli("merge", str(theirs), db=ours)
    assert r.exit_code == 0, r.output
    assert not dead.exists() and alive.exists()
    assert sorted(p.name for p in ours.parent.glob(f".{ours.name}.merge-*")) == [alive.name]
