"""Cohen's kappa for a pair of coders, with the asymptotic standard errors of SAS PROC FREQ.

References
----------
Cohen, J. (1960). A coefficient of agreement for nominal scales. *Educational and
Psychological Measurement*, 20(1), 37-46. https://doi.org/10.1177/001316446002000104

Cohen, J. (1968). Weighted kappa: Nominal scale agreement with provision for scaled
disagreement or partial credit. *Psychological Bulletin*, 70(4), 213-220.
https://doi.org/10.1037/h0026256

Fleiss, J. L., Cohen, J., & Everitt, B. S. (1969). Large sample standard errors of kappa
and weighted kappa. *Psychological Bulletin*, 72(5), 323-327.
https://doi.org/10.1037/h0028106

SAS Institute. *PROC FREQ: Tests and Measures of Agreement* (simple kappa coefficient).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from agreement._core import check_level, finite, normal_quantile, two_sided_p
from agreement.bands import landis_koch
from agreement.fleiss import too_few_for_z
from agreement.matrix import as_label_matrix, confusion_from_codes, label_name
from agreement.results import ConfusionMatrix, Interval, ResultMixin

__all__ = ["CohenKappa", "cohen_kappa", "cohen_kappa_table", "pairwise_cohen"]

ASYMPTOTIC = "asymptotic"
ROUNDING = 1e-14  # variances below this are zeros blurred by floating-point rounding


@dataclass(frozen=True)
class CohenKappa(ResultMixin):
    """Cohen's kappa of two coders over the items both rated.

    Attributes
    ----------
    coder_a, coder_b : str
        The pair (``coder_a`` indexes the rows of ``confusion``).
    n_items : int
        Items both coders rated.
    kappa : float or None
        ``(p_o - p_e) / (1 - p_e)``.
    ase : float or None
        Asymptotic standard error of kappa, not assuming kappa = 0 (Fleiss, Cohen & Everitt
        1969); the confidence interval uses it. None on a single item (see
        ``undefined_reason``).
    ci : Interval
        ``kappa ± z · ase`` at the requested level (SAS PROC FREQ).
    se0 : float or None
        Standard error under H0: kappa = 0; the z-test uses it. None on fewer than
        ``2 k**2`` items for k categories in use (Cicchetti & Fleiss 1977), as for Fleiss'
        kappa (:func:`agreement.fleiss.min_items_for_z`).
    z, p_value : float or None
        ``kappa / se0`` and its two-sided normal p-value.
    observed_agreement : float or None
        p_o, the share of items with the same label (percent agreement / 100).
    expected_agreement : float or None
        p_e, chance agreement from the two coders' marginals.
    kappa_max : float or None
        Largest kappa the marginals allow.
    band : str or None
        Landis & Koch band of ``kappa``.
    confusion : ConfusionMatrix
        Rows ``coder_a``, columns ``coder_b``.
    undefined_reason : str or None
        Why a statistic is None.
    weights : str or None
        ``"linear"`` or ``"quadratic"`` for weighted kappa (Cohen 1968; categories in
        their listed order), None for unweighted kappa.
    """

    coder_a: str
    coder_b: str
    n_items: int
    kappa: float | None
    ase: float | None
    ci: Interval
    se0: float | None
    z: float | None
    p_value: float | None
    observed_agreement: float | None
    expected_agreement: float | None
    kappa_max: float | None
    band: str | None
    confusion: ConfusionMatrix
    undefined_reason: str | None = None
    weights: str | None = None


def _interval(kappa: float, half: float, level: float) -> Interval:
    """kappa ± half, clipped to [-1, 1] (kappa's range), with a note when it is clipped or
    has no width."""
    low, high = kappa - half, kappa + half
    note = None
    if not half:
        note = (
            "The asymptotic standard error is 0, so the interval has no width; it says "
            "nothing about how precise kappa is."
        )
    elif low < -1 or high > 1:
        note = f"CI clipped to [-1, 1] (kappa ± z·ASE is {low:.3f} to {high:.3f})."
    return Interval(finite(max(low, -1.0)), finite(min(high, 1.0)), level, ASYMPTOTIC, note=note)


def kappa_from_confusion(
    confusion: ConfusionMatrix, ci: float = 0.95, min_items_z: int | None = None
) -> CohenKappa:
    """Cohen's kappa, its ASE, CI and z-test from a confusion matrix.

    The z-test (se0, z, p) needs ``min_items_z`` items, by default ``2 k**2`` for k
    categories in use (:func:`agreement.fleiss.min_items_for_z`).
    """
    level = check_level(ci)
    table = confusion.to_array().astype(np.float64)
    n = float(table.sum())
    a, b = confusion.rows_coder, confusion.columns_coder

    def undefined(reason: str, observed: float | None = None) -> CohenKappa:
        interval = Interval(None, None, level, ASYMPTOTIC, undefined_reason=reason)
        return CohenKappa(
            a, b, int(n), None, None, interval, None, None, None, observed,
            None if observed is None else 1.0, None, None, confusion, reason,
        )  # fmt: skip

    if n == 0:
        return undefined(f"No item was rated by both {a!r} and {b!r}.")
    probs = table / n
    rows = probs.sum(axis=1)
    cols = probs.sum(axis=0)
    observed = float(np.trace(probs))
    expected = float((rows * cols).sum())
    used = np.flatnonzero((rows + cols) > 0)
    if len(used) == 1:
        only = confusion.labels[int(used[0])]
        return undefined(
            f"{a!r} and {b!r} both gave every item {only!r}, so chance agreement is 1 and "
            "kappa is undefined (0/0); percent agreement is 100%.",
            observed,
        )
    kappa = (observed - expected) / (1.0 - expected)
    if n < 2:
        reason = (
            "On a single item the asymptotic standard errors are undefined, so Cohen's kappa "
            "has no confidence interval and no z-test."
        )
        ase = se0 = z = None
        interval = Interval(None, None, level, ASYMPTOTIC, undefined_reason=reason)
    else:
        # Fleiss, Cohen & Everitt (1969), as in SAS PROC FREQ.
        term_a = float((np.diag(probs) * (1.0 - (rows + cols) * (1.0 - kappa)) ** 2).sum())
        off = probs * (cols[:, None] + rows[None, :]) ** 2
        np.fill_diagonal(off, 0.0)
        term_b = (1.0 - kappa) ** 2 * float(off.sum())
        term_c = (kappa - expected * (1.0 - kappa)) ** 2
        var = (term_a + term_b - term_c) / ((1.0 - expected) ** 2 * n)
        var = var if var > ROUNDING else 0.0  # exact zeros come out as ±1e-17
        var0 = (expected + expected**2 - float((rows * cols * (rows + cols)).sum())) / (
            (1.0 - expected) ** 2 * n
        )
        ase = math.sqrt(var)
        interval = _interval(kappa, normal_quantile(level) * ase, level)
        reason = None
        se0 = math.sqrt(var0) if var0 > ROUNDING else None
        z = kappa / se0 if se0 else None
        if se0 is None:
            reason = (
                "The standard error under H0 is 0 (one coder used a single category), "
                "so the z-test is undefined."
            )
    kappa_max = (float(np.minimum(rows, cols).sum()) - expected) / (1.0 - expected)
    too_few = too_few_for_z(int(n), len(used), min_items_z, "Cohen's kappa") if se0 else None
    if too_few:  # the same minimum as Fleiss' kappa (Cicchetti & Fleiss 1977)
        se0 = z = None
        reason = too_few
    return CohenKappa(
        coder_a=a,
        coder_b=b,
        n_items=int(n),
        kappa=finite(kappa),
        ase=ase,
        ci=interval,
        se0=se0,
        z=finite(z) if z is not None else None,
        p_value=two_sided_p(z) if z is not None else None,
        observed_agreement=observed,
        expected_agreement=expected,
        kappa_max=finite(kappa_max),
        band=landis_koch(kappa),
        confusion=confusion,
        undefined_reason=reason,
    )


def cohen_kappa(
    data: Any,
    coder_a: str | None = None,
    coder_b: str | None = None,
    *,
    categories: Iterable[Any] | None = None,
    ci: float = 0.95,
    weights: str | None = None,
    min_items_z: int | None = None,
) -> CohenKappa:
    """Cohen's kappa of two coders over the items both rated, unweighted or weighted.

    Parameters
    ----------
    data : LabelMatrix, DataFrame or 2-D array_like
        Labels, items x coders (or long form; see :func:`agreement.as_label_matrix`).
    coder_a, coder_b : str, optional
        The pair; may be omitted when ``data`` has exactly two coders.
    categories : iterable of str, optional
        Allowed labels; a label outside the list is a ValueError naming it.
    ci : float
        Level of the asymptotic confidence interval.
    weights : {None, "linear", "quadratic"}
        Weighted kappa (Cohen 1968) for ordered categories, in ``categories`` order (else
        the labels' natural order); see :func:`weighted_from_confusion`.
    min_items_z : int, optional
        Fewest items for the z-test (default ``2 k**2``; see
        :func:`agreement.fleiss.min_items_for_z`).

    Returns
    -------
    CohenKappa

    Notes
    -----
    ASE (Fleiss, Cohen & Everitt 1969, SAS PROC FREQ)::

        var = [sum_i p_ii (1 - (p_i. + p_.i)(1 - k))**2
               + (1 - k)**2 sum_{i != j} p_ij (p_.i + p_j.)**2
               - (k - p_e (1 - k))**2] / ((1 - p_e)**2 n)

    and under H0 ``var0 = [p_e + p_e**2 - sum_i p_i. p_.i (p_i. + p_.i)] / ((1 - p_e)**2 n)``.
    """
    matrix = as_label_matrix(data, categories)
    if coder_a is None and coder_b is None:
        if matrix.n_coders != 2:
            raise ValueError(
                f"Name the two coders to compare: the data has {matrix.n_coders} coders "
                f"({', '.join(map(repr, matrix.coders))})."
            )
        coder_a, coder_b = matrix.coders
    elif coder_a is None or coder_b is None:
        raise ValueError("Name both coders to compare, or neither when there are exactly two.")
    pair = matrix.select([coder_a, coder_b])
    codes = pair.codes
    confusion = confusion_from_codes(codes[:, 0], codes[:, 1], pair.categories, coder_a, coder_b)
    if weights is not None:
        return weighted_from_confusion(confusion, weights, ci, min_items_z)
    return kappa_from_confusion(confusion, ci, min_items_z)


def cohen_kappa_table(
    table: Any,
    *,
    categories: Iterable[Any] | None = None,
    rows_coder: str = "rows",
    columns_coder: str = "columns",
    ci: float = 0.95,
    weights: str | None = None,
    min_items_z: int | None = None,
) -> CohenKappa:
    """Cohen's kappa from a square cross-tabulation of two coders.

    Parameters
    ----------
    table : 2-D array_like or DataFrame of non-negative integers
        ``table[i, j]`` items labelled i by the first coder and j by the second.
    categories : iterable of str, optional
        Category names (default: the DataFrame's columns, else ``"1"``, ``"2"``…).
    rows_coder, columns_coder : str
        Names of the two coders, for the result.
    ci : float
        Level of the asymptotic confidence interval.
    weights : {None, "linear", "quadratic"}
        Weighted kappa, categories in table order.
    min_items_z : int, optional
        Fewest items for the z-test (default ``2 k**2``).

    Returns
    -------
    CohenKappa

    Raises
    ------
    ValueError
        If the table is not square or holds negative or fractional counts.
    """
    names = list(table.columns) if hasattr(table, "columns") else None
    counts = np.asarray(table, dtype=np.float64)
    if counts.ndim != 2 or counts.shape[0] != counts.shape[1]:
        raise ValueError(f"A cross-tabulation must be square; got shape {counts.shape}.")
    if np.isnan(counts).any() or (counts < 0).any() or (counts != np.round(counts)).any():
        raise ValueError("A cross-tabulation must hold non-negative whole numbers.")
    if categories is not None:
        names = list(categories)
    if names is None:
        names = [str(j + 1) for j in range(counts.shape[0])]
    labels = tuple(label_name(c) for c in names)
    if len(labels) != counts.shape[0]:
        raise ValueError(
            f"The cross-tabulation has {counts.shape[0]} categories but {len(labels)} names."
        )
    confusion = ConfusionMatrix(
        rows_coder, columns_coder, labels, tuple(tuple(int(x) for x in row) for row in counts)
    )
    if weights is not None:
        return weighted_from_confusion(confusion, weights, ci, min_items_z)
    return kappa_from_confusion(confusion, ci, min_items_z)


def pairwise_cohen(
    data: Any,
    *,
    categories: Iterable[Any] | None = None,
    ci: float = 0.95,
    weights: str | None = None,
) -> tuple[CohenKappa, ...]:
    """Cohen's kappa for every pair of coders (in column order: (1, 2), (1, 3), … (2, 3)…).

    Parameters
    ----------
    data : LabelMatrix, DataFrame or 2-D array_like
    categories : iterable of str, optional
    ci : float
        Level of the asymptotic confidence intervals.
    weights : {None, "linear", "quadratic"}
        Weighted kappas of ordered categories.

    Returns
    -------
    tuple of CohenKappa
        Empty when there are fewer than two coders.
    """
    matrix = as_label_matrix(data, categories)
    codes = matrix.codes
    results = []
    for i in range(matrix.n_coders):
        for j in range(i + 1, matrix.n_coders):
            confusion = confusion_from_codes(
                codes[:, i], codes[:, j], matrix.categories, matrix.coders[i], matrix.coders[j]
            )
            if weights is not None:
                results.append(weighted_from_confusion(confusion, weights, ci))
            else:
                results.append(kappa_from_confusion(confusion, ci))
    return tuple(results)


# --- weighted kappa -----------------------------------------------------------------------

WEIGHTS = ("linear", "quadratic")


def agreement_weights(n_categories: int, weights: str) -> np.ndarray:
    """Cohen's (1968) agreement weights of k ordered categories.

    ``linear``: ``1 - |i - j| / (k - 1)``; ``quadratic``: ``1 - (i - j)**2 / (k - 1)**2``.
    """
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be 'linear' or 'quadratic'; got {weights!r}.")
    k = int(n_categories)
    index = np.arange(k, dtype=np.float64)
    distance = np.abs(index[:, None] - index[None, :]) / max(k - 1, 1)
    return 1.0 - (distance if weights == "linear" else distance**2)


def weighted_from_confusion(
    confusion: ConfusionMatrix,
    weights: str,
    ci: float = 0.95,
    min_items_z: int | None = None,
) -> CohenKappa:
    """Weighted kappa of ordered categories (``confusion.labels`` order) with the
    asymptotic standard errors of Fleiss, Cohen & Everitt (1969).

    With agreement weights w, ``p_o = sum w_ij p_ij``, ``p_e = sum w_ij p_i. p_.j``,
    ``wbar_i. = sum_j w_ij p_.j`` and ``wbar_.j = sum_i w_ij p_i.``::

        var = [sum p_ij (w_ij - (wbar_i. + wbar_.j)(1 - k))**2
               - (k - p_e (1 - k))**2] / (n (1 - p_e)**2)
        var0 = [sum p_i. p_.j (w_ij - (wbar_i. + wbar_.j))**2 - p_e**2] / (n (1 - p_e)**2)

    With identity weights this is Cohen's kappa.
    """
    level = check_level(ci)
    w = agreement_weights(len(confusion.labels), weights)
    unweighted = kappa_from_confusion(confusion, level, min_items_z)
    table = confusion.to_array().astype(np.float64)
    n = float(table.sum())
    if n == 0:
        return dataclasses.replace(unweighted, weights=weights)
    probs = table / n
    rows, cols = probs.sum(axis=1), probs.sum(axis=0)
    observed = float((w * probs).sum())
    expected = float((w * np.outer(rows, cols)).sum())
    a, b = confusion.rows_coder, confusion.columns_coder
    if expected >= 1.0 - ROUNDING:
        reason = (
            f"{a!r} and {b!r} gave every item the same category, so weighted chance "
            "agreement is 1 and weighted kappa is undefined (0/0)."
        )
        interval = Interval(None, None, level, ASYMPTOTIC, undefined_reason=reason)
        return CohenKappa(
            a, b, int(n), None, None, interval, None, None, None, observed, expected, None,
            None, confusion, reason, weights,
        )  # fmt: skip
    kappa = (observed - expected) / (1.0 - expected)
    used = int(((rows + cols) > 0).sum())
    reason = None
    ase = se0 = z = None
    if n < 2:
        reason = (
            "On a single item the asymptotic standard errors are undefined, so weighted "
            "kappa has no confidence interval and no z-test."
        )
        interval = Interval(None, None, level, ASYMPTOTIC, undefined_reason=reason)
    else:
        wbar = (w @ cols)[:, None] + (rows @ w)[None, :]
        var = (
            float((probs * (w - wbar * (1.0 - kappa)) ** 2).sum())
            - (kappa - expected * (1.0 - kappa)) ** 2
        ) / (n * (1.0 - expected) ** 2)
        var0 = (float((np.outer(rows, cols) * (w - wbar) ** 2).sum()) - expected**2) / (
            n * (1.0 - expected) ** 2
        )
        ase = math.sqrt(var) if var > ROUNDING else 0.0
        interval = _interval(kappa, normal_quantile(level) * ase, level)
        se0 = math.sqrt(var0) if var0 > ROUNDING else None
        if se0 is None:
            reason = "The standard error under H0 is 0, so the z-test is undefined."
        else:
            reason = too_few_for_z(int(n), used, min_items_z, "weighted kappa")
            if reason:
                se0 = None
        z = kappa / se0 if se0 else None
    return CohenKappa(
        coder_a=a,
        coder_b=b,
        n_items=int(n),
        kappa=finite(kappa),
        ase=ase,
        ci=interval,
        se0=se0,
        z=finite(z) if z is not None else None,
        p_value=two_sided_p(z) if z is not None else None,
        observed_agreement=observed,
        expected_agreement=expected,
        kappa_max=None,
        band=landis_koch(max(min(kappa, 1.0), -1.0)),
        confusion=confusion,
        undefined_reason=reason,
        weights=weights,
    )
