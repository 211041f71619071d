"""The LLM coder's records: one call (request + reply), one coded item, one split.

:mod:`llm_coder` makes them and the application's store persists them (it imports them from
here: the arrow goes application -> library). A request's identity (:func:`sha256_json` of
its canonical JSON) is defined here too.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from annotate.codebook import Answer

Message = dict[str, str]


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def sha256_json(value: Any) -> str:
    """Identity of a request or prompt: sha256 of canonical JSON (sorted keys)."""
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


@dataclass(frozen=True)
class SplitInfo:
    """A stored split: the few-shot items and the held-out items of a codebook's gold."""

    name: str
    codebook: str
    codebook_hash: str
    gold_coder: str
    sample: str | None
    seed: int
    shots: tuple[str, ...]
    heldout: tuple[str, ...]
    created_at: str
    strategy: str = "cover"


@dataclass(frozen=True)
class ChatRequest:
    model: str
    endpoint_host: str
    messages: tuple[Message, ...]
    prefix_len: int
    temperature: float
    schema: dict[str, Any]
    vote: int = 0
    send_seed: bool = False
    prefix_hash: str | None = None  # sha256 of the prefix, when the caller knows it already

    def canonical(self) -> dict[str, Any]:
        """The request's identity. The prefix enters through its hash (same identity, less
        hashing: the prefix is ~90% of every request and the same for all of them)."""
        return {
            "endpoint": self.endpoint_host,
            "model": self.model,
            "prompt": self.prompt_hash,
            "schema": self.schema,
            "tail": list(self.messages[self.prefix_len :]),
            "temperature": self.temperature,
            "vote": self.vote,
        }

    @cached_property
    def hash(self) -> str:
        return sha256_json(self.canonical())

    @cached_property
    def prompt_hash(self) -> str:
        return self.prefix_hash or sha256_json(list(self.messages[: self.prefix_len]))


@dataclass(frozen=True)
class Reply:
    text: str
    tokens_in: int
    tokens_out: int
    latency_s: float
    response_format: str
    attempts: int = 1
    cached: bool = False


@dataclass(frozen=True)
class CallRecord:
    """What the cache stores: the request (without the key) and its reply."""

    request: ChatRequest
    reply: Reply


@dataclass(frozen=True)
class VoteResult:
    answers: dict[str, Answer] | None
    error: str | None
    raw: tuple[str, ...]
    request_hashes: tuple[str, ...]
    tokens_in: int
    tokens_out: int
    latency_s: float
    cached: bool


@dataclass(frozen=True)
class ItemResult:
    action_id: str
    answers: dict[str, Answer] | None
    error: str | None
    confidence: float | None
    votes: tuple[VoteResult, ...]
    failed: str | None = None

    @property
    def valid(self) -> bool:
        return self.answers is not None

    @property
    def tokens_in(self) -> int:
        return sum(v.tokens_in for v in self.votes)

    @property
    def tokens_out(self) -> int:
        return sum(v.tokens_out for v in self.votes)

    @property
    def latency_s(self) -> float:
        return sum(v.latency_s for v in self.votes)

    @property
    def request_hashes(self) -> list[str]:
        return [h for v in self.votes for h in v.request_hashes]

    @property
    def raw_replies(self) -> list[str]:
        return [r for v in self.votes for r in v.raw]

    @property
    def cached(self) -> bool:
        return bool(self.votes) and all(v.cached for v in self.votes)
