"""The layering the project promises: pure statistics, a UI-free core, a light CLI start-up."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def _modules_after_import(*modules: str) -> set[str]:
    code = (
        "import importlib, json, sys\n"
        f"for m in {list(modules)!r}: importlib.import_module(m)\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout))


def _top(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


@pytest.mark.parametrize(
    "module",
    [
        "agreement",
        "llm_coder",
        "annotate.store",
        "annotate.io.importing",
        "annotate.status",
        "annotate.io.export",
        "annotate.coding.sampling",
    ],
)
def test_core_modules_never_import_textual(module: str) -> None:
    assert "textual" not in _top(_modules_after_import(module))


def test_agreement_is_pure() -> None:
    loaded = _top(_modules_after_import("agreement"))
    assert not loaded & {"annotate", "llm_coder", "sqlite3", "typer", "textual", "openai"}


def test_cli_start_up_does_not_load_heavy_libraries() -> None:
    loaded = _top(_modules_after_import("annotate.cli"))
    heavy = {"textual", "openai", "matplotlib", "statsmodels", "pandas", "sqlite_utils", "numpy"}
    assert not loaded & heavy
