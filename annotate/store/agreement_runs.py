"""Agreement runs (`annotate agree`) and adjudicated gold (`annotate adjudicate`).

A run keeps its inputs (codebook and hash, sample and a hash of its items, coders,
questions), its settings, its results as JSON, and the ids of the exact labels it used,
together with a hash of their content and a digest of each label, so any reported number
can be traced back to the labels it came from (and one can tell which labels changed since).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from annotate.codebook import Codebook
from annotate.errors import NotFoundError
from annotate.store.base import StoreBase, dumps, now
from annotate.store.labels import LabelWrite

GOLD_CODER = "gold"
GOLD_SOURCE = "adjudicate"


@dataclass(frozen=True)
class AgreementRunRecord:
    """What one `annotate agree` run used and found."""

    codebook: str
    codebook_hash: str
    label_codebook_hashes: Sequence[str]
    sample: str | None
    sample_hash: str | None
    coders: Sequence[str]
    questions: Sequence[str]
    label_ids: Sequence[int]
    labels_hash: str
    settings: dict[str, Any]
    results: dict[str, Any]
    annotate_version: str
    label_digests: Mapping[int, str] | None = None
    """Label id -> digest of its content when the run read it (to tell later which changed)."""
    aligned_digests: Any = None
    """The same digests in the order of ``label_ids``, as a NumPy array of the first 8
    bytes of each digest (``label_ids`` a NumPy array too): no Python object per label."""


def _aligned(label_ids: Any, digests: Any, chunk: int = 1 << 16) -> Iterator[tuple[int, str]]:
    """(label id, hex digest) pairs from NumPy arrays, a chunk of Python objects at a time."""
    for start in range(0, len(label_ids), chunk):
        ids = label_ids[start : start + chunk].tolist()
        found = digests[start : start + chunk].tolist()
        yield from zip(ids, (f"{d:016x}" for d in found), strict=True)


class AgreementRunsMixin(StoreBase):
    # -- reading labels consistently ----------------------------------------------------

    @contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """Every read inside sees the same state of the file (one deferred transaction)."""
        if self._in_transaction:
            yield
            return
        self.conn.execute("BEGIN")
        self._in_transaction = True
        try:
            yield
        finally:
            self._in_transaction = False
            self.conn.execute("COMMIT")

    def _agree_items(self, action_ids: Sequence[str] | None, sample: str | None) -> str:
        """A SQL condition on ``action_id``: the named sample's items (read where they are),
        else ``action_ids`` (copied into a temp table), else none."""
        if sample is not None:
            return " AND action_id IN (SELECT action_id FROM sample_items WHERE sample = ?)"
        if action_ids is None:
            return ""
        self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS _agree_items (id TEXT PRIMARY KEY)")
        self.conn.execute("DELETE FROM _agree_items")
        self.conn.executemany(
            "INSERT OR IGNORE INTO _agree_items VALUES (?)", ((i,) for i in action_ids)
        )
        return " AND action_id IN (SELECT id FROM _agree_items)"

    def answered_label_counts(self) -> dict[str, int]:
        """Answered labels per codebook (any coder)."""
        return {
            r[0]: r[1]
            for r in self.conn.execute(
                "SELECT codebook, count(*) FROM labels INDEXED BY labels_answered "
                "WHERE value IS NOT NULL OR codes IS NOT NULL GROUP BY codebook ORDER BY codebook"
            )
        }

    def codebook_names(self) -> list[str]:
        """Codebooks stored in this file (any version)."""
        return [r[0] for r in self.conn.execute("SELECT DISTINCT name FROM codebooks ORDER BY 1")]

    def coders_with_answers(
        self,
        codebook: str,
        action_ids: Sequence[str] | None = None,
        question: str | None = None,
        *,
        sample: str | None = None,
    ) -> dict[str, int]:
        """Coder -> answered labels of ``codebook`` (on the items of ``sample`` or
        ``action_ids``, of ``question`` when given)."""
        sql = (
            "SELECT coder, count(*) FROM labels INDEXED BY labels_answered WHERE codebook = ? "
            "AND (value IS NOT NULL OR codes IS NOT NULL)"
        )
        params: tuple[str, ...] = (codebook,)
        if question is not None:
            sql += " AND question = ?"
            params += (question,)
        sql += self._agree_items(action_ids, sample)
        params += (sample,) if sample is not None else ()
        return {
            r[0]: r[1] for r in self.conn.execute(sql + " GROUP BY coder ORDER BY coder", params)
        }

    def shared_items(
        self,
        codebook: str,
        coders: Sequence[str],
        action_ids: Sequence[str] | None = None,
        question: str | None = None,
        *,
        sample: str | None = None,
    ) -> int:
        """Items of ``codebook`` answered by two or more of ``coders``."""
        marks = ",".join("?" * len(coders))
        sql = (
            f"SELECT action_id FROM labels INDEXED BY labels_answered WHERE codebook = ? "
            f"AND coder IN ({marks}) AND (value IS NOT NULL OR codes IS NOT NULL)"
        )
        params: tuple[str, ...] = (codebook, *coders)
        if question is not None:
            sql += " AND question = ?"
            params += (question,)
        sql += self._agree_items(action_ids, sample)
        params += (sample,) if sample is not None else ()
        sql += " GROUP BY action_id HAVING count(DISTINCT coder) >= 2"
        return self.conn.execute(f"SELECT count(*) FROM ({sql})", params).fetchone()[0]

    def label_ids(
        self,
        codebook: str,
        question: str,
        coders: Sequence[str],
        action_ids: Sequence[str] | None = None,
        *,
        sample: str | None = None,
    ) -> dict[tuple[str, str], int]:
        """(action id, coder) -> label id of the answered labels of one question."""
        marks = ",".join("?" * len(coders))
        sql = (
            "SELECT action_id, coder, id FROM labels INDEXED BY labels_answered "
            f"WHERE codebook = ? AND question = ? AND coder IN ({marks}) "
            "AND (value IS NOT NULL OR codes IS NOT NULL)"
        )
        sql += self._agree_items(action_ids, sample)
        params = (codebook, question, *coders) + ((sample,) if sample is not None else ())
        return {(r[0], r[1]): r[2] for r in self.conn.execute(sql, params)}

    # -- runs ---------------------------------------------------------------------------

    def save_agreement_run(self, run: AgreementRunRecord) -> int:
        """Store a run and the ids of its labels in one transaction; return its id."""
        with self.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO agreement_runs (created_at, annotate_version, codebook, "
                "codebook_hash, label_codebook_hashes, sample, sample_hash, coders, questions, "
                "n_labels, labels_hash, settings, results) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    now(),
                    run.annotate_version,
                    run.codebook,
                    run.codebook_hash,
                    dumps(list(run.label_codebook_hashes)),
                    run.sample,
                    run.sample_hash,
                    dumps(list(run.coders)),
                    dumps(list(run.questions)),
                    len(run.label_ids),
                    run.labels_hash,
                    dumps(run.settings),
                    json.dumps(run.results, ensure_ascii=False, allow_nan=False),
                ),
            )
            run_id = int(cur.lastrowid or 0)
            if run.aligned_digests is not None:
                pairs: Iterable[tuple[int, str | None]] = _aligned(
                    run.label_ids, run.aligned_digests
                )
            else:
                digests = run.label_digests or {}
                pairs = ((i, digests.get(i)) for i in run.label_ids)
            conn.executemany(
                "INSERT OR IGNORE INTO agreement_run_labels (run_id, label_id, digest) "
                "VALUES (?, ?, ?)",
                ((run_id, i, d) for i, d in pairs),
            )
        return run_id

    def same_agreement_run(self, run: AgreementRunRecord) -> int | None:
        """The newest stored run with the same inputs, settings, version and labels (ids
        and content hash), so its results are this run's; None when there is none."""
        rows = self.conn.execute(
            "SELECT id FROM agreement_runs WHERE codebook = ? AND codebook_hash = ? "
            "AND sample IS ? AND sample_hash IS ? AND coders = ? AND questions = ? "
            "AND labels_hash = ? AND settings = ? AND annotate_version = ? ORDER BY id DESC",
            (
                run.codebook,
                run.codebook_hash,
                run.sample,
                run.sample_hash,
                dumps(list(run.coders)),
                dumps(list(run.questions)),
                run.labels_hash,
                dumps(run.settings),
                run.annotate_version,
            ),
        ).fetchall()
        wanted = sorted(int(i) for i in run.label_ids) if rows else []
        for (run_id,) in rows:
            ids = self.conn.execute(
                "SELECT label_id FROM agreement_run_labels WHERE run_id = ? ORDER BY label_id",
                (run_id,),
            ).fetchall()
            if [i for (i,) in ids] == wanted:
                return int(run_id)
        return None

    def agreement_run(self, run_id: int) -> dict[str, Any]:
        row = self.conn.execute("SELECT * FROM agreement_runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise NotFoundError(
                f"no agreement run {run_id}", hint="runs are listed by `annotate agree --runs`"
            )
        out = dict(row)
        for key in ("label_codebook_hashes", "coders", "questions", "settings", "results"):
            out[key] = json.loads(out[key])
        rows = self.conn.execute(
            "SELECT label_id, digest FROM agreement_run_labels WHERE run_id = ? ORDER BY label_id",
            (run_id,),
        ).fetchall()
        out["label_ids"] = [r[0] for r in rows]
        out["label_digests"] = {r[0]: r[1] for r in rows}  # digest None: run stored before m005
        return out

    def agreement_runs(self) -> list[dict[str, Any]]:
        """Every run, newest first, without results."""
        rows = self.conn.execute(
            "SELECT id, created_at, codebook, codebook_hash, sample, coders, questions, "
            "n_labels, labels_hash FROM agreement_runs ORDER BY id DESC"
        ).fetchall()
        out = []
        for r in rows:
            d = dict(r)
            d["coders"] = json.loads(d["coders"])
            d["questions"] = json.loads(d["questions"])
            out.append(d)
        return out

    def labels_by_id(self, label_ids: Sequence[int]) -> list[dict[str, Any]]:
        """The current content of these labels (those still stored), by id."""
        out: list[dict[str, Any]] = []
        ids = list(label_ids)
        for start in range(0, len(ids), 900):
            chunk = ids[start : start + 900]
            marks = ",".join("?" * len(chunk))
            out.extend(
                dict(r)
                for r in self.conn.execute(
                    "SELECT id, action_id, codebook, codebook_hash, question, coder, value, "
                    f"codes, other_text FROM labels WHERE id IN ({marks})",
                    chunk,
                )
            )
        for d in out:
            d["codes"] = tuple(json.loads(d["codes"])) if d["codes"] else ()
        return sorted(out, key=lambda d: d["id"])

    # -- gold -----------------------------------------------------------------------------

    def save_gold(self, codebook: Codebook, writes: Sequence[LabelWrite]) -> None:
        """Store adjudicated answers as coder ``gold``, with their provenance in ``meta``
        (updated even when the answer itself is unchanged)."""
        self.save_answers(codebook, writes, provenance=True)  # type: ignore[attr-defined]
