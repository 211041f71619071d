"""The process keeps glibc's mmap threshold fixed where `agree` and `adjudicate` read labels
in chunks (see annotate/memory.py)."""

from __future__ import annotations

import ctypes.util
import sys

import pytest

from annotate.memory import fixed_mmap_threshold


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or ctypes.util.find_library("c") is None,
    reason="glibc's mallopt is Linux-only",
)
def test_the_mmap_threshold_is_set_on_glibc() -> None:
    assert fixed_mmap_threshold() is True
