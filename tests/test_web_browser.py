"""`annotate code --web` coded through a real browser: headless Chromium (Playwright) opens
the page textual-serve serves, keys are pressed in the tab, and the labels are read back
from the project file. Then two coders, each in a tab of their own, at the same time.

Needs the system Chromium (Debian: `apt-get install -y chromium`; `.ci/run` installs it
when missing); skipped, saying so, only where it cannot be found.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.test_coding_support import answers, project, sample_ids
from tests.web_browser import find_chromium, launch, open_app, press_and_wait, serve, shown_item

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Chromium not found (apt-get install -y chromium; .ci/run installs it)",
)
TRAUM = {"1": "Initiate", "2": "Continue", "3": "Acknowledge", "4": "Repair"}


def _until(predicate, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def _values(db: Path, coder: str) -> dict[str, str]:
    return {k[0]: v[0] for k, v in answers(db, coder, "traum").items()}


def test_three_items_coded_in_a_browser_tab(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    db = project(tmp_path)
    ids = sample_ids(db)
    with serve(db, "dora") as url, sync_playwright() as pw:
        browser = launch(pw, CHROMIUM)
        try:
            page = open_app(browser, url)
            assert shown_item(page) == 1
            for n, key in enumerate("132", start=2):
                press_and_wait(page, key, n)  # stored, and the next item is drawn
            page.close()  # the tab goes: the app ends with it
        finally:
            browser.close()
        _until(lambda: len(_values(db, "dora")) == 3)
    assert _values(db, "dora") == {ids[0]: "Initiate", ids[1]: "Acknowledge", ids[2]: "Continue"}


def test_two_coders_in_two_tabs_at_the_same_time(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    db = project(tmp_path)
    ids = sample_ids(db)
    with (
        serve(db, "dora") as dora_url,
        serve(db, "eve", "--new-coder") as eve_url,
        sync_playwright() as pw,
    ):
        browser = launch(pw, CHROMIUM)
        try:
            dora = open_app(browser, dora_url)
            eve = open_app(browser, eve_url)
            for n, (a, b) in enumerate(zip("123", "444", strict=True), start=2):
                dora.keyboard.press(a)  # both keys go before either tab is redrawn
                eve.keyboard.press(b)
                dora.wait_for_function(f"window.__annotate.item === {n}")
                eve.wait_for_function(f"window.__annotate.item === {n}")
            dora.close()
            eve.close()
        finally:
            browser.close()
        _until(lambda: len(_values(db, "dora")) == 3 and len(_values(db, "eve")) == 3)
    assert _values(db, "dora") == dict(zip(ids[:3], [TRAUM[k] for k in "123"], strict=True))
    assert _values(db, "eve") == dict.fromkeys(ids[:3], "Repair")
