"""The current item's screenshot, beside the item.

Drawn with ``textual-image``: in a terminal that supports Sixel or the Kitty graphics
protocol as an image, else (and in the browser of ``--web``) in coloured half cells. A
screenshot the log names but that cannot be found shows "screenshot missing".
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label

from annotate.media import Screenshot
from annotate.render.terminal import shown_line

if TYPE_CHECKING:
    from PIL import Image as PILImage


def _image_class(web: bool) -> type:
    # imported here: textual_image asks the terminal about graphics once, on import
    from textual_image.widget import HalfcellImage, Image

    return HalfcellImage if web or not sys.__stdout__ or not sys.__stdout__.isatty() else Image


class ScreenshotPanel(Vertical):
    DEFAULT_CSS = """
    ScreenshotPanel {
        dock: right; width: 45%; height: 1fr; display: none;
        border-left: solid $accent; padding: 0 1;
    }
    ScreenshotPanel.shown { display: block; }
    ScreenshotPanel > #shot-caption { color: $text-muted; height: auto; width: 100%; }
    ScreenshotPanel > #shot-image { width: 100%; height: auto; }
    """

    def __init__(self, *, web: bool, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.web = web
        self.shot: Screenshot | None = None

    def compose(self) -> ComposeResult:
        yield Label("", id="shot-caption")
        yield _image_class(self.web)(None, id="shot-image")

    def show(self, shot: Screenshot | None) -> None:
        if shot == self.shot and self.is_mounted:
            return
        self.shot = shot
        caption = self.query_one("#shot-caption", Label)
        image = self.query_one("#shot-image")
        if shot is None:
            caption.update("no screenshot for this action")
            image.image = None  # type: ignore[attr-defined]
        elif shot.path is None:
            caption.update(f"screenshot missing\n{shown_line(shot.ref)}")
            image.image = None  # type: ignore[attr-defined]
        else:
            caption.update(f"screenshot: {_middle_cut(shown_line(shot.path.name))}")
            try:
                image.image = load_image(shot.path)  # type: ignore[attr-defined]
            except Exception:
                caption.update(f"screenshot unreadable\n{shown_line(shot.ref)}")
                image.image = None  # type: ignore[attr-defined]


MOST_BYTES = 50 * 2**20
MOST_PIXELS = 40_000_000  # 8K by 5K: a full-page capture fits, a decompression bomb does not


def load_image(path: Path) -> PILImage.Image:
    """The decoded image, once its size on disk and in pixels are known to be sane.

    Both are read before anything is decoded (PIL reads only the header on open), so a
    small file that unpacks to gigabytes is refused instead of decoded."""
    from PIL import Image as PILImage

    if path.stat().st_size > MOST_BYTES:
        raise ValueError(f"{path.name}: over {MOST_BYTES} bytes")
    try:
        opened = PILImage.open(path)
    except PILImage.DecompressionBombError:  # PIL's own limit, far above ours
        raise ValueError(f"{path.name}: too many pixels") from None
    with opened as image:
        width, height = image.size
        if width * height > MOST_PIXELS:
            raise ValueError(f"{path.name}: {width}x{height} pixels")
        image.load()
        return image.copy()


def _middle_cut(name: str, most: int = 28) -> str:
    """``639cf014…_screenshot.png``: the start and the end of a long file name."""
    return name if len(name) <= most else name[:8] + "…" + name[-(most - 9) :]
