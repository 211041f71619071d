"""The first screen of a sitting shows the item and the turns right before it.

Read from the rendered lines (the SVG screenshot's text), never from widget state: a turn
counts as shown only if its time, speaker and every word of its text are on screen. At
80x24 and 120x40, fresh and resumed, with traum and mental_model (whose lower panel is
taller, and taller still with a note), on the demo data and on the real Map Task and
platform logs of ../shared (issue 14: the turns just before item 1 and before a resumed
item #9 were hidden until the coder moved away and back).
"""

from __future__ import annotations

import io
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from rich.console import Console
from textual.app import App

from annotate.coding.context import ContextRow, format_offset
from annotate.coding.sampling import draw_sample
from annotate.io.importing import import_files
from annotate.store import Store
from annotate.tui.app import CodingApp, make_app
from annotate.tui.widgets.context import PREFIX
from tests.conftest import SHARED
from tests.test_coding_support import project

SIZES = [(80, 24), (120, 40)]
SIZE_IDS = ["80x24", "120x40"]
BLOCKS = "▁▂▃▄▅▆▇█▔▊▋▌▍▎▏"  # the scrollbar at the end of a line


@dataclass
class Turn:
    header: str  # time, who, type as drawn
    text: str  # every line of the text column, joined
    complete: bool  # its first line is on screen (not cut off at the top)


def screen_lines(app: App) -> list[str]:
    """The terminal's rows as drawn, one string each (as the SVG screenshot is made)."""
    width, height = app.size
    console = Console(
        width=width, height=height, file=io.StringIO(), record=True, legacy_windows=False
    )
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text().split("\n")[:height]


def context_turns(app: CodingApp) -> tuple[list[Turn], int]:
    """The turns drawn in the context box, and how many blank rows it has on top."""
    lines = screen_lines(app)
    top = next(i for i, line in enumerate(lines) if line.startswith("─session"))
    assert all(len(line) <= app.size.width for line in lines)
    end = next(i for i in range(top + 1, len(lines)) if lines[i].startswith("─"))
    turns: list[Turn] = []
    blank = 0
    for line in lines[top + 1 : end]:
        body = line[1:].rstrip().rstrip(BLOCKS).rstrip()
        if not body.strip():
            blank += 0 if turns else 1
            continue
        if body.strip().startswith("──"):  # start of the session / PgUp marker
            continue
        header, text = body[:PREFIX].strip(), body[PREFIX:].strip()
        if header:
            turns.append(Turn(" ".join(header.split()), text, True))
        elif turns:
            turns[-1].text += " " + text
        else:  # a continuation line at the top: its turn began above the view
            turns.append(Turn("", text, False))
    return turns, blank


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def expected_header(row: ContextRow) -> str:
    a = row.action
    who = (a.role or a.participant or "?").capitalize()[:8]
    return " ".join(f"{format_offset(row.offset_s)} {who} {a.action_type[:7]}".split())


def assert_context_shown(app: CodingApp, context: int) -> list[Turn]:
    """The item and the turns right before it are drawn whole, in order, with nothing
    hidden between them; up to ``context`` of them, fewer only where the box is full."""
    s = app.session
    rows = s.context_rows()
    before = [r for r in rows if not r.is_item and not r.after]
    item = next(r for r in rows if r.is_item)
    turns, blank = context_turns(app)
    assert turns, "no turn on screen"
    assert turns[-1].header == expected_header(item)
    assert _squash(turns[-1].text) == _squash(item.text), "the item is not drawn whole"
    shown = turns[:-1]
    assert len(shown) <= len(before) <= context
    for turn, row in zip(reversed(shown), reversed(before), strict=False):
        if turn.complete:
            assert turn.header == expected_header(row)
            assert _squash(turn.text) == _squash(row.text)
        else:  # cut at the top of a full box: its end is there
            assert _squash(row.text).endswith(_squash(turn.text))
    cut = len(shown) < len(before) or (bool(shown) and not shown[0].complete)
    if cut:
        assert blank == 0, "turns were left out of a box with room for them"
    return shown


def _code(app: CodingApp, n: int, keys: list[str]) -> None:
    """Answer the first ``n`` items through the session (the resumed sitting's past)."""
    s = app.session
    for _ in range(n):
        for key in keys:
            s.press(key)
            if s.toggles is not None:
                s.confirm()


MM_KEYS = ["1", "2", "3", "y"]  # Q1, Q2, Q3 and Q4 of mental_model


async def _first_screen(db: Path, codebook: str, sample: str, size, *, context: int = 8):
    app = make_app(db, codebook, "ben", sample, context=context, new_coder=True)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await pilot.pause()
        shown = assert_context_shown(app, context)
        await pilot.press("q")
    return app, shown


async def _resumed(db: Path, codebook: str, sample: str, size, done: int, note: str | None):
    first = make_app(db, codebook, "ben", sample, new_coder=True)
    _code(first, done, ["1"] if codebook != "mental_model" else MM_KEYS)
    if note:
        first.session.set_note(note)  # a taller lower panel on the resumed item
    first.close_session()
    app = make_app(db, codebook, "ben", sample)
    assert app.session.index == done
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        await pilot.pause()
        shown = assert_context_shown(app, 8)
        await pilot.press("q")
    return shown


# -- the demo data --------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("codebook", ["traum", "mental_model"])
async def test_first_screen_fresh(tmp_path, codebook, size) -> None:
    await _first_screen(project(tmp_path), codebook, "main", size)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("codebook", ["traum", "mental_model"])
async def test_first_screen_resumed(tmp_path, codebook, size) -> None:
    await _resumed(project(tmp_path), codebook, "main", size, 3, "unsure which")


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_context_n_is_the_number_of_earlier_turns(tmp_path, size) -> None:
    """--context 2 shows two earlier turns, however tall the terminal (README)."""
    db = project(tmp_path)
    app, shown = await _first_screen(db, "traum", "main", size, context=2)
    assert len(app.session.context_rows()) == 3 and len(shown) == 2


@pytest.mark.parametrize("codebook", ["traum", "mental_model"])
async def test_a_tall_screen_leaves_no_empty_space_above_the_context(tmp_path, codebook) -> None:
    """A browser's terminal (`code --web`, 50 rows here): the turns start right under the
    context's title and the options follow the item; what is left is above the keys."""
    app = make_app(project(tmp_path), codebook, "dora")
    async with app.run_test(size=(120, 50)) as pilot:
        await pilot.pause()
        await pilot.pause()
        turns, blank = context_turns(app)
        lines = screen_lines(app)
    assert blank == 0 and len(turns) == 9  # 8 earlier turns and the item
    item = next(i for i, line in enumerate(lines) if "   now " in line)
    assert lines[item + 1].startswith("─")  # the question's border right under the item
    assert not lines[-3].strip() and lines[-2].lstrip().startswith("←/→")  # spare room at the foot


# -- the real logs (the reproductions of issue 14) ----------------------------------------

_REAL: dict[str, Path] = {}


def _real_db(name: str) -> Path:
    """A project file with the real data, made once per run, copied for each test."""
    if not SHARED.is_dir():
        pytest.skip("../shared (real Map Task and platform data) is not beside this checkout")
    if name not in _REAL:
        path = Path(tempfile.mkdtemp(prefix="annotate-first-")) / f"{name}.db"
        with Store(path) as store:
            if name == "plat":
                import_files(store, sorted((SHARED / "platform").glob("*.jsonl")))
            else:
                files = ["q4nc8.txt", "q1ec1.txt"]
                import_files(store, [SHARED / "maptask" / "dialogues" / f for f in files])
            ids = draw_sample(store.actions.action_rows(), 20, 3, [])
            store.samples.create_sample(name, ids, seed=3)
        _REAL[name] = path
    return _REAL[name]


def _copy(name: str, tmp_path: Path) -> Path:
    target = tmp_path / f"{name}.db"
    shutil.copy(_real_db(name), target)
    return target


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_platform_mental_model_item_1(tmp_path, size) -> None:
    """`code --codebook mental_model --sample plat`: the draw right before item 1 shows."""
    await _first_screen(_copy("plat", tmp_path), "mental_model", "plat", size)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_maptask_traum_resumed_at_item_9(tmp_path, size) -> None:
    """A traum sitting resumed at item #9 shows the turns just before it."""
    shown = await _resumed(_copy("maptask", tmp_path), "traum", "maptask", size, 8, None)
    assert len(shown) >= 2


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_platform_mental_model_resumed_with_a_note(tmp_path, size) -> None:
    await _resumed(_copy("plat", tmp_path), "mental_model", "plat", size, 2, "a note, taller")
