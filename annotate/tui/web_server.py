"""`--web`: the coding app served to one browser tab on 127.0.0.1, behind a per-run secret.

textual-serve answers anyone who reaches the port, and a page on any site the coder visits
can open a WebSocket to ``ws://127.0.0.1:PORT``. So, as Jupyter does, the command prints an
address holding a token made for this run; the page must be opened with it (it is then kept
in a same-site cookie) and the WebSocket must carry it, come from the page's own origin and
name the served host (DNS rebinding). One coder has one live session: a tab that connects
takes over and the previous tab's app is stopped (its answers saved) before the new one
starts, so two tabs never write at once.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
from collections.abc import Awaitable, Callable

from aiohttp import web
from textual_serve.server import Server

COOKIE = "annotate-token"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def new_token() -> str:
    return secrets.token_urlsafe(24)


def web_url(port: int, token: str) -> str:
    """The address the command prints: the only one the server answers."""
    return f"http://127.0.0.1:{port}/?token={token}"


def allowed_hosts(port: int) -> frozenset[str]:
    return frozenset({f"127.0.0.1:{port}", f"localhost:{port}"})


class GuardedServer(Server):
    """textual-serve's server with the token, Host and Origin checks and one live session."""

    def __init__(self, command: str, *, port: int, title: str, token: str) -> None:
        super().__init__(command, host="127.0.0.1", port=port, title=title)
        self.token = token
        self.hosts = allowed_hosts(port)
        self.origins = frozenset(f"http://{host}" for host in self.hosts)
        self._sessions: dict[asyncio.Task[object], asyncio.Event] = {}

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self._guard)
        return app

    def _holds_token(self, request: web.Request) -> bool:
        given = request.query.get("token") or request.cookies.get(COOKIE) or ""
        return hmac.compare_digest(given.encode(), self.token.encode())

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.host not in self.hosts:
            return web.Response(status=403, text="annotate: unknown host\n")
        if request.path.startswith("/static/"):
            return await handler(request)  # the page's scripts and styles: no data
        if request.path == "/ws":
            origin = request.headers.get("Origin")
            if origin not in self.origins:
                return web.Response(status=403, text="annotate: foreign origin\n")
        if not self._holds_token(request):
            return web.Response(
                status=403,
                text="annotate: open the address `annotate code --web` printed "
                "(it holds this run's token)\n",
            )
        response = await handler(request)
        if request.path == "/" and request.query.get("token"):
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="Strict")
        return response

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """A new tab takes over: every earlier session is stopped (and saved) first."""
        task = asyncio.current_task()
        assert task is not None
        done = asyncio.Event()
        earlier = dict(self._sessions)
        self._sessions[task] = done
        try:
            for other in earlier:
                other.cancel()
            await asyncio.gather(*(event.wait() for event in earlier.values()))
            return await super().handle_websocket(request)
        finally:
            del self._sessions[task]
            done.set()

    async def on_startup(self, app: web.Application) -> None:
        """Quiet: the command has printed the address (textual-serve's would lack the token)."""
