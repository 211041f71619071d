"""The coding screen's screenshots: a mark in the context's title, a panel beside the item
(shown at once in the browser of ``--web``, with a key in the terminal).

Only a session whose items name screenshots (and that was given a
:class:`~annotate.media.MediaLocator` as ``session.media``) gets the panel and the key, so
that coding a log without screenshots looks exactly as before.
"""

from __future__ import annotations

from collections.abc import Iterator

from textual import events
from textual.widget import Widget

from annotate.coding.keys import codebook_keys
from annotate.coding.session import CodingSession
from annotate.media import MediaLocator, Screenshot

SHOT_KEYS = ("v", "f5")


def session_media(session: CodingSession) -> MediaLocator | None:
    """The session's locator, when any of its items names a screenshot."""
    media = getattr(session, "media", None)
    if media is None or not session.names_screenshots:
        return None
    return media


class ScreenshotsMixin:
    session: CodingSession

    def _media(self) -> MediaLocator | None:
        if not hasattr(self, "_media_cache"):
            self._media_cache = session_media(self.session)
        return self._media_cache

    @property
    def shot_key(self) -> str:
        taken = codebook_keys(self.session.codebook)
        return next(k for k in SHOT_KEYS if k not in taken)

    def compose_screenshots(self) -> Iterator[Widget]:
        if self._media() is not None:
            from annotate.tui.widgets.screenshot import ScreenshotPanel

            web = bool(getattr(self.app, "is_web", False))  # type: ignore[attr-defined]
            panel = ScreenshotPanel(web=web, id="screenshot")
            if web:
                panel.add_class("shown")
            yield panel

    def screenshot_key_entries(self) -> list[tuple[str, str, str]]:
        if self._media() is None:
            return []
        return [(self.shot_key.upper() if len(self.shot_key) > 1 else self.shot_key,
                 "screenshot", "screen.screenshot")]  # fmt: skip

    def current_screenshot(self) -> Screenshot | None:
        media = self._media()
        return media.screenshot(self.session.item.action) if media is not None else None

    def screenshot_marks(self) -> list[str]:
        shot = self.current_screenshot()
        if shot is None:
            return []
        return ["screenshot missing" if shot.missing else "▣ screenshot"]

    def refresh_screenshot(self) -> None:
        if self._media() is None:
            return
        from annotate.tui.widgets.screenshot import ScreenshotPanel

        panel = self.query_one(ScreenshotPanel)  # type: ignore[attr-defined]
        if panel.has_class("shown"):
            panel.show(self.current_screenshot())

    def action_screenshot(self) -> None:
        if self._media() is None:
            return
        from annotate.tui.widgets.screenshot import ScreenshotPanel

        panel = self.query_one(ScreenshotPanel)  # type: ignore[attr-defined]
        panel.toggle_class("shown")
        self.refresh_screenshot()

    def screenshot_key(self, event: events.Key) -> bool:
        """The key that shows or hides the screenshot; True when it was that key."""
        if self._media() is None or event.key != self.shot_key:
            return False
        self.action_screenshot()
        return True
