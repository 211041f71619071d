"""The coding app: ``make_app()`` builds it for the CLI, the tests and the benchmark.

``make_app`` opens the project file and the :class:`~annotate.coding.session.CodingSession`
before any UI exists, so a wrong codebook, coder or sample is a domain error the CLI
prints as one line. The app then only pushes the coding screen.
"""

from __future__ import annotations

import errno
import logging
import os
import shlex
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from textual.app import App

from annotate.coding.session import CodingSession
from annotate.coding.session_inputs import resolve_codebook
from annotate.errors import UsageError
from annotate.media import MediaLocator
from annotate.render.output import tell_waiting
from annotate.store import Store
from annotate.tui.screen_keys import moved_keymap
from annotate.tui.screens.coding import BINDING_PREFIX, CodingScreen
from annotate.tui.screens.screenshots import session_media


class CodingApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "annotate"
    ENABLE_COMMAND_PALETTE = False
    screen_class: type[CodingScreen] = CodingScreen

    def __init__(self, session: CodingSession, *, own_store: bool = True) -> None:
        super().__init__()
        self.session = session
        self.own_store = own_store
        self._closed = False
        self.sub_title = f"{session.codebook.name} · {session.coder} · {session.sample}"

    def on_mount(self) -> None:
        moved = moved_keymap(BINDING_PREFIX, self.session.keys)
        if moved:
            self.set_keymap(moved)
        self.push_screen(self.screen_class(self.session))

    def on_unmount(self) -> None:
        self.close_session()

    def close_session(self, *, count_time: bool = True) -> None:
        """Count the time on the current item (unless the coder never saw it), then close
        the project file (once)."""
        if self._closed:
            return
        self._closed = True
        try:
            if count_time:
                self.session.close()
        finally:
            if self.own_store:
                self.session.store.close()


def make_app(
    db: Path | str,
    codebook: str,
    coder: str,
    sample: str | None = None,
    *,
    context: int = 8,
    lookahead: int = 0,
    show: Sequence[str] | None = None,
    clock: Callable[[], float] | None = None,
    new_coder: bool = False,
    media: MediaLocator | None = None,
) -> CodingApp:
    """Open ``db`` and a coding session; raise a domain error if it cannot start."""
    store = Store(db, create=False, on_wait=tell_waiting)
    try:
        loaded = resolve_codebook(store, codebook)
        kwargs = {"clock": clock} if clock is not None else {}
        session = CodingSession(
            store,
            loaded,
            coder,
            sample,
            context=context,
            lookahead=lookahead,
            show=show,
            new_coder=new_coder,
            **kwargs,
        )
    except BaseException:
        store.close()
        raise
    attach_media(session, media)
    return CodingApp(session)


def attach_media(session: CodingSession, media: MediaLocator | None) -> None:
    """Give the session where its screenshots are; when it has any, load the image
    renderer now: it asks the terminal about graphics once, before the app starts."""
    session.media = media  # type: ignore[attr-defined]
    if session_media(session) is not None:
        # a terminal that does not answer its queries is normal: no traceback on screen
        logging.getLogger("textual_image").setLevel(logging.CRITICAL)
        import textual_image.widget  # noqa: F401


def web_command(
    db: Path | str,
    codebook: str,
    coder: str,
    sample: str | None,
    *,
    context: int,
    lookahead: int,
    new_coder: bool = False,
    extra: Sequence[str] = (),
) -> str:
    """The shell command textual-serve runs for each browser that connects (``extra``:
    more options of ``annotate code``)."""
    argv = [
        sys.executable,
        "-m",
        "annotate",
        "code",
        "--codebook",
        str(Path(codebook).resolve()) if Path(codebook).is_file() else codebook,
        "--coder",
        coder,
        "--context",
        str(context),
        "--lookahead",
        str(lookahead),
        "--db",
        str(Path(db).resolve()),
    ]
    if sample:
        argv += ["--sample", sample]
    if new_coder:
        argv.append("--new-coder")
    # exec: the shell gives way, so the app is the server's own child (end_with_the_server)
    return "exec " + shlex.join([*argv, *extra])


def _port_error(port: int, exc: OSError) -> UsageError:
    if exc.errno == errno.EADDRINUSE:
        return UsageError(
            f"port {port} on 127.0.0.1 is already in use",
            hint=f"pass another port, e.g. --port {port + 1 if port < 65535 else 8000}",
        )
    return UsageError(
        f"cannot serve on 127.0.0.1:{port}: {exc.strerror or exc}",
        hint="pass another port with --port (1024 to 65535)",
    )


def check_port(port: int) -> None:
    """Raise a one-line error if the web server could not listen on 127.0.0.1:``port``."""
    if not 1 <= port <= 65535:
        raise UsageError(f"--port {port} is not a port number", hint="use 1024 to 65535")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server does
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            raise _port_error(port, exc) from None


def end_with_the_server() -> None:
    """In an app that --web serves (textual-serve sets TEXTUAL_DRIVER): end when the server
    is gone. A server killed with -9 cannot stop its apps, and an app left running would
    hold the project file; every answer is already saved, so ending loses nothing."""
    if not os.environ.get("TEXTUAL_DRIVER"):
        return
    server = os.getppid()

    def watch() -> None:
        while os.getppid() == server:
            time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="end-with-the-server", daemon=True).start()


def serve_web(command: str, *, port: int, title: str, token: str) -> None:
    """Serve ``command`` on 127.0.0.1:``port`` to the holder of ``token`` until Ctrl+C."""
    from annotate.tui.web_server import GuardedServer

    try:
        GuardedServer(command, port=port, title=title, token=token).serve()
    except OSError as exc:  # taken between check_port() and now
        if exc.errno in (errno.EADDRINUSE, errno.EACCES):
            raise _port_error(port, exc) from None
        raise
