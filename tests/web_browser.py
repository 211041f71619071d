"""Driving `annotate code --web` from a real headless Chromium (Playwright), for the
browser test and benchmarks/bench_web.py.

textual-serve draws the app with xterm.js on a canvas, so the page has no text to read.
What the browser receives is read instead: an init script wraps the page's WebSocket and
keeps the item number most recently written to the terminal ("item #N" in the context's
title), when it arrived, and when the last key went down, all in the page's own clock.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

PRINTED_URL = re.compile(r"http://127\.0\.0\.1:\d+/\?token=[\w-]+")

# The flags that keep Chromium from stalling on a machine with no outside network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

WS_HOOK = r"""
(() => {
  const state = { item: 0, at: 0, keyAt: 0, tail: "", frames: 0 };
  window.__annotate = state;
  window.addEventListener("keydown", () => { state.keyAt = performance.now(); }, true);
  const decoder = new TextDecoder();
  const seen = (text) => {
    const now = performance.now();
    state.frames += 1;
    const plain = state.tail + text.replace(/\x1b\[[0-9;?<>=]*[A-Za-z]/g, "");
    const found = [...plain.matchAll(/item #(\d+)/g)];
    state.tail = plain.slice(-40);  // a title cut between two frames is still found
    if (found.length) {
      const n = Number(found[found.length - 1][1]);
      if (n !== state.item) { state.item = n; state.at = now; }
    }
  };
  const Native = window.WebSocket;
  window.WebSocket = function (...args) {
    const ws = new Native(...args);
    ws.addEventListener("message", (event) => {
      const data = event.data;
      if (typeof data === "string") seen(data);
      else if (data instanceof ArrayBuffer) seen(decoder.decode(new Uint8Array(data)));
      else if (data instanceof Blob) data.arrayBuffer().then((b) => seen(decoder.decode(b)));
    });
    return ws;
  };
  window.WebSocket.prototype = Native.prototype;
  Object.assign(window.WebSocket, Native);
})();
"""


def find_chromium() -> str | None:
    """The system Chromium's executable (Playwright cannot download its own here)."""
    for name in CHROMIUM_NAMES:
        if path := shutil.which(name):
            return path
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(db: Path, coder: str, *extra: str, codebook: str = "traum") -> Iterator[str]:
    """`annotate code --web` on a free port until the block ends; yields the page's URL."""
    with server_process(db, coder, *extra, codebook=codebook) as (_, url):
        yield url


@contextlib.contextmanager
def server_process(
    db: Path, coder: str, *extra: str, codebook: str = "traum"
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """The server's process and the address it printed, until the block ends."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "annotate", "code", "--codebook", codebook, "--coder", coder,
            "--db", str(db), "--web", "--port", str(port), *extra,
        ],
        cwd=db.parent,
        env={**os.environ, "NO_COLOR": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        yield proc, wait_for_address(proc)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def wait_for_address(proc: subprocess.Popen[bytes], timeout: float = 30) -> str:
    """The address `annotate code --web` printed (its token included), once it answers."""
    lines: list[str] = []
    threading.Thread(target=_drain, args=(proc, lines), daemon=True).start()
    deadline = time.monotonic() + timeout
    url = ""
    while True:
        if proc.poll() is not None:
            time.sleep(0.2)  # the drain thread reads what is left
            raise RuntimeError(f"annotate code --web exited: {''.join(lines)}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"annotate code --web never answered: {''.join(lines)}")
        url = url or next((m.group(0) for m in map(PRINTED_URL.search, lines) if m), "")
        try:
            if url:
                with urllib.request.urlopen(url, timeout=2) as r:
                    if r.status == 200:
                        return url
        except OSError:
            pass
        time.sleep(0.2)


def _drain(proc: subprocess.Popen[bytes], lines: list[str]) -> None:
    """Read the server's output as it comes (a full pipe would stall it)."""
    assert proc.stdout is not None
    for raw in proc.stdout:
        lines.append(raw.decode(errors="replace"))


def launch(playwright: Any, executable: str) -> Any:
    """Headless Chromium with a fresh profile (Playwright makes one per launch)."""
    return playwright.chromium.launch(
        executable_path=executable, headless=True, args=CHROMIUM_ARGS
    )


def open_app(
    browser: Any,
    url: str,
    *,
    width: int = 1280,
    height: int = 800,
    on_socket: Callable[[str], object] | None = None,
) -> Any:
    """A new tab on ``url`` with the app running and the terminal focused.

    ``on_socket`` is given the terminal's size ("80x24") from the WebSocket's address."""
    context = browser.new_context(viewport={"width": width, "height": height})
    base = "{0.scheme}://{0.netloc}/".format(urllib.parse.urlparse(url))
    # Only the app's own server: the page also asks for a web font, which would stall.
    context.route(
        "**/*",
        lambda route: route.continue_()
        if route.request.url.startswith(base)
        or route.request.url.startswith(base.replace("http", "ws", 1))
        else route.abort(),
    )
    context.add_init_script(WS_HOOK)
    page = context.new_page()
    if on_socket is not None:
        page.on("websocket", lambda ws: on_socket(_size(ws.url)))
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_function("window.__annotate && window.__annotate.item > 0", timeout=30_000)
    page.locator("#terminal").click()
    return page


def _size(ws_url: str) -> str:
    query = urllib.parse.parse_qs(urllib.parse.urlparse(ws_url).query)
    return f"{query.get('width', ['?'])[0]}x{query.get('height', ['?'])[0]}"


def shown_item(page: Any) -> int:
    """The item number most recently drawn in this tab."""
    return int(page.evaluate("window.__annotate.item"))


def press_and_wait(page: Any, key: str, item: int, timeout_ms: float = 15_000) -> float:
    """Press ``key``; wait until item #``item`` is drawn; return key-down to that frame
    in milliseconds, measured by the page's clock."""
    page.keyboard.press(key)
    page.wait_for_function(f"window.__annotate.item === {item}", timeout=timeout_ms)
    return float(page.evaluate("window.__annotate.at - window.__annotate.keyAt"))
