"""Landis & Koch (1977) verbal bands for kappa-like coefficients.

References
----------
Landis, J. R., & Koch, G. G. (1977). The measurement of observer agreement for
categorical data. *Biometrics*, 33(1), 159-174. https://doi.org/10.2307/2529310
"""

from __future__ import annotations

import math

# Upper bound (inclusive) of each band; below 0 is "poor".
LANDIS_KOCH_BANDS: tuple[tuple[float, str], ...] = (
    (0.0, "poor"),
    (0.20, "slight"),
    (0.40, "fair"),
    (0.60, "moderate"),
    (0.80, "substantial"),
    (1.00, "almost perfect"),
)


def landis_koch(kappa: float) -> str:
    """Name the Landis & Koch (1977) band of a kappa value.

    Parameters
    ----------
    kappa : float
        A kappa-like coefficient in [-1, 1].

    Returns
    -------
    str
        ``"poor"`` (< 0), ``"slight"`` (0-0.20), ``"fair"`` (0.21-0.40), ``"moderate"``
        (0.41-0.60), ``"substantial"`` (0.61-0.80) or ``"almost perfect"`` (0.81-1).
        Upper limits are inclusive: 0.20 is slight, 0.2001 fair.

    Raises
    ------
    ValueError
        If ``kappa`` is NaN or outside [-1, 1].
    """
    value = float(kappa)
    if math.isnan(value) or not -1.0 - 1e-12 <= value <= 1.0 + 1e-12:
        raise ValueError(f"A kappa value must be between -1 and 1; got {kappa!r}.")
    if value < 0:
        return "poor"
    for upper, name in LANDIS_KOCH_BANDS[1:]:
        if value <= upper + 1e-12:
            return name
    return LANDIS_KOCH_BANDS[-1][1]
