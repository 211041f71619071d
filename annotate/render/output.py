"""The one writer for standard output and standard error.

Every byte a command prints goes through :func:`write_out`: it writes in chunks straight to
the file descriptor, so nothing is held in a buffer that could fail unseen at exit, short
writes are continued, and a write that fails (a full disk, ``ulimit -f``, a closed pipe)
becomes an :class:`OutputError`: one line on stderr and exit 1, never a truncated file with
exit 0. Text is written as UTF-8, byte for byte: nothing is stripped in a file or a pipe
(:func:`write_data` shows control characters escaped when stdout is a terminal).
"""

from __future__ import annotations

import io
import os
import sys
from contextlib import suppress
from typing import TextIO

from annotate.errors import AnnotateError

CHUNK = 1 << 16


class OutputError(AnnotateError):
    """Standard output or standard error could not be written."""


def _stream(err: bool) -> TextIO:
    return sys.stderr if err else sys.stdout


def _fileno(stream: TextIO) -> int | None:
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None  # a stream in memory (a test runner's capture)
    return fd if fd >= 0 else None  # Textual's capture of print() answers -1


def write_out(data: str | bytes, *, err: bool = False) -> None:
    """Write ``data`` to stdout (or stderr), all of it or an :class:`OutputError`."""
    stream = _stream(err)
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    fd = _fileno(stream)
    try:
        if fd is None:
            buffer = getattr(stream, "buffer", None)
            if buffer is not None:
                buffer.write(raw)
                buffer.flush()
            else:
                stream.write(raw.decode("utf-8", "surrogatepass"))
                stream.flush()
            return
        stream.flush()  # whatever Python's own buffer holds goes first
        view = memoryview(raw)
        while view:
            written = os.write(fd, view[:CHUNK])
            view = view[written:]
    except OSError as exc:
        name = "standard error" if err else "standard output"
        raise OutputError(
            f"{name}: cannot write ({exc.strerror or exc}); the output is incomplete"
        ) from None


def tell_waiting(message: str) -> None:
    """Say on stderr what a command waits for (another writer, an upgrade): the store's
    ``on_wait``. A stderr that is gone is no reason to stop: waiting is all that is left."""
    with suppress(OutputError):
        write_out(message + "\n", err=True)


def stdout_is_terminal() -> bool:
    isatty = getattr(sys.stdout, "isatty", None)
    return bool(isatty and isatty())


def write_data(text: str) -> None:
    """Data that holds log content (an export): byte for byte into a file or a pipe; on a
    terminal, control characters are shown escaped (:func:`annotate.render.terminal.shown`), so
    that a message cannot send the terminal commands."""
    if stdout_is_terminal():
        from annotate.render.terminal import shown

        text = shown(text)
    write_out(text)


class OutputStream(io.TextIOBase):
    """A text stream over :func:`write_out`, for Rich consoles.

    It looks up ``sys.stdout`` at each write, as Rich does, so a test runner's capture
    still sees the output."""

    def __init__(self, *, err: bool = False) -> None:
        super().__init__()
        self.err = err

    def write(self, text: str) -> int:  # type: ignore[override]
        write_out(text, err=self.err)
        return len(text)

    def flush(self) -> None:
        pass

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        isatty = getattr(_stream(self.err), "isatty", None)
        return bool(isatty and isatty())

    def fileno(self) -> int:
        fd = _fileno(_stream(self.err))
        if fd is None:
            raise io.UnsupportedOperation("fileno")
        return fd

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"
