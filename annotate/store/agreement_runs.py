"""Agreement runs (`annotate agree`) and adjudicated gold (`annotate adjudicate`).

A run keeps its inputs (codebook and hash, sample and a hash of its items, coders,
questions), its settings, its results as JSON, and the ids of the exact labels it used,
together with a hash of their content and a digest of each label, so any reported number
can be traced back to the labels it came from (and one can tell which labels changed since).
Since migration 13 a run's label ids and digests are two BLOBs of one row
(``agreement_run_label_sets``); runs stored before keep one ``agreement_run_labels`` row per
label, and both read back alike.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from annotate.coders import GOLD
from annotate.errors import NotFoundError
from annotate.store.base import Database, dumps, now
from annotate.store.gold import label_sources, labels_from, union_all
from annotate.store.labels import LabelWrite

if TYPE_CHECKING:
    from annotate.codebook import Codebook
    from annotate.store.gold import Gold
    from annotate.store.labels import Labels

GOLD_CODER = GOLD
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


IDS_DTYPE = "<i8"
"""Packed label ids: little-endian int64, sorted."""
DIGESTS_DTYPE = ">u8"
"""Packed digests: the first 8 bytes of each label's SHA-256 as they are (big-endian), so
the hex of a digest's 8 bytes is :func:`~annotate.reliability.label_hashes.label_digest`."""


def _label_set(label_ids: Any, digests: Any) -> tuple[memoryview, memoryview]:
    """Label ids and their digests (NumPy arrays, any order) as the two BLOBs' bytes sorted
    by id, each id once (the first digest of a repeated id, as one row per label kept it),
    copied only where the order or byte order needs it (3M labels: 24 MB per copy)."""
    import numpy as np

    ids = np.asarray(label_ids, dtype=np.int64)
    found = np.asarray(digests, dtype=np.uint64)
    if ids.size and (ids[1:] < ids[:-1]).any():
        order = np.argsort(ids, kind="stable")
        ids, found = ids[order], found[order]
    repeated = ids[1:] == ids[:-1]
    if repeated.any():
        first = np.r_[True, ~repeated]
        ids, found = ids[first], found[first]
    ids = np.ascontiguousarray(ids.astype(IDS_DTYPE, copy=False))
    return memoryview(ids).cast("B"), memoryview(found.astype(DIGESTS_DTYPE)).cast("B")


BLOB_PIECE = 1 << 20


def _write_blob(conn: Any, column: str, row: int, data: memoryview) -> None:
    """Write ``data`` into the zeroblob of ``column`` a piece at a time: binding it as a
    parameter would copy it whole (3M labels: 24 MB per BLOB)."""
    with conn.blobopen("agreement_run_label_sets", column, row) as blob:
        for start in range(0, len(data), BLOB_PIECE):
            blob.write(data[start : start + BLOB_PIECE])


def unpack_label_set(ids: bytes, digests: bytes | None) -> tuple[list[int], list[str | None]]:
    """The label ids and hex digests (None: stored without) of two packed BLOBs."""
    import numpy as np

    label_ids = np.frombuffer(ids, dtype=IDS_DTYPE).tolist()
    if digests is None:
        return label_ids, [None] * len(label_ids)
    text = digests.hex()
    return label_ids, [text[i : i + 16] for i in range(0, len(text), 16)]


class AgreementRuns:
    def __init__(self, db: Database, gold: Gold, labels: Labels) -> None:
        self.db = db
        self.gold = gold
        self.labels = labels

    def _agree_items(self, action_ids: Sequence[str] | None, sample: str | None) -> str:
        """A SQL condition on ``action_id``: the named sample's items (read where they are),
        else ``action_ids`` (copied into a temp table), else none."""
        if sample is not None:
            return " AND action_id IN (SELECT action_id FROM sample_items WHERE sample = ?)"
        if action_ids is None:
            return ""
        self.db.conn.execute("CREATE TEMP TABLE IF NOT EXISTS _agree_items (id TEXT PRIMARY KEY)")
        self.db.conn.execute("DELETE FROM _agree_items")
        self.db.conn.executemany(
            "INSERT OR IGNORE INTO _agree_items VALUES (?)", ((i,) for i in action_ids)
        )
        return " AND action_id IN (SELECT id FROM _agree_items)"

    def answered_label_counts(self) -> dict[str, int]:
        """Answered labels per codebook (any coder)."""
        counts: dict[str, int] = {}
        for labels in label_sources(None, "labels_answered"):
            for book, n in self.db.conn.execute(
                f"SELECT l.codebook, count(*) FROM {labels} "
                "WHERE l.value IS NOT NULL OR l.codes IS NOT NULL GROUP BY l.codebook"
            ):
                counts[book] = counts.get(book, 0) + n
        return dict(sorted(counts.items()))

    def has_answers(self, codebook: str) -> bool:
        """Whether any label of ``codebook`` is answered (one index lookup)."""
        return any(
            self.db.conn.execute(
                f"SELECT 1 FROM {labels} WHERE l.codebook = ? "
                "AND (l.value IS NOT NULL OR l.codes IS NOT NULL) LIMIT 1",
                (codebook,),
            ).fetchone()
            for labels in label_sources(None, "labels_answered")
        )

    def codebook_names(self) -> list[str]:
        """Codebooks stored in this file (any version)."""
        return [
            r[0] for r in self.db.conn.execute("SELECT DISTINCT name FROM codebooks ORDER BY 1")
        ]

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
            "SELECT l.coder, count(*) FROM {labels} WHERE l.codebook = ? "
            "AND (l.value IS NOT NULL OR l.codes IS NOT NULL)"
        )
        params: tuple[str, ...] = (codebook,)
        if question is not None:
            sql += " AND l.question = ?"
            params += (question,)
        sql += self._agree_items(action_ids, sample)
        params += (sample,) if sample is not None else ()
        counts = {}
        for labels in label_sources(None, "labels_answered"):
            query = sql.format(labels=labels) + " GROUP BY l.coder"
            counts.update(self.db.conn.execute(query, params).fetchall())
        return dict(sorted(counts.items()))

    def answering_coders(self, codebook: str, *, sample: str | None = None) -> list[str]:
        """The coders with answered labels of ``codebook`` (on the items of ``sample``), in
        order: each coder found by a loose index scan, then one label of theirs looked up
        (what :meth:`coders_with_answers` gives, without counting every label)."""
        coders = [
            r[0]
            for r in self.db.conn.execute(
                "WITH RECURSIVE c(coder) AS ("
                " SELECT min(coder) FROM coder_labels INDEXED BY labels_progress"
                "  WHERE codebook = ?"
                " UNION ALL SELECT (SELECT min(coder) FROM coder_labels INDEXED BY"
                "  labels_progress WHERE codebook = ? AND coder > c.coder) FROM c"
                "  WHERE c.coder IS NOT NULL)"
                " SELECT coder FROM c WHERE coder IS NOT NULL",
                (codebook, codebook),
            )
        ]
        if self.gold.rows_exist(codebook):
            coders = sorted({*coders, GOLD})
        sql = (
            "SELECT 1 FROM {labels} WHERE l.codebook = ? "
            "AND l.coder = ? AND (l.value IS NOT NULL OR l.codes IS NOT NULL)"
        )
        if sample is not None:
            sql += (
                " AND EXISTS (SELECT 1 FROM sample_items s INDEXED BY sample_items_action "
                "WHERE s.sample = ? AND s.action_id = l.action_id)"
            )
        extra = (sample,) if sample is not None else ()
        return [
            c
            for c in coders
            if self.db.conn.execute(
                sql.format(labels=labels_from([c], "labels_progress")) + " LIMIT 1",
                (codebook, c, *extra),
            ).fetchone()
        ]

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
            f"SELECT l.action_id, l.coder FROM {{labels}} WHERE l.codebook = ? "
            f"AND l.coder IN ({marks}) AND (l.value IS NOT NULL OR l.codes IS NOT NULL)"
        )
        params: tuple[str, ...] = (codebook, *coders)
        if question is not None:
            sql += " AND l.question = ?"
            params += (question,)
        sql += self._agree_items(action_ids, sample)
        params += (sample,) if sample is not None else ()
        both, all_params = union_all(sql, params, label_sources(coders, "labels_answered"))
        sql = f"SELECT action_id FROM ({both}) GROUP BY action_id HAVING count(DISTINCT coder) >= 2"
        return self.db.conn.execute(f"SELECT count(*) FROM ({sql})", all_params).fetchone()[0]

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
            "SELECT l.action_id, l.coder, l.id FROM {labels} "
            f"WHERE l.codebook = ? AND l.question = ? AND l.coder IN ({marks}) "
            "AND (l.value IS NOT NULL OR l.codes IS NOT NULL)"
        )
        sql += self._agree_items(action_ids, sample)
        params = (codebook, question, *coders) + ((sample,) if sample is not None else ())
        both, all_params = union_all(sql, params, label_sources(coders, "labels_answered"))
        return {(r[0], r[1]): r[2] for r in self.db.conn.execute(both, all_params)}

    # -- runs ---------------------------------------------------------------------------

    def why_runs_cannot_be_stored(self) -> str | None:
        """Why a run cannot be stored here (a read-only file, folder or file system), if it
        cannot: `agree` then reports without storing, where a write would fail."""
        return self.db.why_unwritable()

    def save_agreement_run(self, run: AgreementRunRecord) -> int:
        """Store a run and the ids of its labels in one transaction; return its id."""
        with self.db.transaction() as conn:
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
                ids, digests = _label_set(run.label_ids, run.aligned_digests)
                row = conn.execute(
                    "INSERT INTO agreement_run_label_sets (run_id, label_ids, digests) "
                    "VALUES (?, zeroblob(?), zeroblob(?))",
                    (run_id, len(ids), len(digests)),
                ).lastrowid
                for column, data in (("label_ids", ids), ("digests", digests)):
                    _write_blob(conn, column, int(row or 0), data)
            else:
                found = run.label_digests or {}
                conn.executemany(
                    "INSERT OR IGNORE INTO agreement_run_labels (run_id, label_id, digest) "
                    "VALUES (?, ?, ?)",
                    ((run_id, i, found.get(i)) for i in run.label_ids),
                )
        return run_id

    def same_agreement_run(self, run: AgreementRunRecord) -> int | None:
        """The newest stored run with the same inputs, settings, version and labels (ids
        and content hash), so its results are this run's; None when there is none."""
        rows = self.db.conn.execute(
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
        if not rows:
            return None
        import numpy as np

        wanted = np.asarray(run.label_ids, dtype=np.int64)
        if wanted.size and not (wanted[1:] > wanted[:-1]).all():  # not sorted and unique
            wanted = np.sort(wanted)
            wanted = wanted[np.r_[True, wanted[1:] != wanted[:-1]]]
        for (run_id,) in rows:
            stored = self.db.conn.execute(
                "SELECT label_ids FROM agreement_run_label_sets WHERE run_id = ?", (run_id,)
            ).fetchone()
            if stored is not None:  # compared where it lies: no copy of either side
                if np.array_equal(np.frombuffer(stored[0], dtype=IDS_DTYPE), wanted):
                    return int(run_id)
                continue
            ids = self.db.conn.execute(
                "SELECT label_id FROM agreement_run_labels WHERE run_id = ? ORDER BY label_id",
                (run_id,),
            ).fetchall()
            if [i for (i,) in ids] == wanted.tolist():
                return int(run_id)
        return None

    def _run_label_set(self, run_id: int) -> tuple[bytes, bytes | None] | None:
        """The run's packed label ids and digests (migration 13), None for a run stored
        before, whose labels are rows of ``agreement_run_labels``."""
        row = self.db.conn.execute(
            "SELECT label_ids, digests FROM agreement_run_label_sets WHERE run_id = ?", (run_id,)
        ).fetchone()
        return None if row is None else (bytes(row[0]), None if row[1] is None else bytes(row[1]))

    def agreement_run(self, run_id: int) -> dict[str, Any]:
        row = self.db.conn.execute(
            "SELECT * FROM agreement_runs WHERE id = ?", (run_id,)
        ).fetchone()
        if row is None:
            raise NotFoundError(
                f"no agreement run {run_id}", hint="runs are listed by `annotate agree --runs`"
            )
        out = dict(row)
        for key in ("label_codebook_hashes", "coders", "questions", "settings", "results"):
            out[key] = json.loads(out[key])
        packed = self._run_label_set(run_id)
        if packed is not None:
            ids, digests = unpack_label_set(*packed)
            out["label_ids"] = ids
            out["label_digests"] = dict(zip(ids, digests, strict=True))
            return out
        rows = self.db.conn.execute(
            "SELECT label_id, digest FROM agreement_run_labels WHERE run_id = ? ORDER BY label_id",
            (run_id,),
        ).fetchall()
        out["label_ids"] = [r[0] for r in rows]
        out["label_digests"] = {r[0]: r[1] for r in rows}  # digest None: run stored before m005
        return out

    def agreement_runs(self) -> list[dict[str, Any]]:
        """Every run, newest first, without results."""
        rows = self.db.conn.execute(
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

    def label_revisions(self, label_ids: Sequence[int]) -> tuple[Any, Any]:
        """The ids (sorted) and revisions of those of these labels still stored and answered,
        as NumPy int64 arrays."""
        import numpy as np

        ids = list(label_ids)
        found: list[tuple[int, int]] = []
        for start in range(0, len(ids), 900):
            chunk = ids[start : start + 900]
            marks = ",".join("?" * len(chunk))
            found += map(
                tuple,
                self.db.conn.execute(
                    f"SELECT id, revision FROM labels WHERE id IN ({marks}) "
                    "AND (value IS NOT NULL OR codes IS NOT NULL)",
                    chunk,
                ),
            )
        found.sort()
        table = np.array(found, dtype=np.int64).reshape(-1, 2)
        return table[:, 0], table[:, 1]

    def labels_by_id(self, label_ids: Sequence[int]) -> list[dict[str, Any]]:
        """The current content of these labels (those still stored), by id."""
        out: list[dict[str, Any]] = []
        ids = list(label_ids)
        for start in range(0, len(ids), 900):
            chunk = ids[start : start + 900]
            marks = ",".join("?" * len(chunk))
            out.extend(
                dict(r)
                for r in self.db.conn.execute(
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
        self.labels.save_answers(codebook, writes, provenance=True)
