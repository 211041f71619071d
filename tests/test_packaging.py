"""The wheel carries every package and the shipped codebooks (pyproject lists them by hand)."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _setuptools_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_package_folder_is_listed_for_the_wheel():
    on_disk = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("annotate", "agreement", "llm_coder")
        for init in (ROOT / top).rglob("__init__.py")
    }
    listed = set(_setuptools_config()["packages"])
    assert on_disk - listed == set(), "add these to [tool.setuptools] packages"
    assert listed - on_disk == {"annotate.builtin_codebooks"}


def test_the_shipped_codebooks_go_into_the_wheel():
    config = _setuptools_config()
    folder = config["package-dir"]["annotate.builtin_codebooks"]
    assert folder == "codebooks" and (ROOT / folder / "traum.yaml").is_file()
    assert config["package-data"]["annotate.builtin_codebooks"] == ["*.yaml"]
