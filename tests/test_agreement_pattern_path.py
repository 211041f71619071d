"""The rating-pattern path (one bincount of per-item pattern keys) of Fleiss' kappa, AC1
and the generalized kappa gives the figures of the general path (one row per item), on
random tables with and without missing ratings."""

from __future__ import annotations

import numpy as np
import pytest

import agreement as ag
import agreement.fleiss
import agreement.generalized
from agreement.matrix import LabelMatrix


def close(a, b, path=""):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for key in a:
            close(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-12, abs=1e-12), path
    else:
        assert a == b, path


def random_matrices(seed: int, count: int = 40):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n_items = int(rng.integers(1, 80))
        n_coders = int(rng.integers(2, 5))
        k = int(rng.integers(1, 6))
        codes = rng.integers(0, k, size=(n_items, n_coders))
        if rng.random() < 0.6:
            codes[rng.random(codes.shape) < rng.random() * 0.5] = -1
        yield LabelMatrix(
            codes=codes.astype(np.int8),
            categories=tuple("abcdef"[:k]),
            coders=tuple(f"c{j}" for j in range(n_coders)),
            items=np.arange(n_items) * 10,
        )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_fleiss_pattern_path_equals_general_path(seed, monkeypatch):
    matrices = list(random_matrices(seed))
    fast = [ag.fleiss_kappa(m, min_items_z=0).to_dict() for m in matrices]
    monkeypatch.setattr(agreement.fleiss, "patterns_fit", lambda *_: False)
    slow = [ag.fleiss_kappa(m, min_items_z=0).to_dict() for m in matrices]
    for a, b in zip(fast, slow, strict=True):
        close(a, b)


@pytest.mark.parametrize("seed", [4, 5])
def test_ac1_and_generalized_pattern_path_equals_general_path(seed, monkeypatch):
    matrices = list(random_matrices(seed))
    fast = [(ag.gwet_ac1(m).to_dict(), ag.fleiss_kappa_generalized(m).to_dict()) for m in matrices]
    monkeypatch.setattr(agreement.generalized, "patterns_fit", lambda *_: False)
    slow = [(ag.gwet_ac1(m).to_dict(), ag.fleiss_kappa_generalized(m).to_dict()) for m in matrices]
    for a, b in zip(fast, slow, strict=True):
        close(a, b)


def test_left_out_items_are_named_on_the_pattern_path():
    matrix = LabelMatrix(
        codes=np.array([[0, 0, -1], [1, 1, 1], [0, 1, 0], [-1, -1, 2]], dtype=np.int8),
        categories=("a", "b", "c"), coders=("x", "y", "z"), items=np.array([7, 8, 9, 10]),
    )  # fmt: skip
    result = ag.fleiss_kappa(matrix)
    assert result.items_left_out == (7, 10) and result.n_items == 2
    reason = result.per_category[2].undefined_reason
    assert "only on items left out" in reason


@pytest.mark.parametrize("seed", [6, 7])
def test_percent_agreement_pattern_path_equals_general_path(seed, monkeypatch):
    import agreement.percent

    matrices = list(random_matrices(seed))
    fast = [ag.percent_agreement(m).to_dict() for m in matrices]
    monkeypatch.setattr(agreement.percent, "patterns_fit", lambda *_: False)
    slow = [ag.percent_agreement(m).to_dict() for m in matrices]
    for a, b in zip(fast, slow, strict=True):
        close(a, b)
