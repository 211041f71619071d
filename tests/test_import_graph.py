"""The import graph points one way: no cycle among the project's modules, no LLM coder ->
store, and the store takes only the LLM coder's records.

The graph is read from the source (the AST), not from a running interpreter, so an import
inside a function counts as much as one at the top of a module; only imports under
``if TYPE_CHECKING:`` are left out (they never run). ``from pkg import name`` is an edge to
``pkg.name`` when that is a module of the project, else to ``pkg``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("annotate", "agreement", "llm_coder")


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree``, outside ``if TYPE_CHECKING:`` blocks."""
    out: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            out.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    here = name.split(".") if is_package else name.split(".")[:-1]
                    here = here[: len(here) - (node.level - 1)]
                    base = ".".join([*here, base] if base else here)
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    targets.append(full if full in modules else base)
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def test_the_graph_is_read() -> None:
    graph = _graph()
    assert "annotate.cli" in graph and "agreement" in graph and "llm_coder.calls" in graph
    assert "annotate.errors" in graph["llm_coder.calls"]


def test_no_import_cycle() -> None:
    assert _cycles(_graph()) == []


def test_a_cycle_is_found() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_store_imports_only_the_llm_coders_records() -> None:
    """The store keeps the LLM coder's records (``llm_coder.records``, no imports of its own
    but the vocabulary) and imports nothing else of it: no client, no workflow."""
    graph = _graph()
    bad = {
        (module, target)
        for module, targets in graph.items()
        if module == "annotate.store" or module.startswith("annotate.store.")
        for target in targets
        if (target == "llm_coder" or target.startswith("llm_coder."))
        and target != "llm_coder.records"
    }
    assert bad == set()
    assert {t for t in graph["llm_coder.records"] if not t.startswith("annotate.")} == set()


def test_the_llm_coder_never_imports_the_store() -> None:
    graph = _graph()
    bad = {
        (module, target)
        for module, targets in graph.items()
        if module == "llm_coder" or module.startswith("llm_coder.")
        for target in targets
        if target == "annotate.store" or target.startswith("annotate.store.")
    }
    assert bad == set()
