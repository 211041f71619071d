"""`annotate code --self NAME --web` in headless Chromium: the action's screenshot is shown
beside the item. The page is read twice: the terminal stream must name the screenshot, and
the pixels of the tab must hold the colours of the map the demo drew (its landmarks).

Needs the system Chromium, as tests/test_web_browser.py; skipped, saying so, without it.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from annotate.io.importing import import_files
from annotate.store import Store
from tests.test_coding_support import REPO
from tests.web_browser import (
    CHROMIUM_ARGS,
    WS_HOOK,
    find_chromium,
    free_port,
    wait_for_address,
)

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Chromium not found (apt-get install -y chromium; .ci/run installs it)",
)
DEMO_SELF = REPO / "data" / "demo_self"
TEXT_HOOK = r"""
(() => {
  window.__stream = "";
  const decoder = new TextDecoder();
  const keep = (text) => { window.__stream = (window.__stream + text).slice(-2000000); };
  const Inner = window.WebSocket;
  window.WebSocket = function (...args) {
    const ws = new Inner(...args);
    ws.addEventListener("message", (event) => {
      const data = event.data;
      if (typeof data === "string") keep(data);
      else if (data instanceof ArrayBuffer) keep(decoder.decode(new Uint8Array(data)));
      else if (data instanceof Blob) data.arrayBuffer().then((b) => keep(decoder.decode(b)));
    });
    return ws;
  };
  window.WebSocket.prototype = Inner.prototype;
  Object.assign(window.WebSocket, Inner);
})();
"""
LANDMARKS = {"mill": (150, 90, 40), "lake": (60, 120, 220), "windmill": (200, 60, 60)}


def _serve(db: Path, port: int) -> subprocess.Popen:
    argv = [
        sys.executable, "-m", "annotate", "code", "--codebook", "mental_model_self",
        "--self", "Tom", "--media-prefix", f"s3://demo-bucket/annotation/={DEMO_SELF / 'screens'}",
        "--db", str(db), "--web", "--port", str(port),
    ]  # fmt: skip
    return subprocess.Popen(
        argv,
        cwd=db.parent,
        env={k: v for k, v in os.environ.items() if k != "NO_COLOR"},  # the map's colours
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _near(pixel: tuple[int, ...], colour: tuple[int, int, int], tolerance: int = 12) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(pixel[:3], colour, strict=True))


def test_screenshot_is_displayed_beside_the_item(tmp_path: Path) -> None:
    from PIL import Image
    from playwright.sync_api import sync_playwright

    db = tmp_path / "self.db"
    with Store(db) as store:
        import_files(store, sorted((DEMO_SELF / "log").glob("*.jsonl")))
    port = free_port()
    proc = _serve(db, port)
    try:
        url = wait_for_address(proc)
        base = f"http://127.0.0.1:{port}/"
        with sync_playwright() as pw:
            browser = pw.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
            )
            try:
                context = browser.new_context(viewport={"width": 1280, "height": 800})
                context.route(
                    "**/*",
                    lambda route: route.continue_()
                    if route.request.url.startswith(base)
                    or route.request.url.startswith(base.replace("http", "ws", 1))
                    else route.abort(),
                )
                context.add_init_script(WS_HOOK)
                context.add_init_script(TEXT_HOOK)
                page = context.new_page()
                page.goto(url, wait_until="domcontentloaded")
                page.wait_for_function(  # the rationale's field opens over the top
                    "window.__stream.includes('in your own words')", timeout=30_000
                )
                page.locator("#terminal").click()
                page.keyboard.press("Escape")  # closed: the whole screen, untinted
                page.wait_for_function("window.__annotate.item === 1", timeout=15_000)
                page.wait_for_function(
                    "window.__stream.includes('screenshot: ')", timeout=15_000
                )
                time.sleep(1.0)
                shot = Image.open(io.BytesIO(page.screenshot())).convert("RGB")
                if os.environ.get("KEEP_SHOT"):
                    shot.save(os.environ["KEEP_SHOT"])
            finally:
                browser.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    pixels = list(shot.get_flattened_data())
    found = {
        name: sum(_near(p, colour) for p in pixels) for name, colour in LANDMARKS.items()
    }
    # each landmark is a 7x7 square of the 96x64 map, drawn in half cells several pixels big
    assert all(n >= 50 for n in found.values()), found
