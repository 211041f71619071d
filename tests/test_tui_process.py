"""The app as a coder runs it: `annotate code` in a real terminal (a pty), killed with -9
mid-session and reopened; and `annotate code --web` serving a browser page."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import pty
import signal
import socket
import struct
import subprocess
import sys
import termios
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from annotate.tui.app import make_app
from tests.test_coding_support import answers, labels, project, sample_ids
from tests.web_browser import wait_for_address

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a pty")


class Terminal:
    """`annotate ARGS` attached to a pseudo-terminal of 80x24; output is drained."""

    def __init__(self, *args: str, cwd: Path) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "80", "LINES": "24"}
        env.pop("NO_COLOR", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "annotate", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
        os.close(slave)
        self.master = master
        self.output = bytearray()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.output += chunk

    def wait_for(self, text: bytes, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.output:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError(f"{text!r} never appeared: {bytes(self.output[-2000:])!r}")
            time.sleep(0.05)

    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        os.close(self.master)


def _until(predicate, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


async def test_kill_9_loses_nothing_answered_and_resumes(tmp_path: Path) -> None:
    db = project(tmp_path)
    ids = sample_ids(db)
    term = Terminal("code", "--codebook", "traum", "--coder", "dora", "--db", str(db), cwd=tmp_path)
    try:
        term.wait_for(b"sample")
        for n, key in enumerate("135", start=1):
            term.send(key)
            _until(lambda n=n: len(answers(db, "dora", "traum")) == n)
        term.send("f")  # a flag on item 4, then killed in the middle of it
        _until(lambda: any(k for k in _flags(db)))
    finally:
        term.kill()
    assert term.proc.returncode == -signal.SIGKILL
    got = answers(db, "dora", "traum")
    assert [got[(i, "act")][0] for i in ids[:3]] == ["Initiate", "Acknowledge", "ReqRepair"]
    app = make_app(db, "traum", "dora")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert app.session.index == 3
        assert app.session.item.flagged
        await pilot.press("2")
    assert answers(db, "dora", "traum")[(ids[3], "act")][0] == "Continue"


def test_two_coders_in_two_processes_on_one_file(tmp_path: Path) -> None:
    """Two terminals code the same sample in the same file at the same time."""
    db = project(tmp_path)
    ids = sample_ids(db)
    keys = {"dora": ("1234567" * 2)[: len(ids)], "erin": ("7654321" * 2)[: len(ids)]}
    terms = {
        coder: Terminal(
            "code",
            "--codebook",
            "traum",
            "--coder",
            coder,
            "--new-coder",
            "--db",
            str(db),
            cwd=tmp_path,
        )
        for coder in keys
    }
    try:
        for term in terms.values():
            term.wait_for(b"item")
        for i in range(len(ids)):  # interleaved, without waiting for each other's writes
            for coder, term in terms.items():
                term.send(keys[coder][i])
            time.sleep(0.02)
        for coder in keys:
            _until(lambda c=coder: len(answers(db, c, "traum")) == len(ids), timeout=60)
        for term in terms.values():
            term.send("q")
        for term in terms.values():
            term.proc.wait(30)
            assert term.proc.returncode == 0, bytes(term.output[-2000:])
    finally:
        for term in terms.values():
            term.kill()
    names = {"1": "Initiate", "2": "Continue", "3": "Acknowledge", "4": "Repair"}
    names |= {"5": "ReqRepair", "6": "ReqAck", "7": "Cancel"}
    for coder, typed in keys.items():
        got = answers(db, coder, "traum")
        assert [got[(i, "act")][0] for i in ids] == [names[k] for k in typed]
        assert all(r["source"] == "tui" for r in labels(db, coder))


def _flags(db: Path) -> list[str]:
    from tests.test_coding_support import labels

    return [r["action_id"] for r in labels(db, "dora") if r["flagged"]]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_web_serves_the_app_page(tmp_path: Path) -> None:
    db = project(tmp_path)
    port = _free_port()
    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "annotate",
            "code",
            "--codebook",
            "traum",
            "--coder",
            "dora",
            "--db",
            str(db),
            "--web",
            "--port",
            str(port),
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        url = wait_for_address(proc)
        with urllib.request.urlopen(url, timeout=10) as r:
            page = r.read().decode()
        assert "annotate: traum · dora" in page
        assert f"ws://127.0.0.1:{port}/ws" in page
        token = urllib.parse.parse_qs(urllib.parse.urlparse(url).query)["token"][0]
        shown = asyncio.run(_code_one_item_over_websocket(port, token, "3"))
        assert b"item #1" in shown
        _until(lambda: answers(db, "dora", "traum") != {})
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    assert list(answers(db, "dora", "traum").values()) == [("Acknowledge", None, None)]


async def _code_one_item_over_websocket(port: int, token: str, key: str) -> bytes:
    """What a browser does: open the app's websocket, wait for the first item, press a key."""
    import aiohttp

    out = b""
    url = f"http://127.0.0.1:{port}/ws?width=80&height=24"
    origin = {"Origin": f"http://127.0.0.1:{port}"}
    async with (
        aiohttp.ClientSession(cookies={"annotate-token": token}) as http,
        http.ws_connect(url, headers=origin) as ws,
    ):
        await ws.send_str(json.dumps(["resize", {"width": 80, "height": 24}]))
        deadline = time.monotonic() + 30
        sent = False
        while time.monotonic() < deadline:
            try:
                msg = await asyncio.wait_for(ws.receive(), 1)
            except TimeoutError:
                continue
            if msg.type not in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT):
                break
            out += msg.data if isinstance(msg.data, bytes) else msg.data.encode()
            if not sent and b"item #1" in out:
                await ws.send_str(json.dumps(["stdin", key]))
                sent = True
            if sent and b"item #2" in out:
                break
    return out
