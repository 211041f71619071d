"""The self-annotation app: the coding app over a participant's own actions, with the
anchor line (their closest checkpoint answer) above the question."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from textual.app import ComposeResult
from textual.widgets import Static

from annotate.coding.self_mode import SelfCodingSession
from annotate.coding.session_inputs import resolve_codebook
from annotate.media import MediaLocator
from annotate.render.output import tell_waiting
from annotate.render.terminal import shown_line
from annotate.store import Store
from annotate.tui.app import CodingApp, attach_media
from annotate.tui.screens.coding import CodingScreen


class AnchorLine(Static):
    DEFAULT_CSS = """
    AnchorLine {
        height: auto; max-height: 3; padding: 0 1;
        background: $boost; color: $text; text-style: italic;
    }
    """


class SelfCodingScreen(CodingScreen):
    session: SelfCodingSession

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            if widget.id == "question":
                yield AnchorLine(id="anchor")
            yield widget

    def refresh_view(self) -> None:
        self.query_one(AnchorLine).update(shown_line(self.session.anchor_text()))
        super().refresh_view()


class SelfCodingApp(CodingApp):
    screen_class = SelfCodingScreen


def make_self_app(
    db: Path | str,
    codebook: str,
    who: str,
    *,
    session: str | None = None,
    checkpoints: Path | None = None,
    context: int = 8,
    lookahead: int = 0,
    clock: Callable[[], float] | None = None,
    media: MediaLocator | None = None,
) -> SelfCodingApp:
    """Open ``db`` and ``who``'s self-annotation session; raise a domain error if it
    cannot start (an unknown participant, a bad checkpoints file)."""
    store = Store(db, create=False, on_wait=tell_waiting)
    try:
        loaded = resolve_codebook(store, codebook)
        kwargs = {"clock": clock} if clock is not None else {}
        coding = SelfCodingSession(
            store,
            loaded,
            who,
            session=session,
            checkpoints=checkpoints,
            context=context,
            lookahead=lookahead,
            **kwargs,
        )
        coding.load_checkpoints()
    except BaseException:
        store.close()
        raise
    attach_media(coding, media)
    return SelfCodingApp(coding)


def self_web_command(
    db: Path | str,
    codebook: str,
    who: str,
    *,
    session: str | None,
    checkpoints: Path | None,
    context: int,
    lookahead: int,
    extra: Sequence[str] = (),
) -> str:
    """The shell command textual-serve runs for each browser that connects."""
    argv = [
        sys.executable, "-m", "annotate", "code",
        "--codebook", str(Path(codebook).resolve()) if Path(codebook).is_file() else codebook,
        "--self", who,
        "--context", str(context), "--lookahead", str(lookahead),
        "--db", str(Path(db).resolve()),
    ]  # fmt: skip
    if session:
        argv += ["--session", session]
    if checkpoints:
        argv += ["--checkpoints", str(checkpoints.resolve())]
    # exec: the shell gives way, so the app is the server's own child (end_with_the_server)
    return "exec " + shlex.join([*argv, *extra])
