"""A file that is not UTF-8: the error names the line and column of the first bad byte.

Text-mode reading reports an offset inside a decoding buffer, not a line; the file is read
again in binary, line by line, only after a decode error (UTF-8 never uses the newline byte
inside a character, so each line decodes on its own).
"""

from __future__ import annotations

from pathlib import Path

from annotate.errors import ImportFormatError

HINT = "save the file as UTF-8 (in Excel: CSV UTF-8)"


def first_bad_byte(path: Path) -> tuple[int, int, int] | None:
    """(line, column, byte) of the first byte that is not UTF-8, or None."""
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                return lineno, exc.start + 1, raw[exc.start]
    return None


def not_utf8(path: Path) -> ImportFormatError:
    """The error for a file that failed to decode: ``file:line: not UTF-8 text (...)``."""
    found = first_bad_byte(path)
    if found is None:  # the decoder saw what a line-by-line reading does not
        return ImportFormatError(f"{path}: not UTF-8 text", hint=HINT)
    line, column, byte = found
    return ImportFormatError(
        f"{path}:{line}: not UTF-8 text (byte {byte:#04x} at column {column})", hint=HINT
    )
