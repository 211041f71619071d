"""How alike free-text answers to the same item are: mean pairwise similarity over items.

For each item (an action, or an agent turn), every pair of coders' (or agents') answers is
scored, the item's similarity is the mean over its pairs, and the figure is the mean over
items, with a bootstrap interval over items (the items are the sampling unit, as for the
kappas). Items with a single answer have no pair and are counted apart.

Two scores:

- SBERT cosine: the cosine of two sentence embeddings (Reimers & Gurevych 2019), given here
  as vectors (:func:`cosine_item_means`); the embedding is computed elsewhere;
- ROUGE-L F1 (Lin 2004): the longest common subsequence of the two token sequences, as
  Google's ``rouge-score`` package computes it without stemming (lowercase, runs of
  characters other than ``a-z0-9`` are separators; :func:`rouge_l_f1`).

References
----------
Lin, C.-Y. (2004). ROUGE: A package for automatic evaluation of summaries. *Text
Summarization Branches Out*, 74-81.

Reimers, N., & Gurevych, I. (2019). Sentence-BERT: Sentence embeddings using siamese BERT
networks. *EMNLP-IJCNLP*, 3982-3992.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from agreement._core import check_level, check_n_boot
from agreement.bootstrap import (
    METHODS,
    _interval,
    _too_few,
    check_method,
    check_seed,
    resample_weights,
)
from agreement.results import Interval, ResultMixin

__all__ = [
    "TextSimilarity",
    "cosine_item_means",
    "mean_similarity",
    "rouge_item_means",
    "rouge_l_f1",
    "rouge_tokens",
]

_SEPARATORS = re.compile(r"[^a-z0-9]+")


def rouge_tokens(text: str) -> list[str]:
    """``rouge-score``'s tokenizer without stemming."""
    return [t for t in _SEPARATORS.sub(" ", text.lower()).split() if t]


def _lcs(a: Sequence[str], b: Sequence[str]) -> int:
    if len(a) < len(b):
        a, b = b, a
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def rouge_l_f1(a: str | Sequence[str], b: str | Sequence[str]) -> float:
    """ROUGE-L F1 of two texts (or token lists); 0 when either has no token.

    >>> round(rouge_l_f1("the cat sat on the mat", "the cat is on the mat"), 4)
    0.8333
    """
    ta = rouge_tokens(a) if isinstance(a, str) else list(a)
    tb = rouge_tokens(b) if isinstance(b, str) else list(b)
    if not ta or not tb:
        return 0.0
    lcs = _lcs(ta, tb)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(ta), lcs / len(tb)
    return 2 * precision * recall / (precision + recall)


def rouge_item_means(items: Sequence[Sequence[str]]) -> tuple[np.ndarray, np.ndarray]:
    """Per item with two or more answers: the mean ROUGE-L F1 over its pairs, and the number
    of pairs (items with fewer answers are left out)."""
    means: list[float] = []
    pairs: list[int] = []
    for answers in items:
        if len(answers) < 2:
            continue
        tokens = [rouge_tokens(a) for a in answers]
        scores = [rouge_l_f1(x, y) for x, y in combinations(tokens, 2)]
        means.append(float(np.mean(scores)))
        pairs.append(len(scores))
    return np.asarray(means, dtype=float), np.asarray(pairs, dtype=np.int64)


def cosine_item_means(items: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Per item with two or more answers (rows of vectors): the mean cosine over its pairs,
    and the number of pairs."""
    means: list[float] = []
    pairs: list[int] = []
    for vectors in items:
        m = len(vectors)
        if m < 2:
            continue
        v = np.asarray(vectors, dtype=np.float64)
        norms = np.linalg.norm(v, axis=1)
        v = v / np.where(norms > 0, norms, 1.0)[:, None]
        gram = v @ v.T
        upper = gram[np.triu_indices(m, 1)]
        means.append(float(upper.mean()))
        pairs.append(len(upper))
    return np.asarray(means, dtype=float), np.asarray(pairs, dtype=np.int64)


@dataclass(frozen=True)
class TextSimilarity(ResultMixin):
    """Mean pairwise similarity of answers, over items.

    Attributes
    ----------
    measure : str
        ``"sbert_cosine"`` or ``"rouge_l_f1"`` (or another name the caller gives).
    mean : float or None
        Mean over items of each item's mean pairwise similarity.
    sd : float or None
        Standard deviation of the item means (ddof 1; None below two items).
    ci : Interval
        Bootstrap interval over items.
    n_items : int
        Items with two or more answers (the ones averaged).
    n_pairs : int
        Pairs of answers scored.
    n_items_single : int
        Items with one answer, which have no pair.
    undefined_reason : str or None
        Why ``mean`` is None.
    """

    measure: str
    mean: float | None
    sd: float | None
    ci: Interval
    n_items: int
    n_pairs: int
    n_items_single: int = 0
    undefined_reason: str | None = None


def mean_similarity(
    item_means: np.ndarray,
    n_pairs: np.ndarray | int,
    measure: str,
    *,
    n_items_single: int = 0,
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int | None = 0,
    method: str = "bca",
) -> TextSimilarity:
    """The figure of :class:`TextSimilarity` from per-item means (see the module docstring).

    The bootstrap resamples items: a resample's mean is ``W @ s / n``, and BCa's jackknife
    is the leave-one-out mean.
    """
    check_level(level)
    check_n_boot(n_boot)
    check_method(method)
    seed = check_seed(seed)
    s = np.asarray(item_means, dtype=float)
    n = len(s)
    pairs = int(np.sum(n_pairs))
    if n == 0:
        reason = "No item has two or more answers, so no pair can be compared."
        ci = Interval(None, None, level, METHODS[method], n_boot, 0, seed, reason)
        return TextSimilarity(measure, None, None, ci, 0, 0, n_items_single, reason)
    mean = float(s.mean())
    sd = float(s.std(ddof=1)) if n > 1 else None
    ci = _too_few(n, level, n_boot, seed, method)
    if ci is None:
        stats = np.concatenate([w @ s / n for w in resample_weights(n, n_boot, seed)])
        jackknife = (s.sum() - s) / (n - 1)
        ci = _interval(
            stats, level, n_boot, seed, "no resample was defined.", method, mean, jackknife
        )
    return TextSimilarity(measure, mean, sd, ci, n, pairs, n_items_single)
