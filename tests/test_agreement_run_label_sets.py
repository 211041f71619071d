"""A run's label ids and digests stored as two BLOBs of one row (migration 13)."""

from __future__ import annotations

import numpy as np

from annotate.store import Store
from annotate.store.agreement_runs import AgreementRunRecord


def _record(ids, digests=None, labels_digests=None) -> AgreementRunRecord:
    return AgreementRunRecord(
        codebook="traum", codebook_hash="h", label_codebook_hashes=["h"], sample=None,
        sample_hash=None, coders=["ana", "ben"], questions=["act"], label_ids=ids,
        labels_hash="x", settings={}, results={}, annotate_version="0",
        label_digests=labels_digests, aligned_digests=digests,
    )  # fmt: skip


def test_label_ids_and_digests_read_back_sorted_from_one_row(tmp_path) -> None:
    ids = np.array([30, 7, 2**40, 7], dtype=np.int64)  # unsorted, 7 twice
    digests = np.array([0xFF, 0x0123456789ABCDEF, 2**64 - 1, 5], dtype=np.uint64)
    with Store(tmp_path / "p.db") as s:
        run_id = s.agreement.save_agreement_run(_record(ids, digests))
        assert s.db.query("SELECT count(*) FROM agreement_run_labels")[0][0] == 0
        assert s.db.query("SELECT count(*) FROM agreement_run_label_sets")[0][0] == 1
        run = s.agreement.agreement_run(run_id)
        assert run["label_ids"] == [7, 30, 2**40]
        assert run["label_digests"] == {
            7: "0123456789abcdef", 30: "00000000000000ff", 2**40: "ffffffffffffffff"
        }  # fmt: skip
        # the same labels in another order are the same run; one label more is not
        assert (
            s.agreement.same_agreement_run(_record(np.array([2**40, 30, 7]), digests[:3])) == run_id
        )
        assert (
            s.agreement.same_agreement_run(_record(np.array([7, 30, 31, 2**40]), digests)) is None
        )


def test_a_run_without_aligned_digests_keeps_one_row_per_label(tmp_path) -> None:
    with Store(tmp_path / "p.db") as s:
        run_id = s.agreement.save_agreement_run(_record([2, 1], labels_digests={1: "ab" * 8}))
        run = s.agreement.agreement_run(run_id)
        assert run["label_ids"] == [1, 2] and run["label_digests"] == {1: "ab" * 8, 2: None}
        assert s.agreement.same_agreement_run(_record([1, 2])) == run_id


def test_an_empty_run(tmp_path) -> None:
    with Store(tmp_path / "p.db") as s:
        empty = np.empty(0, dtype=np.int64)
        run_id = s.agreement.save_agreement_run(_record(empty, np.empty(0, dtype=np.uint64)))
        assert s.agreement.agreement_run(run_id)["label_ids"] == []
        assert (
            s.agreement.same_agreement_run(_record(empty, np.empty(0, dtype=np.uint64))) == run_id
        )
