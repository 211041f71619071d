"""The two status lines: who codes what, where they are, and how far they have come."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text
from textual.timer import Timer
from textual.widget import Widget

from annotate.coding_session import CodingSession, format_duration


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
        self.message = Text("» " + message, style=style)
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
        left = Text.assemble(
            (cb.name, "bold"),
            f" v{cb.version} │ coder ",
            (s.coder, "bold"),
            " │ sample ",
            (s.sample, "bold"),
        )
        if s.is_new_coder and counts.coded == 0:
            left.append(" (new)", "italic")
        if s.version_warning:
            left.append("  ⚠ codebook changed", "bold yellow")
        top = Table.grid(expand=True)
        top.add_column(ratio=1, no_wrap=True, overflow="ellipsis")
        top.add_column(justify="right", no_wrap=True)
        top.add_row(
            self.message or left, Text.assemble("item ", (str(s.index + 1), "bold"), f" of {s.n}")
        )

        eta = s.eta_seconds()
        done = counts.coded / counts.n if counts.n else 1.0
        bottom = Table.grid(expand=True, padding=(0, 1))
        bottom.add_column(no_wrap=True)
        bottom.add_column(ratio=1)
        bottom.add_column(no_wrap=True, justify="right")
        bottom.add_row(
            Text.assemble(
                "coded ",
                (str(counts.coded), "bold green"),
                " · skipped ",
                (str(counts.skipped), "bold"),
                " · flagged ",
                (str(counts.flagged), "bold magenta" if counts.flagged else "bold"),
            ),
            ProgressBar(total=max(counts.n, 1), completed=counts.coded, width=None),
            Text(
                f"{done:4.0%} · "
                + (f"~{format_duration(eta)} left" if eta is not None else "time left: —")
            ),
        )
        return Group(top, bottom)
