"""The two consoles every report and message goes through (standard output and error)."""

from __future__ import annotations

from annotate.render.output import OutputStream
from annotate.render.terminal import TerminalConsole

# every report and message: written by the one writer (a failed write is an error, not a
# silent truncation), with control characters of log content shown escaped
console = TerminalConsole(file=OutputStream(), highlight=False)
err_console = TerminalConsole(file=OutputStream(err=True), highlight=False)
