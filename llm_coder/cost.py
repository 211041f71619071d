"""Token estimates (before a run) and cost (during and after it)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from llm_coder.prompt import Message

CHARS_PER_TOKEN = 4  # a rough, provider-independent rule of thumb
MESSAGE_OVERHEAD_TOKENS = 4


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def estimate_message_tokens(messages: Sequence[Message]) -> int:
    return sum(estimate_tokens(m["content"]) + MESSAGE_OVERHEAD_TOKENS for m in messages)


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens in (prompt) and out (completion)."""

    per_m_in: float = 0.0
    per_m_out: float = 0.0

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        return (tokens_in * self.per_m_in + tokens_out * self.per_m_out) / 1_000_000

    @property
    def known(self) -> bool:
        return bool(self.per_m_in or self.per_m_out)


@dataclass(frozen=True)
class Estimate:
    requests: int
    cached: int
    tokens_in: int
    tokens_out: int
    cost: float


def estimate_run(
    messages_per_request: Sequence[Sequence[Message]],
    reply_example: str,
    *,
    cached: int = 0,
    price: Price | None = None,
) -> Estimate:
    """Requests still to send and their tokens: prompt tokens of each, replies like the example."""
    tokens_in = sum(estimate_message_tokens(m) for m in messages_per_request)
    tokens_out = len(messages_per_request) * estimate_tokens(reply_example)
    money = (price or Price()).cost(tokens_in, tokens_out)
    return Estimate(len(messages_per_request), cached, tokens_in, tokens_out, money)


def format_cost(dollars: float) -> str:
    return f"${dollars:,.4f}" if dollars < 1 else f"${dollars:,.2f}"
