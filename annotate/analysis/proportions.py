"""A share with its confidence interval, as the report's bars show it."""

from __future__ import annotations

import math
from dataclasses import dataclass

Z95 = 1.959963984540054  # the standard normal's 97.5% quantile


@dataclass(frozen=True)
class Share:
    """``k`` of ``n``, with the 95% Wilson score interval (defined for every n > 0, and
    inside [0, 1] even at k = 0 or k = n, where the normal approximation is not)."""

    k: int
    n: int

    @property
    def share(self) -> float | None:
        return self.k / self.n if self.n else None

    @property
    def ci(self) -> tuple[float | None, float | None]:
        return wilson(self.k, self.n)


def wilson(k: int, n: int, z: float = Z95) -> tuple[float | None, float | None]:
    """The Wilson score interval of ``k`` successes in ``n`` trials (None, None at n = 0)."""
    if n <= 0:
        return None, None
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)
