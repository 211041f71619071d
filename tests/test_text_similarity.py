"""Mean pairwise similarity of free-text answers: ROUGE-L as rouge-score computes it, SBERT
cosine from vectors, and the bootstrap interval over items."""

from __future__ import annotations

import numpy as np
import pytest

from agreement.text_similarity import (
    cosine_item_means,
    mean_similarity,
    rouge_item_means,
    rouge_l_f1,
)

# rouge-score 0.1.2's RougeScorer(["rougeL"]).score(b, a)["rougeL"].fmeasure for each pair.
ROUGE_SCORE = [
    ("the cat sat on the mat", "the cat is on the mat", 0.8333333333333334),
    (
        "We are exploring the map; the follower lost the start.",
        "The follower is lost, we explore the map.",
        0.4444444444444445,
    ),
    ("Café naïve", "cafe naive", 0.0),  # its tokenizer keeps only a-z0-9
    ("I plan to go left", "nothing in common here", 0.0),
    ("", "x", 0.0),
    ("Ok!!! 42nd street", "ok 42nd STREET", 1.0),
]


@pytest.mark.parametrize(("a", "b", "expected"), ROUGE_SCORE)
def test_rouge_l_f1_as_rouge_score(a, b, expected):
    assert rouge_l_f1(a, b) == pytest.approx(expected, abs=1e-12)
    assert rouge_l_f1(b, a) == pytest.approx(expected, abs=1e-12)  # F1 is symmetric


def test_item_means_average_every_pair_and_skip_single_answers():
    means, pairs = rouge_item_means([["a b", "a b", "c d"], ["x"], ["p q", "p q"]])
    assert pairs.tolist() == [3, 1]
    assert means.tolist() == pytest.approx([1 / 3, 1.0])


def test_cosine_item_means_normalise_the_vectors():
    item = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 3.0]])
    means, pairs = cosine_item_means([item, item[:1]])
    assert pairs.tolist() == [3]
    assert means[0] == pytest.approx((1 + 0 + 0) / 3)


def test_mean_similarity_with_a_bootstrap_interval_over_items():
    rng = np.random.default_rng(1)
    s = rng.uniform(0.6, 0.9, size=40)
    r = mean_similarity(s, np.full(40, 3), "sbert_cosine", seed=3, n_boot=1000)
    assert r.mean == pytest.approx(s.mean())
    assert r.sd == pytest.approx(s.std(ddof=1))
    assert (r.n_items, r.n_pairs) == (40, 120)
    assert r.ci.low < r.mean < r.ci.high
    assert r.ci.high - r.ci.low == pytest.approx(2 * 1.96 * s.std() / np.sqrt(40), rel=0.25)
    again = mean_similarity(s, np.full(40, 3), "sbert_cosine", seed=3, n_boot=1000)
    assert (again.ci.low, again.ci.high) == (r.ci.low, r.ci.high)


def test_too_few_items_give_a_mean_without_interval_and_none_give_nothing():
    few = mean_similarity(np.array([0.5, 0.7]), 2, "rouge_l_f1")
    assert few.mean == pytest.approx(0.6) and few.ci.low is None
    assert "at least 10 items" in few.ci.undefined_reason
    none = mean_similarity(np.array([]), 0, "rouge_l_f1", n_items_single=4)
    assert none.mean is None and none.n_items_single == 4
    assert "two or more answers" in none.undefined_reason
    assert none.to_dict()["mean"] is None
