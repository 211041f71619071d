"""Sending one chat request: cache first, then the endpoint with retries and fallbacks.

- A request's identity is :attr:`ChatRequest.hash`, the sha256 of its canonical JSON
  (model, endpoint host, messages, temperature, answer schema, vote number). The key and the
  transport details (which ``response_format`` kind was accepted) are not part of it.
- :class:`Caller` looks the hash up in a :class:`Cache` first; on a miss it sends the
  request (bounded by a semaphore), stores the reply at once (so a killed run never pays
  twice), and shares one in-flight request between identical concurrent callers.
- 429, 5xx, timeouts and connection errors are retried with exponential backoff, waiting
  ``Retry-After`` (or ``retry-after-ms``) when the endpoint sends it.
- A refusal whose body names the response format (any 4xx or 5xx: llama-cpp-python answers
  an unknown ``type`` with HTTP 500) downgrades :class:`FormatFallback` one mode
  (json_schema -> json_object_schema -> json_object -> none) once for the whole run, and the
  request is sent again. The body decides, not the status code.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from annotate.errors import AnnotateError
from llm_coder.client import LazyClient
from llm_coder.concurrency import AdaptiveLimit
from llm_coder.prompt import Message
from llm_coder.records import CallRecord, ChatRequest, Reply
from llm_coder.schema import FORMAT_MODES, FormatMode, response_format


class EndpointError(AnnotateError):
    """The endpoint refused the run (bad key, unknown model, bad request): stop everything."""


class CallFailed(AnnotateError):
    """One request still failed after every retry; the item is left for the next run."""


class Cache(Protocol):
    def get(self, request_hash: str) -> Reply | None: ...

    def put(self, record: CallRecord) -> None: ...


class MemoryCache:
    """A dict-backed :class:`Cache` (tests, dry runs)."""

    def __init__(self) -> None:
        self.records: dict[str, CallRecord] = {}

    def get(self, request_hash: str) -> Reply | None:
        record = self.records.get(request_hash)
        return record.reply if record else None

    def put(self, record: CallRecord) -> None:
        self.records[record.request.hash] = record


@dataclass
class FormatFallback:
    """Which ``response_format`` kind the endpoint accepts; only ever moves down.

    ``forced`` (``--response-format``) never moves: a refusal of that mode stops the run.
    Until ``settled`` (a reply came back, or the mode was forced or stored for the endpoint),
    :class:`Caller` sends one request at a time, so that an endpoint that refuses the mode
    refuses it once, not once per request in flight.
    """

    mode: FormatMode = "json_schema"
    forced: bool = False
    settled: bool = False
    changes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.settled = self.settled or self.forced

    def downgrade(self, failed: FormatMode, reason: str) -> None:
        if self.mode != failed:
            return  # another request already moved it
        if self.forced:
            raise EndpointError(
                f"the endpoint refused --response-format {failed} ({reason})",
                hint="leave out --response-format and annotate finds a format the endpoint "
                "accepts, or choose a later one: " + ", ".join(FORMAT_MODES),
            )
        nxt: FormatMode = FORMAT_MODES[FORMAT_MODES.index(failed) + 1]
        self.mode = nxt
        self.changes.append(f"{failed} -> {nxt}: {reason}")


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 5
    base_delay_s: float = 0.5
    max_delay_s: float = 60.0
    max_retry_after_s: float = 600.0
    """A longer Retry-After fails the item (to be sent again by a later run)."""
    timeout_s: float = 60.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return max(retry_after, 0.0)
        backoff = self.base_delay_s * 2 ** (attempt - 1)
        return min(backoff * (0.75 + random.random() / 2), self.max_delay_s)


@dataclass
class CallStats:
    sent: int = 0
    cached: int = 0
    retries: int = 0
    timeouts: int = 0
    fallbacks: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``Retry-After`` (seconds or HTTP date)."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        if parsed is None:
            return None
        return max(0.0, parsed.timestamp() - time.time())


FORMAT_WORDS = ("response_format", "json_schema", "json_object", "structured output")
"""A refusal naming one of these is about the response format (OpenAI's ``param``, vLLM's and
LM Studio's messages, a pydantic validation error on ``response_format.type``)."""


def _is_format_error(status: int, message: str, param: str | None) -> bool:
    if status < 400 or status in (401, 403, 404, 429):
        return False
    text = message.lower()
    return param == "response_format" or any(word in text for word in FORMAT_WORDS)


def _status_message(exc: Any) -> str:
    """What the endpoint said on one line, without the SDK's "Error code: N" (we say HTTP N).

    The SDK only reads ``{"error": {"message": ...}}``; LM Studio answers
    ``{"error": "..."}`` and FastAPI servers ``{"detail": ...}``, so an empty message
    falls back to the body as sent (shortened)."""
    status = exc.status_code
    message = str(getattr(exc, "message", exc)).removeprefix(f"Error code: {status}")
    message = message.removeprefix(" - ").strip()
    if not message:
        body = exc.body if exc.body is not None else exc.response.text
        message = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    message = " ".join(message.split())  # one line (pydantic and tracebacks span several)
    return (message[:400] + " ...") if len(message) > 400 else message or "(no body)"


def _read_completion(raw: str) -> tuple[str, int, int]:
    """Content and token counts of a chat-completion response body."""
    return read_completion(json.loads(raw))


def request_body(request: ChatRequest, mode: FormatMode) -> dict[str, Any]:
    """The JSON body POSTed to ``/chat/completions`` (and written into batch files)."""
    body: dict[str, Any] = {
        "model": request.model,
        "messages": list(request.messages),
        "temperature": request.temperature,
    }
    if request.send_seed:
        body["seed"] = request.vote
    fmt = response_format(mode, request.schema)
    if fmt is not None:
        body["response_format"] = fmt
    return body


def read_completion(data: dict[str, Any]) -> tuple[str, int, int]:
    """Content and token counts of a parsed chat-completion response body."""
    content = data["choices"][0]["message"].get("content") or ""
    if not isinstance(content, str):
        raise TypeError("content is not text")
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return content, token_count(usage.get("prompt_tokens")), token_count(
        usage.get("completion_tokens")
    )


MAX_COUNT = 2**63 - 1
"""SQLite's largest integer."""


def token_count(value: Any) -> int:
    """A provider's token count, or 0 when it gives none that can be one (absent, negative,
    not a whole number, beyond what SQLite holds): a bad count never costs the reply."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if isinstance(value, float) and not value.is_integer():
        return 0
    return int(value) if 0 <= value <= MAX_COUNT else 0


def _scrub(text: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def client_secrets(client: Any) -> tuple[str, ...]:
    """What must never be printed: the key, and a password or query values in the base URL
    (``...?key=``: a server that echoes the path in a 404 would print it)."""
    found = [getattr(client, "api_key", None) or ""]
    url = urllib.parse.urlsplit(str(getattr(client, "base_url", "") or ""))
    found.append(urllib.parse.unquote(url.password or ""))
    for _, value in urllib.parse.parse_qsl(url.query, keep_blank_values=False):
        found += [value, urllib.parse.quote(value, safe="")]
    return tuple(sorted({s for s in found if len(s) >= 4}, key=len, reverse=True))


class Caller:
    """Cache-first, bounded, retrying chat calls for one run."""

    def __init__(
        self,
        client: Any,
        cache: Cache,
        *,
        concurrency: int = 8,
        adapt: bool = False,
        policy: RetryPolicy | None = None,
        fallback: FormatFallback | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ):
        """``adapt``: step the concurrency down while the server answers one request at a
        time or times out (:class:`~llm_coder.concurrency.AdaptiveLimit`)."""
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.client = client
        self.cache = cache
        self.policy = policy or RetryPolicy()
        self.fallback = fallback or FormatFallback()
        self.stats = CallStats()
        self.limit = AdaptiveLimit(concurrency, adapt=adapt)
        self._sleep = sleep
        self._inflight: dict[str, asyncio.Future[Reply]] = {}
        self._probe = asyncio.Lock()

    async def call(self, request: ChatRequest) -> Reply:
        key = request.hash
        hit = self.cache.get(key)
        if hit is not None:
            self.stats.cached += 1
            return hit if hit.cached else replace(hit, cached=True)
        pending = self._inflight.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            async with self.limit:
                reply = await self._send_when_settled(request)
            self.cache.put(CallRecord(request, reply))
            future.set_result(reply)
            return reply
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: waiters, if any, re-raise it
            raise
        finally:
            del self._inflight[key]

    async def _send_when_settled(self, request: ChatRequest) -> Reply:
        if not self.fallback.settled:
            async with self._probe:
                if not self.fallback.settled:
                    return await self._send(request)
        return await self._send(request)

    def _body(self, request: ChatRequest, mode: FormatMode) -> dict[str, Any]:
        return request_body(request, mode)

    async def _post(self, body: dict[str, Any]) -> str:
        """POST /chat/completions through the SDK client (auth, errors, connection pool).

        ``client.post`` instead of ``client.chat.completions.create``: ``create`` walks every
        message and the JSON schema against its TypedDicts on each call, and builds a
        pydantic model of the reply; at 32 requests in flight on two cores that cost 40% of
        the throughput. The body is plain JSON already; the reply is read by :func:`_reply`.
        """
        client = self.client.get() if isinstance(self.client, LazyClient) else self.client
        return await client.post(
            "/chat/completions",
            cast_to=str,
            body=body,
            options={"timeout": self.policy.timeout_s, "security": {"bearer_auth": True}},
        )

    async def _send(self, request: ChatRequest) -> Reply:
        import openai

        secret = client_secrets(self.client)
        attempt = 0
        while True:
            mode = self.fallback.mode
            started = time.perf_counter()
            self.limit.sending += 1
            crowd = self.limit.sending
            try:
                completion = await self._post(self._body(request, mode))
            except openai.APIStatusError as exc:
                self.limit.sending -= 1
                status = exc.status_code
                message = _scrub(_status_message(exc), secret)
                if mode != "none" and _is_format_error(status, message, exc.param):
                    self.stats.fallbacks += 1
                    self.fallback.downgrade(mode, f"HTTP {status}: {message}")
                    continue
                if status == 429 or status >= 500 or status == 408:
                    attempt = await self._backoff(
                        attempt,
                        retry_after_seconds(exc.response.headers),
                        f"HTTP {status}: {message}",
                    )
                    continue
                if status in (400, 413, 422):  # this item's request (too long, filtered)
                    raise CallFailed(
                        f"the endpoint refused this item's request (HTTP {status}: {message})",
                        hint="the item is left uncoded; the run stops if many in a row fail",
                    ) from None
                hint = {
                    401: "check OPENAI_API_KEY for this endpoint",
                    403: "check the key's permissions for this model",
                    404: "check --model and --base-url (the URL usually ends in /v1)",
                }.get(status, "check --model, --base-url and the endpoint's documentation")
                raise EndpointError(
                    f"the endpoint refused the request (HTTP {status}: {message})", hint=hint
                ) from None
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                self.limit.sending -= 1
                if isinstance(exc, openai.APITimeoutError):
                    self.stats.timeouts += 1
                    self.limit.timed_out()
                attempt = await self._backoff(attempt, None, _scrub(str(exc), secret))
                continue
            except BaseException:
                self.limit.sending -= 1
                raise
            else:
                self.limit.sending -= 1
            latency = time.perf_counter() - started
            self.limit.record(latency, crowd)
            try:
                text, tokens_in, tokens_out = _read_completion(completion)
            except (ValueError, LookupError, TypeError):
                attempt = await self._backoff(
                    attempt, None, "the endpoint's reply is not a chat completion"
                )
                continue
            reply = Reply(
                text=text,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                latency_s=round(latency, 4),
                response_format=mode,
                attempts=attempt + 1,
            )
            self.fallback.settled = True
            self.stats.sent += 1
            self.stats.tokens_in += reply.tokens_in
            self.stats.tokens_out += reply.tokens_out
            self.stats.latency_s += latency
            return reply

    async def _backoff(self, attempt: int, retry_after: float | None, reason: str) -> int:
        attempt += 1
        if attempt > self.policy.max_retries:
            raise CallFailed(
                f"gave up after {self.policy.max_retries} retries ({reason})",
                hint="run the same command again later: finished items are not paid twice",
            )
        if retry_after is not None and retry_after > self.policy.max_retry_after_s:
            raise CallFailed(
                f"the endpoint asked to wait {retry_after:.0f} s before a retry "
                f"(Retry-After; {reason}), longer than {self.policy.max_retry_after_s:.0f} s",
                hint="run the same command again later: finished items are not paid twice",
            )
        self.stats.retries += 1
        await self._sleep(self.policy.delay(attempt, retry_after))
        return attempt


def request_for(
    *,
    model: str,
    endpoint_host: str,
    messages: Sequence[Message],
    prefix_len: int,
    temperature: float,
    schema: dict[str, Any],
    vote: int = 0,
    votes: int = 1,
    prefix_hash: str | None = None,
) -> ChatRequest:
    return ChatRequest(
        model=model,
        endpoint_host=endpoint_host,
        messages=tuple(messages),
        prefix_len=prefix_len,
        temperature=temperature,
        schema=schema,
        vote=vote,
        send_seed=votes > 1,
        prefix_hash=prefix_hash,
    )
