"""The two status lines: who codes what, where they are, and how far they have come."""

from __future__ import annotations

from pathlib import Path

from rich.console import RenderableType
from rich.text import Text
from textual.timer import Timer
from textual.widget import Widget

from annotate.coding.context import format_duration
from annotate.coding.session import CodingSession
from annotate.render.terminal import shown_line


def project_file(path: Path, longest: int = 28) -> str:
    """The project file as the coder would type it: relative to the working folder when it
    is inside it, else with ``~`` for the home folder; long paths keep their end."""
    path = path.absolute()
    try:
        shown = str(path.relative_to(Path.cwd()))
    except ValueError:
        try:
            shown = "~/" + str(path.relative_to(Path.home()))
        except ValueError:
            shown = str(path)
    return shown if len(shown) <= longest else "…" + shown[-(longest - 1) :]


class StatusBar(Widget):
    """Project file, codebook, coder, sample, item n of N, counts, a progress bar and the
    time left."""

    DEFAULT_CSS = "StatusBar { height: 2; }"

    def __init__(self, session: CodingSession, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.session = session
        self.message: Text | None = None
        self._said_on: int | None = None  # the item the message is about
        self._timer: Timer | None = None

    def flash(self, message: str, *, warning: bool = False, seconds: float = 4.0) -> None:
        """Show a short message in place of the header line for a few seconds, or until
        another item opens ("Note saved." is about the item it was said on)."""
        style = "bold yellow" if warning else "bold"
        self.message = Text.assemble(("» " + shown_line(message), style))
        self._said_on = self.session.index
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(seconds, self._clear)
        self.refresh()

    def _clear(self) -> None:
        self.message = None
        self._timer = None
        self.refresh()

    def render(self) -> RenderableType:
        s = self.session
        cb = s.codebook
        counts = s.counts()
        width = max(self.size.width, 40)
        left = Text.assemble((shown_line(cb.name), "bold"), f" v{shown_line(str(cb.version))}")
        if s.version_warning:  # before the rest: a narrow terminal cuts the end off
            left.append(" ⚠ changed", "bold yellow")
        left.append_text(Text.assemble(" │ coder ", (shown_line(s.coder), "bold")))
        left.append_text(Text.assemble(" │ sample ", (shown_line(s.sample), "bold")))
        if s.is_new_coder and counts.coded == 0:
            left.append(" (new)", "italic")
        right = Text.assemble("item ", (str(s.index + 1), "bold"), f" of {s.n}")
        room = min(max(width - len(left) - len(right) - 4, 12), 48)  # the file gets what is left
        left = Text.assemble((shown_line(project_file(s.store.path, room)), "bold"), " │ ", left)
        if self._said_on != s.index:  # another item opened: the message was about the last
            self.message = None
        top = (self.message or left).copy()
        top.truncate(width - len(right) - 1, overflow="ellipsis")
        top.append(" " * (width - len(top) - len(right)))
        top.append_text(right)

        eta = s.eta_seconds()
        done = counts.coded / counts.n if counts.n else 1.0
        tally = Text.assemble(
            "coded ",
            (str(counts.coded), "bold green"),
            " · skipped ",
            (str(counts.skipped), "bold"),
            " · flagged ",
            (str(counts.flagged), "bold magenta" if counts.flagged else "bold"),
        )
        tail = Text(
            f"{done:4.0%} · "
            + (f"~{format_duration(eta)} left" if eta is not None else "time left: —")
        )
        bar_width = width - len(tally) - len(tail) - 2
        bottom = tally.copy()
        if bar_width >= 5:
            filled = round(bar_width * done)
            bottom.append(" ")
            bottom.append("━" * filled, style="green")
            bottom.append("━" * (bar_width - filled), style="dim")
            bottom.append(" ")
        else:
            bottom.append(" " * max(width - len(tally) - len(tail), 1))
        bottom.append_text(tail)
        return Text("\n", no_wrap=True, overflow="crop", end="").join([top, bottom])
