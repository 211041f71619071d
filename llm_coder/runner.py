"""Coding many items: bounded concurrency, one repair retry per unusable reply, votes.

The runner knows nothing about SQL: requests go through a :class:`~llm_coder.calls.Cache`
and finished items go to an ``on_result`` callback (the store writes them).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from annotate.codebook import Answer, Codebook, Question
from llm_coder.calls import Caller, CallFailed, request_for
from llm_coder.prompt import (
    Item,
    Message,
    Shot,
    prefix_messages,
    prompt_hash,
    repair_messages,
    target_message,
)
from llm_coder.records import ItemResult, VoteResult
from llm_coder.schema import answer_schema, parse_reply


@dataclass(frozen=True)
class Settings:
    model: str
    endpoint_host: str
    temperature: float = 0.0
    votes: int = 1


class PromptBuilder:
    """The stable prefix of a run (codebook + shots) and the per-item messages."""

    def __init__(self, codebook: Codebook, shots: Sequence[Shot]):
        self.codebook = codebook
        self.shots = tuple(shots)
        self.prefix = prefix_messages(codebook, shots)
        self.prompt_hash = prompt_hash(self.prefix)
        self._schemas: dict[str, dict] = {}

    def questions(self, item: Item) -> list[Question]:
        return self.codebook.questions_for(item.action.action_type)

    def schema(self, item: Item) -> dict:
        kind = item.action.action_type
        if kind not in self._schemas:
            self._schemas[kind] = answer_schema(self.questions(item))
        return self._schemas[kind]

    def messages(self, item: Item) -> list[Message]:
        return [*self.prefix, target_message(item)]


def _key(answer: Answer) -> tuple[str | None, tuple[str, ...]]:
    return (answer.value, tuple(sorted(answer.codes)))


def majority(
    votes: Sequence[dict[str, Answer] | None], questions: Sequence[Question]
) -> tuple[dict[str, Answer] | None, float | None]:
    """Per question, the most frequent answer (first seen wins ties) and its share.

    Invalid votes (``None``) count against every answer. The item's confidence is the
    lowest share over its questions. No valid vote: ``(None, None)``.
    """
    valid = [v for v in votes if v is not None]
    if not valid:
        return None, None
    answers: dict[str, Answer] = {}
    shares: list[float] = []
    for q in questions:
        counts = Counter(_key(v[q.id]) for v in valid)
        best = max(counts.values())
        winner = next(v[q.id] for v in valid if counts[_key(v[q.id])] == best)
        answers[q.id] = winner
        shares.append(best / len(votes))
    return answers, min(shares) if shares else 1.0


class Runner:
    def __init__(
        self,
        caller: Caller,
        builder: PromptBuilder,
        settings: Settings,
        *,
        max_consecutive_failures: int = 8,
    ):
        if settings.votes < 1:
            raise ValueError("votes must be at least 1")
        self.caller = caller
        self.builder = builder
        self.settings = settings
        self.max_consecutive_failures = max_consecutive_failures

    def first_request(self, item: Item):
        """The first request sent for ``item`` (dry runs show it)."""
        return self._request(item, self.builder.messages(item), 0)

    def _request(self, item: Item, messages: Sequence[Message], vote: int):
        s = self.settings
        return request_for(
            model=s.model,
            endpoint_host=s.endpoint_host,
            messages=messages,
            prefix_len=len(self.builder.prefix),
            temperature=s.temperature,
            schema=self.builder.schema(item),
            vote=vote,
            votes=s.votes,
            prefix_hash=self.builder.prompt_hash,
        )

    async def _vote(self, item: Item, vote: int) -> VoteResult:
        questions = self.builder.questions(item)
        messages = self.builder.messages(item)
        raws: list[str] = []
        hashes: list[str] = []
        replies = []
        while True:  # the reply, then at most one repair retry
            request = self._request(item, messages, vote)
            reply = await self.caller.call(request)
            replies.append(reply)
            raws.append(reply.text)
            hashes.append(request.hash)
            parsed = parse_reply(reply.text, questions)
            if parsed.valid or len(replies) == 2:
                break
            messages = [*messages, *repair_messages(reply.text, parsed.error or "invalid")]
        return VoteResult(
            parsed.answers,
            parsed.error,
            tuple(raws),
            tuple(hashes),
            sum(r.tokens_in for r in replies),
            sum(r.tokens_out for r in replies),
            round(sum(r.latency_s for r in replies), 4),
            all(r.cached for r in replies),
        )

    async def code_item(self, item: Item) -> ItemResult:
        action_id = item.action.id
        try:
            votes = await asyncio.gather(*(self._vote(item, v) for v in range(self.settings.votes)))
        except CallFailed as exc:
            return ItemResult(action_id, None, exc.message, None, (), failed=exc.message)
        answers, confidence = majority([v.answers for v in votes], self.builder.questions(item))
        error = None if answers is not None else votes[0].error
        return ItemResult(action_id, answers, error, confidence, tuple(votes))

    async def run(
        self,
        items: Iterable[Item],
        on_result: Callable[[ItemResult], None],
        *,
        concurrency: int = 8,
    ) -> None:
        """Code every item; ``on_result`` is called as each one finishes.

        Raises :class:`~llm_coder.calls.EndpointError` at once if the endpoint refuses the
        run, and :class:`CallFailed` after ``max_consecutive_failures`` items in a row fail.
        """
        iterator = iter(items)
        consecutive = 0

        async def worker() -> None:
            nonlocal consecutive
            for item in iterator:
                result = await self.code_item(item)
                on_result(result)
                consecutive = consecutive + 1 if result.failed else 0
                if consecutive >= self.max_consecutive_failures:
                    raise CallFailed(
                        f"{consecutive} items in a row failed; stopping ({result.failed})",
                        hint="check that the endpoint is up, then run the same command again",
                    )

        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(max(1, concurrency)):
                    group.create_task(worker())
        except ExceptionGroup as errors:
            raise errors.exceptions[0] from None
