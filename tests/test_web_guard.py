"""`annotate code --web` answers only the holder of the address it printed: the page and the
WebSocket need the run's token, the WebSocket must come from the page's own origin, and the
Host must be the served one (DNS rebinding). A refused WebSocket reads nothing and writes
nothing; a second tab of the same coder takes over, so two tabs never write at once.

Driven over real HTTP with aiohttp's client (what a hostile page or local process can send);
no browser needed.
"""

from __future__ import annotations

import asyncio
import urllib.parse
from pathlib import Path

import aiohttp
import pytest

from tests.test_coding_support import answers, project, sample_ids
from tests.web_browser import serve


def _parts(url: str) -> tuple[str, str, str]:
    """(base, token, origin) of the printed address."""
    parsed = urllib.parse.urlparse(url)
    token = urllib.parse.parse_qs(parsed.query)["token"][0]
    origin = f"{parsed.scheme}://{parsed.netloc}"
    return origin + "/", token, origin


@pytest.fixture
def served(tmp_path: Path):
    db = project(tmp_path)
    with serve(db, "dora") as url:
        yield db, url


async def _status(url: str, **kwargs: object) -> int:
    async with aiohttp.ClientSession() as http, http.get(url, **kwargs) as r:
        return r.status


async def test_the_page_needs_the_token_and_the_served_host(served) -> None:
    _, url = served
    base, token, _ = _parts(url)
    assert await _status(url) == 200
    assert await _status(base) == 403
    wrong = token[:-1] + ("y" if token.endswith("x") else "x")  # one character off
    assert await _status(base + "?token=" + wrong) == 403
    port = urllib.parse.urlparse(url).port
    assert await _status(url, headers={"Host": f"evil.example:{port}"}) == 403
    assert await _status(base + "download/x") == 403


async def _ws(base: str, *, cookie: str | None, origin: str | None, host: str | None = None):
    headers = {}
    if origin:
        headers["Origin"] = origin
    if host:
        headers["Host"] = host
    cookies = {"annotate-token": cookie} if cookie else {}
    http = aiohttp.ClientSession(cookies=cookies)
    try:
        return http, await http.ws_connect(base.replace("http", "ws", 1) + "ws?width=80&height=24",
                                           headers=headers)
    except Exception:
        await http.close()
        raise


@pytest.mark.parametrize(
    "cookie, origin, host",
    [
        ("TOKEN", "http://evil.example", None),  # another site's page
        ("TOKEN", None, None),  # no Origin at all
        (None, "ORIGIN", None),  # no token
        ("wrong", "ORIGIN", None),
        ("TOKEN", "ORIGIN", "evil.example"),  # DNS rebinding
    ],
)
async def test_a_refused_websocket_reads_and_writes_nothing(served, cookie, origin, host) -> None:
    db, url = served
    base, token, own = _parts(url)
    cookie = token if cookie == "TOKEN" else cookie
    origin = own if origin == "ORIGIN" else origin
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await _ws(base, cookie=cookie, origin=origin, host=host)
    assert refused.value.status == 403
    assert answers(db, "dora", "traum") == {}


async def _first_bytes(ws: aiohttp.ClientWebSocketResponse) -> bytes:
    while True:
        message = await asyncio.wait_for(ws.receive(), 30)
        if message.type == aiohttp.WSMsgType.BINARY:
            return message.data
        assert message.type == aiohttp.WSMsgType.TEXT, message


async def test_the_owner_codes_and_a_second_tab_takes_over(served) -> None:
    db, url = served
    base, token, origin = _parts(url)
    ids = sample_ids(db)
    first_http, first = await _ws(base, cookie=token, origin=origin)
    second_http = None
    try:
        await _first_bytes(first)  # the app is drawing: this session is live
        await first.send_json(["stdin", "1"])
        await _until_async(lambda: len(answers(db, "dora", "traum")) == 1)
        second_http, second = await _ws(base, cookie=token, origin=origin)
        await _until_closed(first)
        await _first_bytes(second)  # the first tab's app ended before this one began
        await second.send_json(["stdin", "3"])
        await _until_async(lambda: len(answers(db, "dora", "traum")) == 2)
    finally:
        await first_http.close()
        if second_http is not None:
            await second_http.close()
    coded = {k[0]: v[0] for k, v in answers(db, "dora", "traum").items()}
    assert coded == {ids[0]: "Initiate", ids[1]: "Acknowledge"}


async def _until_closed(ws: aiohttp.ClientWebSocketResponse) -> None:
    """What the first tab still had in flight, then its close."""
    while True:
        message = await asyncio.wait_for(ws.receive(), 30)
        if message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
            return
        assert message.type is aiohttp.WSMsgType.BINARY, message


async def _until_async(predicate, timeout: float = 30) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.1)


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


async def test_the_apps_end_when_the_server_is_killed(tmp_path: Path) -> None:
    import os
    import signal

    from tests.web_browser import server_process

    db = project(tmp_path)
    with server_process(db, "dora") as (proc, url):
        base, token, origin = _parts(url)
        http, ws = await _ws(base, cookie=token, origin=origin)
        try:
            await _first_bytes(ws)
            apps = _children(proc.pid)
            assert apps, "the app runs as a child of the server"
            os.kill(proc.pid, signal.SIGKILL)
            await _until_async(lambda: not any(map(_alive, apps)), timeout=20)
        finally:
            await http.close()
