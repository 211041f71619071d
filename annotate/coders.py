"""What a coder's name says: the adjudicated gold, an LLM (``llm:MODEL``), or a human."""

from __future__ import annotations

GOLD = "gold"
LLM_PREFIX = "llm:"


def is_llm(coder: str) -> bool:
    return coder.startswith(LLM_PREFIX)


def is_human(coder: str) -> bool:
    """Coders counted by default: not the adjudicated gold, not an LLM."""
    return coder != GOLD and not is_llm(coder)
