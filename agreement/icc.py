"""Intraclass correlation for numeric ratings: two-way model, absolute agreement.

Every coder rates every item (a complete items x coders table); an item some coder left
unrated is set aside and counted. From the two-way ANOVA of the table (items = rows,
coders = columns, one rating per cell) with mean squares MSR (rows), MSC (columns) and MSE
(residual), for ``n`` items and ``k`` coders:

- single measures, ICC(A,1) = ICC(2,1):
  ``(MSR - MSE) / (MSR + (k - 1) MSE + k (MSC - MSE) / n)``;
- average measures, ICC(A,k) = ICC(2,k): ``(MSR - MSE) / (MSR + (MSC - MSE) / n)``.

The confidence limits are McGraw & Wong's (1996, Table 7, case 2A) F-based ones with
Satterthwaite's degrees of freedom ``v``; the average-measures limits follow from the
single-measures ones by the Spearman-Brown formula, as in the R package psych.

References
----------
Shrout, P. E., & Fleiss, J. L. (1979). Intraclass correlations: Uses in assessing rater
reliability. *Psychological Bulletin*, 86(2), 420-428. (Table 2: 6 targets x 4 judges,
ICC(2,1) = .29, ICC(2,4) = .62.)

McGraw, K. O., & Wong, S. P. (1996). Forming inferences about some intraclass correlation
coefficients. *Psychological Methods*, 1(1), 30-46.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from agreement.results import Interval, ResultMixin

__all__ = ["ICC", "icc"]


@dataclass(frozen=True)
class ICC(ResultMixin):
    """Two-way, absolute-agreement intraclass correlations of a numeric rating.

    Attributes
    ----------
    single, average : float or None
        ICC(A,1) and ICC(A,k).
    single_ci, average_ci : Interval
        McGraw & Wong's F-based confidence limits.
    ms_rows, ms_columns, ms_error : float or None
        The ANOVA's mean squares (items, coders, residual).
    n_items : int
        Items rated by every coder (the rows used).
    n_coders : int
        Coders (k).
    n_items_incomplete : int
        Items set aside because some coder did not rate them.
    undefined_reason : str or None
        Why the figures are None.
    """

    single: float | None
    average: float | None
    single_ci: Interval
    average_ci: Interval
    ms_rows: float | None
    ms_columns: float | None
    ms_error: float | None
    n_items: int
    n_coders: int
    n_items_incomplete: int
    undefined_reason: str | None = None


def _as_table(data: Any) -> np.ndarray:
    values = data.to_numpy() if hasattr(data, "to_numpy") else data
    table = np.asarray(values, dtype=float)
    if table.ndim != 2:
        raise ValueError(f"ICC needs an items x coders table; got {table.ndim} dimension(s).")
    return table


def _undefined(reason: str, level: float, n: int, k: int, incomplete: int) -> ICC:
    none = Interval(None, None, level, "F (McGraw & Wong 1996)", undefined_reason=reason)
    return ICC(None, None, none, none, None, None, None, n, k, incomplete, reason)


def icc(data: Any, *, level: float = 0.95) -> ICC:
    """ICC(A,1) and ICC(A,k) of an items x coders table of numbers (NaN = not rated).

    Examples
    --------
    >>> r = icc([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9],
    ...          [6, 2, 4, 7]])
    >>> round(r.single, 2), round(r.average, 2)
    (0.29, 0.62)
    """
    table = _as_table(data)
    complete = ~np.isnan(table).any(axis=1)
    incomplete = int((~complete).sum())
    table = table[complete]
    n, k = table.shape
    if k < 2:
        return _undefined("ICC needs two or more coders.", level, n, k, incomplete)
    if n < 2:
        return _undefined(
            "ICC needs two or more items rated by every coder.", level, n, k, incomplete
        )
    grand = table.mean()
    ss_rows = k * ((table.mean(axis=1) - grand) ** 2).sum()
    ss_cols = n * ((table.mean(axis=0) - grand) ** 2).sum()
    ss_error = ((table - grand) ** 2).sum() - ss_rows - ss_cols
    msr = ss_rows / (n - 1)
    msc = ss_cols / (k - 1)
    mse = max(ss_error, 0.0) / ((n - 1) * (k - 1))
    single_den = msr + (k - 1) * mse + k * (msc - mse) / n
    average_den = msr + (msc - mse) / n
    if single_den <= 0 or average_den <= 0:
        return _undefined(
            "Every rating is the same number, so the ICC has no variance to explain.",
            level, n, k, incomplete,
        )  # fmt: skip
    single = float((msr - mse) / single_den)
    average = float((msr - mse) / average_den)
    low, high = _limits(single, msr, msc, mse, n, k, level)
    method = "F (McGraw & Wong 1996)"
    return ICC(
        single=single,
        average=average,
        single_ci=Interval(low, high, level, method),
        average_ci=Interval(_spearman_brown(low, k), _spearman_brown(high, k), level, method),
        ms_rows=float(msr),
        ms_columns=float(msc),
        ms_error=float(mse),
        n_items=n,
        n_coders=k,
        n_items_incomplete=incomplete,
    )


def _spearman_brown(value: float | None, k: int) -> float | None:
    return None if value is None else value * k / (1 + value * (k - 1))


def _limits(
    rho: float, msr: float, msc: float, mse: float, n: int, k: int, level: float
) -> tuple[float | None, float | None]:
    """McGraw & Wong (1996), Table 7, case 2A, for ICC(A,1)."""
    from scipy.stats import f as f_dist  # scipy comes with statsmodels; loaded when used

    if mse <= 0:  # a perfect fit: no residual to test against
        return (rho, rho) if rho == 1.0 else (None, None)
    tail = (1 - level) / 2
    fj = msc / mse
    a = k * rho / (n * (1 - rho)) if rho < 1 else np.inf
    b = 1 + k * rho * (n - 1) / (n * (1 - rho)) if rho < 1 else np.inf
    if not np.isfinite(a):
        return None, None
    v = (a * fj + b) ** 2 / ((a * fj) ** 2 / (k - 1) + b**2 / ((n - 1) * (k - 1)))
    f_up = f_dist.ppf(1 - tail, n - 1, v)
    f_low = f_dist.ppf(1 - tail, v, n - 1)
    low = n * (msr - f_up * mse) / (f_up * (k * msc + (k * n - k - n) * mse) + n * msr)
    high = n * (f_low * msr - mse) / (k * msc + (k * n - k - n) * mse + n * f_low * msr)
    return float(low), float(high)
