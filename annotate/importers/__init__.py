"""Importers, one module per source format, registered here.

Each parses a file into a stream of actions shaped like ours (plus labels that came with
the data, and problems); :mod:`annotate.importing` stores them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from annotate.errors import ImportFormatError, UsageError
from annotate.importers import generic, maptask, platform
from annotate.importers.base import ImportOptions, Item, SourceFormat

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


def _first_line(path: Path) -> str:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                return line
    return ""


def detect(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return "csv"
    try:
        first = _first_line(path)
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"{path}: not a UTF-8 text file") from exc
    if suffix == ".txt":
        if maptask.looks_like_maptask(first):
            return "maptask"
        raise ImportFormatError(
            f"{path}:1: not a speaker|text|label dialogue file",
            hint="pass --format to say what it is",
        )
    if suffix in {".jsonl", ".json", ".ndjson"}:
        try:
            obj = json.loads(first) if first else {}
        except json.JSONDecodeError:
            return "jsonl"  # the parser reports the line
        return (
            "platform" if isinstance(obj, dict) and platform.looks_like_platform(obj) else "jsonl"
        )
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
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"{path}: not a UTF-8 text file") from exc


__all__ = ["PARSERS", "ImportOptions", "Item", "detect", "expand", "parse_file", "source_format"]
