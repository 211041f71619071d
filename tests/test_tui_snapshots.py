"""SVG snapshots of the coding screen at 80x24 (the smallest supported) and 120x40.

Regenerate after a deliberate change with ``pytest tests/test_tui_snapshots.py
--snapshot-update`` and look at the SVGs before committing them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from annotate.tui.app import make_app
from tests.test_coding_support import project


def _still() -> float:
    return 0.0  # a frozen clock: no pace, no time left, the same picture every run


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # the header names the file as "project.db", every run
    return project(tmp_path)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_traum_main_screen(snap_compare, db, size) -> None:
    app = make_app(db, "traum", "dora", clock=_still)
    assert snap_compare(app, press=["1", "f"], terminal_size=size)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_mental_model_reasons(snap_compare, db, size) -> None:
    app = make_app(db, "mental_model", "dora", clock=_still, lookahead=1)
    assert snap_compare(app, press=["1", "2", "3", "n", "2", "down"], terminal_size=size)
