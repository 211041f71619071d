"""Each label's revision (migration 14): the first 8 bytes of the SHA-256 of its content
(item, question, coder, answer, Other text, codebook version), as a signed 64-bit integer.

The store computes it here, in Python, on every write of a label (a coder's or gold, one
row or a million: :func:`register_answer_revision` for SQL that writes many), so `agree`
reads it from an index with the answer instead of hashing every label it uses; a run keeps
the revision of each label to tell later which labels changed. A label's revision changes
exactly when its content does (its provenance, note, flag or time are not content). Nothing
in the schema sets one any more (migration 23 dropped the triggers that gave a random
revision to a write made in SQL): SQL that writes ``coder_labels`` or ``gold`` itself must
set it as :func:`content_revision` computes it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Sequence
from json.encoder import encode_basestring  # json.dumps' own, for ensure_ascii=False
from typing import Any

CHUNK = 5_000


def label_content(
    action_id: str,
    question: str,
    coder: str,
    value: str | None,
    codes: Sequence[str],
    other_text: str | None,
    codebook_hash: str,
) -> str:
    """A label's content as compact JSON (what its revision hashes)."""
    return json.dumps(
        [action_id, question, coder, value, list(codes), other_text, codebook_hash],
        ensure_ascii=False,
        separators=(",", ":"),
    )


def content_revision(*content: Any) -> int:
    """The revision of a label with this content (the arguments of :func:`label_content`)."""
    return item_revision(content[0], answer_tail(*content[1:]))


def answer_tail(*answer: Any) -> str:
    """What follows the item in :func:`label_content` (its arguments but the action id):
    the same for every item given the same answer by the same coder."""
    return label_content("", *answer)[3:]  # after '[""'


def item_revision(action_id: str, tail: str) -> int:
    """The revision of the label on ``action_id`` whose content ends with ``tail`` (see
    :func:`answer_tail`): one answer written on many items is encoded once."""
    text = "[" + encode_basestring(action_id) + tail
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big", signed=True)


def revision_hex(revision: int) -> str:
    """A revision as the 16 hex digits of its 8 bytes (a label's digest)."""
    return f"{revision & 0xFFFF_FFFF_FFFF_FFFF:016x}"


def stored_revision(row: Sequence[Any]) -> int:
    """The revision of a stored row (action id, question, coder, value, codes JSON, Other
    text, codebook hash)."""
    action_id, question, coder, value, codes, other_text, codebook_hash = row
    found = json.loads(codes) if codes else ()
    return content_revision(action_id, question, coder, value, found, other_text, codebook_hash)


def refresh_revisions(
    conn: sqlite3.Connection,
    where: str = "1",
    params: Sequence[Any] = (),
    table: str = "coder_labels",
) -> int:
    """Set the revision of the coders' labels matching ``where`` to their content's hash
    (after a copy or upgrade made in SQL); return how many were read. ``table``: the
    coders' table (``labels`` before migration 20)."""
    cursor = conn.execute(
        "SELECT id, action_id, question, coder, value, codes, other_text, codebook_hash "
        f"FROM {table} WHERE {where}",
        params,
    )
    n = 0
    while rows := cursor.fetchmany(CHUNK):
        conn.executemany(
            f"UPDATE {table} SET revision = ? WHERE id = ?",
            [(stored_revision(r[1:]), r[0]) for r in rows],
        )
        n += len(rows)
    return n


ANSWER_REVISION = "answer_revision"
"""The SQL function :func:`register_answer_revision` adds."""


def register_answer_revision(
    conn: sqlite3.Connection, answers: Iterable[Sequence[Any]], coder: str
) -> None:
    """Add to ``conn`` the SQL function ``answer_revision(action_id, key)``: the revision
    of ``coder``'s label on that item with the answer ``key`` of ``answers`` (rows of key,
    question, value, codes JSON, Other text, codebook hash), so that one statement writing
    many labels gives each its content's hash (each answer's JSON encoded once)."""
    tails = {
        key: answer_tail(
            question, coder, value, json.loads(codes) if codes else (), other_text, version
        ).encode()
        for key, question, value, codes, other_text, version in answers
    }
    sha256, quoted, from_bytes = hashlib.sha256, encode_basestring, int.from_bytes

    def revision(action_id: str, key: int) -> int:  # item_revision, inlined: once a row
        digest = sha256(b"[" + quoted(action_id).encode() + tails[key]).digest()
        return from_bytes(digest[:8], "big", signed=True)

    conn.create_function(ANSWER_REVISION, 2, revision, deterministic=True)
