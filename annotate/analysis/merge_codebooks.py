"""A foreign file's codebook versions are checked before a merge copies any of them.

A version is identified by its content hash, and labels and agreement reports trust that
the stored text is the version the hash names. A project file changed outside annotate can
break that promise: a ``traum`` row dated 2099 with made-up questions would become the
newest ``traum`` and take over ``agree --codebook traum``. Every version in the other file
is therefore parsed as this program would store it (an old version, ``other_by_default`` = 1,
read with the pre-schema-7 meaning of an omitted ``allow_other``) and its hash recomputed;
any mismatch refuses the whole merge before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from annotate.codebook import parse_codebook
from annotate.errors import CodebookError

HINT = "the file was changed outside annotate: nothing was merged; ask for a fresh copy"


def _refuse(other: Path, row: Mapping[str, Any], problem: str) -> CodebookError:
    return CodebookError(
        f"{other}: codebook '{row['name']}' version {row['version_hash']}: {problem}",
        hint=HINT,
    )


def check_codebooks(other: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Refuse the first stored version whose text does not give its name, hash, title and
    version (rows: the ``codebooks`` table of ``other``)."""
    for row in rows:
        try:
            cb = parse_codebook(
                row["text"] or "",
                f"{row['name']}.yaml",
                other_by_default=bool(row["other_by_default"]),
            )
        except CodebookError as exc:
            raise _refuse(other, row, f"its text is not a valid codebook ({exc.message})") from None
        if cb.version_hash != row["version_hash"]:
            raise _refuse(other, row, f"its text hashes to {cb.version_hash}, not to its version")
        for column, value in (("name", cb.name), ("title", cb.title), ("version", cb.version)):
            if row[column] != value:
                raise _refuse(other, row, f"its {column} column differs from its text")
