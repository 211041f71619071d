"""Domain errors. Library code raises these; the CLI prints them as one line and exits 1."""

from __future__ import annotations


class AnnotateError(Exception):
    """Base class: ``message`` is one line; ``hint`` says what to do about it."""

    def __init__(self, message: str, *, hint: str | None = None, details: list[str] | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.details = details or [message]


class StoreError(AnnotateError):
    """The SQLite file cannot be used (newer schema, locked, not a database...)."""


class ImportFormatError(AnnotateError):
    """A source file has a malformed line or a missing field."""


class CodebookError(AnnotateError):
    """A codebook file is invalid, or a label does not fit its codebook."""


class NotFoundError(AnnotateError):
    """A named thing (sample, coder, run...) does not exist in the store."""


class UsageError(AnnotateError):
    """Arguments that cannot work together, or a step run before the one it needs."""
