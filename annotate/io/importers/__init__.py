"""Importers, one module per source format, registered here.

Each parses a file into a stream of actions shaped like ours (plus labels that came with
the data, and problems); :mod:`annotate.io.importing` stores them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from annotate.errors import ImportFormatError, UsageError
from annotate.io.importers import fields, generic, maptask, platform
from annotate.io.importers.base import ImportOptions, Item, SourceFormat
from annotate.io.importers.encoding import not_utf8

PARSERS: dict[str, SourceFormat] = {
    "platform": SourceFormat(platform.parse, order_by_timestamp=True, infer_roles=True),
    "maptask": SourceFormat(maptask.parse),
    "jsonl": SourceFormat(generic.parse_jsonl),
    "csv": SourceFormat(generic.parse_csv),
}
SUFFIXES = {".jsonl", ".json", ".ndjson", ".csv", ".txt"}


def expand(paths: list[Path]) -> list[Path]:
    """Files named, and the importable files inside folders named (sorted)."""
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            found = sorted(f for f in p.iterdir() if f.is_file() and f.suffix in SUFFIXES)
            if not found:
                raise UsageError(f"{p}: no .jsonl, .csv or .txt files in this folder")
            files += found
        elif p.is_file():
            files.append(p)
        else:
            raise UsageError(f"{p}: no such file or folder")
    return files


DETECT_LINES = 20


def _head(path: Path) -> list[str]:
    """The first non-blank lines of a file, enough to tell its format."""
    lines: list[str] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                lines.append(line)
                if len(lines) == DETECT_LINES:
                    break
    return lines


def _json_object(line: str) -> dict | None:
    try:
        obj = fields.json_line(line)
    except ValueError:  # bad JSON, nested too deep, not Unicode: the parser names the line
        return None
    return obj if isinstance(obj, dict) else None


def detect(path: Path) -> str:
    """The format of a file, from its suffix and first lines: one broken line near the top
    does not change the verdict (the parser then reports that line)."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return "csv"
    try:
        head = _head(path)
    except UnicodeDecodeError:
        raise not_utf8(path) from None
    if suffix == ".txt":
        if any(maptask.looks_like_maptask(line) for line in head):
            return "maptask"
        raise ImportFormatError(
            f"{path}: none of the first {len(head)} lines is a speaker|text|label dialogue line",
            hint="pass --format to say what it is",
        )
    if suffix in {".jsonl", ".json", ".ndjson"}:
        first = next((obj for obj in map(_json_object, head) if obj is not None), None)
        if first is not None and platform.looks_like_platform(first):
            return "platform"
        return "jsonl"
    raise ImportFormatError(
        f"{path}: cannot tell the format from the name",
        hint="pass --format " + "|".join(PARSERS),
    )


def source_format(path: Path, fmt: str | None) -> tuple[str, SourceFormat]:
    chosen = fmt or detect(path)
    if chosen not in PARSERS:
        raise UsageError(f"unknown format '{chosen}'", hint="formats: " + ", ".join(PARSERS))
    return chosen, PARSERS[chosen]


def parse_file(path: Path, fmt: SourceFormat, options: ImportOptions) -> Iterator[tuple[int, Item]]:
    try:
        yield from fmt.parse(path, options)
    except UnicodeDecodeError:
        raise not_utf8(path) from None


__all__ = ["PARSERS", "ImportOptions", "Item", "detect", "expand", "parse_file", "source_format"]
