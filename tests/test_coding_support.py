"""Helpers shared by the coding-session and TUI tests (no tests here).

``project(tmp_path)`` copies a project file made once per test run: the demo data imported
and a sample ``main`` of 12 actions (seed 7). Copying keeps each test independent and fast.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from annotate.codebook import find_codebook
from annotate.io.importing import import_files
from annotate.store import Store

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "data" / "demo"
SAMPLE_N = 12
_TEMPLATE: Path | None = None


def _template() -> Path:
    global _TEMPLATE
    if _TEMPLATE is None or not _TEMPLATE.exists():
        folder = Path(tempfile.mkdtemp(prefix="annotate-coding-"))
        path = folder / "template.db"
        with Store(path) as store:
            import_files(store, sorted(DEMO.glob("*.jsonl")))
            from annotate.coding.sampling import draw_sample

            ids = draw_sample(store.actions.action_rows(), SAMPLE_N, 7, [])
            store.samples.create_sample("main", ids, seed=7)
            store.samples.create_sample("other", ids[:3], seed=1)
            store.samples.create_sample("six", ids[:6], seed=1)
        _TEMPLATE = path
    return _TEMPLATE


def project(tmp_path: Path) -> Path:
    """A fresh copy of the demo project file in ``tmp_path``."""
    target = tmp_path / "project.db"
    shutil.copy(_template(), target)
    return target


def labels(db: Path, coder: str | None = None, codebook: str | None = None) -> list[dict]:
    """Every label row (optionally of one coder), read back from the file."""
    with Store(db) as store:
        sql = "SELECT * FROM labels WHERE 1=1"
        params: list[str] = []
        if coder:
            sql += " AND coder = ?"
            params.append(coder)
        if codebook:
            sql += " AND codebook = ?"
            params.append(codebook)
        return [dict(r) for r in store.db.query(sql + " ORDER BY action_id, question", params)]


def answers(db: Path, coder: str, codebook: str) -> dict[tuple[str, str], tuple]:
    """(action_id, question) -> (value, codes JSON, other_text) of answered rows."""
    return {
        (r["action_id"], r["question"]): (r["value"], r["codes"], r["other_text"])
        for r in labels(db, coder, codebook)
        if r["value"] is not None or r["codes"] is not None
    }


def sample_ids(db: Path, name: str = "main") -> list[str]:
    with Store(db) as store:
        return store.samples.sample_ids(name)


def codebook(name: str):
    return find_codebook(name)
