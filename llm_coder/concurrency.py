"""How many requests to keep in flight: what the server says it serves at once, else a
limit that steps down while the server answers one request at a time.

llama.cpp's ``llama-server`` says how many requests it decodes in parallel (``GET /props``:
``total_slots``; ``GET /slots``: one entry per slot). llama-cpp-python's server (the one of
``../shared/llm/serve.sh``) answers neither (HTTP 404) and serves one request at a time: with
8 in flight, each waits for those before it, so its latency grows with the requests in
flight, and a request that waits longer than ``--timeout`` is retried. :class:`AdaptiveLimit`
sees that growth (or a timeout) and halves the limit until it stops.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import urllib.error
import urllib.request
from urllib.parse import urlsplit, urlunsplit

DEFAULT_CONCURRENCY = 8
PROBE_TIMEOUT_S = 5.0
MIN_LATENCY_S = 0.2
"""Below this median latency a window says nothing of the server's queue (the client's own
work on a busy machine grows with the requests in flight too); an LLM's reply takes longer."""
QUEUEING = 0.6
"""A reply waited for the requests before it when its latency is at least this share of
(requests in flight x the fastest latency seen): a server that answers one at a time gives
about 1.0, one that answers them in parallel much less."""


def _root(base_url: str) -> str:
    """``http://host:8080/v1`` -> ``http://host:8080`` (llama.cpp serves /props at the root)."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/")
    path = path.removesuffix("/v1")
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _get_json(url: str, api_key: str | None) -> object | None:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S) as response:
            return json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None


def server_slots(base_url: str, api_key: str | None = None) -> int | None:
    """The requests the server decodes in parallel, where it says (llama.cpp ``/props``
    ``total_slots``, else the length of ``/slots``); None when it does not."""
    root = _root(base_url)
    props = _get_json(f"{root}/props", api_key)
    if isinstance(props, dict):
        total = props.get("total_slots")
        if isinstance(total, int) and total > 0:
            return total
    slots = _get_json(f"{root}/slots", api_key)
    if isinstance(slots, list) and slots:
        return len(slots)
    return None


class AdaptiveLimit:
    """At most ``limit`` requests in flight; with ``adapt``, the limit is halved when a
    request times out, or when the replies of a window waited for the requests before them
    (their median latency is :data:`QUEUEING` x in flight x the fastest latency seen)."""

    def __init__(self, limit: int, *, adapt: bool = False):
        if limit < 1:
            raise ValueError("concurrency must be at least 1")
        self.limit = limit
        self.adapt = adapt
        self.in_flight = 0
        self.sending = 0
        self.fastest = float("inf")
        self.changes: list[str] = []
        self._window: list[tuple[float, int]] = []
        self._cond = asyncio.Condition()

    async def __aenter__(self) -> AdaptiveLimit:
        async with self._cond:
            await self._cond.wait_for(lambda: self.in_flight < self.limit)
            self.in_flight += 1
        return self

    async def __aexit__(self, *exc: object) -> None:
        async with self._cond:
            self.in_flight -= 1
            self._cond.notify_all()

    def record(self, latency_s: float, crowd: int) -> None:
        """A reply came after ``latency_s`` seconds, sent with ``crowd`` requests in flight
        (itself included)."""
        if not self.adapt or self.limit == 1:
            return
        self.fastest = min(self.fastest, latency_s)
        self._window.append((latency_s, crowd))
        if len(self._window) < max(4, self.limit):
            return
        latency = statistics.median(x for x, _ in self._window)
        crowded = statistics.median(c for _, c in self._window)
        self._window.clear()
        if crowded > 1 and latency >= max(MIN_LATENCY_S, QUEUEING * crowded * self.fastest):
            self._step_down(
                f"the server answered one request at a time: median latency {latency:.1f} s "
                f"with {crowded:g} in flight, the fastest {self.fastest:.1f} s"
            )

    def timed_out(self) -> None:
        if self.adapt and self.limit > 1:
            self._window.clear()
            self._step_down("a request timed out")

    def _step_down(self, why: str) -> None:
        new = max(1, self.limit // 2)
        self.changes.append(f"{self.limit} -> {new} ({why})")
        self.limit = new
