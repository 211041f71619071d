"""The hashes that tie an agreement run to the exact labels it used: one label's digest and the
hash of them all (and the one runs stored before per-label digests used)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from annotate.reliability.question_labels import labels_hash_of
from annotate.store.revisions import content_revision, revision_hex


def labels_hash(rows: Sequence[dict[str, Any]]) -> str:
    """SHA-256 of the labels' content (item, question, coder, answer, codebook version) as
    a run keeps it (:func:`~annotate.reliability.question_labels.labels_hash_of`)."""
    digests = [int(label_digest(r), 16) for r in rows]
    return labels_hash_of(np.array(digests, dtype=np.uint64).view(np.int64))


def legacy_labels_hash(rows: Sequence[dict[str, Any]]) -> str:
    """SHA-256 of the labels' content as runs stored before annotate kept each label's
    digest hashed it."""
    canonical = sorted(_content(r) for r in rows)
    text = json.dumps(canonical, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _content(r: dict[str, Any]) -> tuple[Any, ...]:
    return (
        r["action_id"],
        r["question"],
        r["coder"],
        r["value"],
        list(r["codes"] or ()),
        r["other_text"],
        r["codebook_hash"],
    )


def label_digest(row: dict[str, Any]) -> str:
    """A short SHA-256 of one label's content (its revision as hex), to tell later whether
    that label changed."""
    return revision_hex(
        content_revision(*(row[k] for k in ("action_id", "question", "coder", "value")),
                         row["codes"] or (), row["other_text"], row["codebook_hash"])
    )  # fmt: skip
