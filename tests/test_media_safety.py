"""Screenshots named by a log are data from elsewhere: no reference opens a file outside the
media folders (``../``, absolute paths, a prefix followed by ``../``, links), and no image,
however it is made, crashes the coding screen."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PIL import Image

from annotate.media import MediaLocator
from annotate.tui.self_app import make_self_app
from annotate.tui.widgets.screenshot import MOST_PIXELS, ScreenshotPanel, load_image
from tests.test_self_annotation import DEMO_SELF, SIZE, _log, db  # noqa: F401 - the fixture
from tests.test_tui_app import keys, screen_text

PREFIX = "s3://demo-bucket/annotation/"


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """A media root with one picture, and a secret picture beside it, outside."""
    root = tmp_path / "media"
    (root / "run1").mkdir(parents=True)
    Image.new("RGB", (4, 4)).save(root / "run1" / "a.png")
    Image.new("RGB", (4, 4)).save(tmp_path / "secret.png")
    return root, tmp_path / "secret.png"


@pytest.mark.parametrize(
    "ref",
    [
        "../secret.png",
        "run1/../../secret.png",
        "{secret}",
        f"{PREFIX}../secret.png",
        f"{PREFIX}run1/../../secret.png",
        "run1/a.png\x00.txt",
    ],
)
def test_no_reference_leads_out_of_the_media_folders(
    folders: tuple[Path, Path], ref: str
) -> None:
    root, secret = folders
    locator = MediaLocator.from_options([root], [f"{PREFIX}={root}"])
    assert locator.locate(ref.format(secret=secret)) is None


def test_a_link_out_of_the_root_is_not_followed(folders: tuple[Path, Path]) -> None:
    root, secret = folders
    (root / "run1" / "link.png").symlink_to(secret)
    locator = MediaLocator.from_options([root], [f"{PREFIX}={root}"])
    assert locator.locate("run1/link.png") is None
    assert locator.locate(f"{PREFIX}run1/link.png") is None


def test_references_inside_the_folders_still_resolve(folders: tuple[Path, Path]) -> None:
    root, _ = folders
    locator = MediaLocator.from_options([root], [f"{PREFIX}={root}"])
    assert locator.locate("run1/a.png") == root / "run1" / "a.png"
    assert locator.locate("run1/../run1/a.png") is not None
    assert locator.locate(str(root / "run1" / "a.png")) == root / "run1" / "a.png"
    assert locator.locate(f"{PREFIX}run1/a.png") == root / "run1" / "a.png"


def _bomb(path: Path) -> None:
    """A small PNG that decodes to 400 million pixels (about 50 KB on disk)."""
    Image.new("1", (20_000, 20_000)).save(path, optimize=True)


def test_a_decompression_bomb_is_refused_before_decoding(tmp_path: Path) -> None:
    _bomb(tmp_path / "bomb.png")
    Image.new("1", (8_000, 6_000)).save(tmp_path / "big.png")  # under PIL's limit, over ours
    with pytest.raises(ValueError, match="8000x6000 pixels"):
        load_image(tmp_path / "big.png")
    assert (tmp_path / "bomb.png").stat().st_size < 200_000
    with pytest.raises(ValueError, match="pixels"):
        load_image(tmp_path / "bomb.png")
    assert MOST_PIXELS < 20_000 * 20_000


async def test_bad_screenshots_show_unreadable_and_the_session_goes_on(
    db: Path,  # noqa: F811 - the fixture
    tmp_path: Path,
) -> None:
    screens = tmp_path / "screens"
    shutil.copytree(DEMO_SELF / "screens", screens)
    first, second = (r["screenshot"] for r in _log("Tom")[:2])
    _bomb(screens / first.removeprefix(PREFIX))
    (screens / second.removeprefix(PREFIX)).write_bytes(b"\x89PNG\r\n\x1a\n not a png")
    media = MediaLocator.from_options(None, [f"{PREFIX}={screens}"])
    app = make_self_app(db, "mental_model_self", "Tom", media=media)
    async with app.run_test(size=SIZE) as pilot:
        await keys(pilot, "escape", "v")
        assert app.screen.query_one(ScreenshotPanel).display
        assert "screenshot unreadable" in screen_text(app)
        await keys(pilot, "g", "2", "enter", "escape")
        assert "screenshot unreadable" in screen_text(app)
        assert app.is_running
