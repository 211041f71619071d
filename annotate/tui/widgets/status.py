"""The two status lines: who codes what, where they are, and how far they have come."""

from __future__ import annotations

from rich.console import RenderableType
from rich.text import Text
from textual.timer import Timer
from textual.widget import Widget

from annotate.coding_session import CodingSession, format_duration
from annotate.terminal import shown_line


class StatusBar(Widget):
    """Coder, codebook, sample, item n of N, counts, a progress bar and the time left."""

    DEFAULT_CSS = "StatusBar { height: 2; }"

    def __init__(self, session: CodingSession, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.session = session
        self.message: Text | None = None
        self._timer: Timer | None = None

    def flash(self, message: str, *, warning: bool = False, seconds: float = 4.0) -> None:
        """Show a short message in place of the header line for a few seconds."""
        style = "bold yellow" if warning else "bold"
        self.message = Text.assemble(("» " + shown_line(message), style))
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
        left = Text.assemble(
            (shown_line(cb.name), "bold"),
            f" v{shown_line(str(cb.version))} │ coder ",
            (shown_line(s.coder), "bold"),
            " │ sample ",
            (shown_line(s.sample), "bold"),
        )
        if s.is_new_coder and counts.coded == 0:
            left.append(" (new)", "italic")
        if s.version_warning:
            left.append("  ⚠ codebook changed", "bold yellow")
        right = Text.assemble("item ", (str(s.index + 1), "bold"), f" of {s.n}")
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
