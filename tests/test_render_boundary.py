"""Only the render layer knows about rich: every table, progress bar and styled line of
the CLI is made in annotate/render/, so a width or wrapping fix is made in one place.

The Textual screens (annotate/tui/) are the exception by design: their widgets render rich
``Text``. As in test_import_graph, the imports are read from the source (the AST), so an
import inside a function counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.test_import_graph import PACKAGES, ROOT

ALLOWED = ("annotate.render", "annotate.tui")


def _module(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module)
    return names


def rich_importers(root: Path = ROOT) -> dict[str, set[str]]:
    """Each module outside ALLOWED that imports rich, with what it imports."""
    found: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            module = _module(path, root)
            if any(module == a or module.startswith(a + ".") for a in ALLOWED):
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            rich = {n for n in _imported(tree) if n == "rich" or n.startswith("rich.")}
            if rich:
                found[module] = rich
    return found


def test_only_the_render_layer_imports_rich() -> None:
    assert rich_importers() == {}


def test_an_import_of_rich_elsewhere_is_found(tmp_path: Path) -> None:
    (tmp_path / "annotate" / "commands").mkdir(parents=True)
    (tmp_path / "annotate" / "render").mkdir()
    (tmp_path / "annotate" / "commands" / "x.py").write_text(
        "def f():\n    from rich.table import Table\n    return Table\n"
    )
    (tmp_path / "annotate" / "render" / "y.py").write_text("import rich\n")
    for package in PACKAGES[1:]:
        (tmp_path / package).mkdir()
    assert rich_importers(tmp_path) == {"annotate.commands.x": {"rich.table"}}
