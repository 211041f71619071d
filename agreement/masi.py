"""Agreement on multi-select answers (sets of codes): MASI-weighted alpha and per-code kappas.

References
----------
Passonneau, R. J. (2006). Measuring agreement on set-valued items (MASI) for semantic and
pragmatic annotation. *Proceedings of LREC 2006*, 831-836.

Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Departmental Papers
(ASC), University of Pennsylvania.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from agreement._core import pair_counts, ratings_per_item
from agreement.fleiss import FleissKappa, fleiss_kappa
from agreement.krippendorff_alpha import (
    KrippendorffAlpha,
    alpha_from_coincidences,
    krippendorff_alpha,
)
from agreement.matrix import as_set_matrix, label_name
from agreement.results import ResultMixin

__all__ = ["CodeAgreement", "masi_alpha", "masi_distance", "per_code_kappas"]


def _as_set(answer: Iterable[Any] | str) -> frozenset[str]:
    if isinstance(answer, str):
        return frozenset([answer])
    return frozenset(label_name(c) for c in answer)


def masi_distance(a: Iterable[Any] | str, b: Iterable[Any] | str) -> float:
    """MASI distance between two sets of codes (Passonneau 2006).

    ``1 - J * M``, with J the Jaccard index ``|a & b| / |a | b|`` and M the monotonicity
    factor: 1 if the sets are equal, 2/3 if one is a subset of the other, 1/3 if they
    intersect but neither is a subset, 0 if they are disjoint.

    Parameters
    ----------
    a, b : iterable of str
        The two answers (a string counts as a one-code set).

    Returns
    -------
    float
        In [0, 1]. Two empty answers are equal (distance 0); an empty and a non-empty
        answer are disjoint (distance 1).

    Examples
    --------
    >>> masi_distance({"x", "y"}, {"x"})
    0.6666666666666667
    """
    a, b = _as_set(a), _as_set(b)
    if a == b:
        return 0.0
    union = len(a | b)
    common = len(a & b)
    if common == 0:
        return 1.0
    monotonicity = 2.0 / 3.0 if (a <= b or b <= a) else 1.0 / 3.0
    return 1.0 - (common / union) * monotonicity


def masi_matrix(values: Sequence[frozenset[str]]) -> np.ndarray:
    """Pairwise MASI distances between answers, shape (len(values), len(values))."""
    size = len(values)
    out = np.zeros((size, size))
    for i in range(size):
        for j in range(i + 1, size):
            out[i, j] = out[j, i] = masi_distance(values[i], values[j])
    return out


def masi_alpha(data: Any, *, categories: Iterable[Any] | None = None) -> KrippendorffAlpha:
    """Krippendorff's alpha of multi-select answers with the MASI distance.

    Parameters
    ----------
    data : SetLabelMatrix, DataFrame or 2-D table of sets
        Answers, items x coders (or long form; see :func:`agreement.as_set_matrix`);
        ``None`` is no rating, an empty set is a real (empty) answer.
    categories : iterable of str, optional
        Allowed codes; a code outside the list is a ValueError naming it.

    Returns
    -------
    KrippendorffAlpha
        With ``metric="masi"``. The distinct answers are alpha's values and
        ``masi_distance`` their distance; missing ratings are allowed.
    """
    matrix = as_set_matrix(data, categories)
    codes = matrix.codes
    m = ratings_per_item(codes)
    pairable = m >= 2
    weights = np.zeros(len(m))
    np.divide(1.0, m - 1, out=weights, where=pairable)
    coincidences = pair_counts(codes, len(matrix.values), weights)
    labels = tuple("{" + ", ".join(sorted(v)) + "}" for v in matrix.values)
    return alpha_from_coincidences(
        coincidences,
        masi_matrix(matrix.values),
        "masi",
        int(pairable.sum()),
        int((m == 1).sum()),
        labels,
    )


@dataclass(frozen=True)
class CodeAgreement(ResultMixin):
    """Agreement on whether one code is in the answer (present/absent).

    Attributes
    ----------
    code : str
    prevalence : float or None
        Share of ratings whose answer contains the code.
    fleiss : FleissKappa
        Fleiss' kappa of present/absent over items every coder rated (Cohen-like for
        two coders: Scott's pi).
    alpha : KrippendorffAlpha
        Nominal alpha of present/absent over all items (missing ratings allowed).
    """

    code: str
    prevalence: float | None
    fleiss: FleissKappa
    alpha: KrippendorffAlpha


def per_code_kappas(
    data: Any, *, categories: Iterable[Any] | None = None
) -> tuple[CodeAgreement, ...]:
    """Binary (present/absent) agreement for every code of a multi-select question.

    Parameters
    ----------
    data : SetLabelMatrix, DataFrame or 2-D table of sets
    categories : iterable of str, optional
        Codes to report (default: every code used), in this order.

    Returns
    -------
    tuple of CodeAgreement
        One per code; a code nobody (or everybody) chose has ``fleiss.kappa`` None with
        the reason.
    """
    matrix = as_set_matrix(data, categories)
    rated = matrix.codes >= 0
    n_ratings = int(rated.sum())
    results = []
    for code in matrix.categories:
        binary = matrix.code_matrix(code)
        prevalence = float((binary.codes == 1).sum()) / n_ratings if n_ratings else None
        results.append(
            CodeAgreement(code, prevalence, fleiss_kappa(binary), krippendorff_alpha(binary))
        )
    return tuple(results)
