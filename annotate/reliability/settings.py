"""The settings every agreement figure is computed with, in one place: `agree`, `report`
and the LLM validation of `llm-label` use these unless told otherwise, so the same
statistic on the same labels prints the same digits wherever it is shown (no imports:
the CLI reads them at startup)."""

from __future__ import annotations

DEFAULT_CI = 0.95
DEFAULT_N_BOOT = 1000
DEFAULT_SEED = 0
DEFAULT_CI_METHOD = "bca"  # agreement.bootstrap.DEFAULT_METHOD


def settings_words(ci: float, n_boot: int, seed: int, ci_method: str) -> str:
    """E.g. "95% BCa bootstrap CI, 1,000 resamples, seed 0"."""
    method = "BCa" if ci_method == "bca" else "percentile"
    return f"{100 * ci:g}% {method} bootstrap CI, {n_boot:,} resamples, seed {seed}"
