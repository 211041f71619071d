"""Calling a real chat-completions server on 127.0.0.1: faults, fallbacks, cache, votes."""

from __future__ import annotations

import time

import pytest

from annotate.codebook import Answer
from annotate.errors import UsageError
from llm_coder.calls import (
    Caller,
    CallFailed,
    EndpointError,
    FormatFallback,
    MemoryCache,
    RetryPolicy,
    retry_after_seconds,
)
from llm_coder.client import LLMConfig, build_client, config_from_env
from llm_coder.runner import ItemResult, PromptBuilder, Runner, Settings
from tests.chat_server import Fault
from tests.llm_fixtures import running_chat_server
from tests.test_llm_prompt import MOVES, item

KEY = "sk-test-SECRET-0123456789"


@pytest.fixture
def chat_server():
    with running_chat_server() as server:
        yield server


def make_runner(
    server, *, cache=None, concurrency=4, votes=1, temperature=0.0, fallback=None, **policy
):
    config = LLMConfig("test-model", server.base_url, KEY, timeout_s=policy.get("timeout_s", 5))
    caller = Caller(
        build_client(config),
        cache if cache is not None else MemoryCache(),
        concurrency=concurrency,
        policy=RetryPolicy(
            max_retries=policy.get("max_retries", 3),
            base_delay_s=0.01,
            timeout_s=policy.get("timeout_s", 5),
        ),
        fallback=fallback,
    )
    settings = Settings("test-model", config.endpoint_host, temperature, votes)
    return Runner(caller, PromptBuilder(MOVES, []), settings)


def label_by_text(text, body):
    return "instruct" if text.startswith("go") else "acknowledge"


async def run_all(runner, items, concurrency=4) -> dict[str, ItemResult]:
    out: dict[str, ItemResult] = {}
    await runner.run(items, lambda r: out.__setitem__(r.action_id, r), concurrency=concurrency)
    return out


ITEMS = [item(i, "go left" if i % 2 else "okay") for i in range(1, 11)]


async def test_codes_items_and_cache_means_zero_new_requests(chat_server):
    chat_server.state.label_for = label_by_text
    cache = MemoryCache()
    results = await run_all(make_runner(chat_server, cache=cache), ITEMS)
    assert chat_server.state.requests == 10
    assert results["s1-1"].answers == {"move": Answer("instruct")}
    assert results["s1-2"].answers == {"move": Answer("acknowledge")}
    assert all(r.confidence == 1.0 and r.tokens_in > 0 for r in results.values())
    assert chat_server.state.bodies[0]["temperature"] == 0
    schema = chat_server.state.bodies[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["move"]["properties"]["code"]["enum"][0] == "instruct"

    again = await run_all(make_runner(chat_server, cache=cache), ITEMS)
    assert chat_server.state.requests == 10  # nothing new sent
    assert all(r.cached for r in again.values())
    assert {k: r.answers for k, r in again.items()} == {k: r.answers for k, r in results.items()}


async def test_the_key_goes_to_the_endpoint_and_nowhere_else(chat_server):
    cache = MemoryCache()
    runner = make_runner(chat_server, cache=cache)
    await run_all(runner, ITEMS[:2])
    assert chat_server.state.auth_headers[0] == f"Bearer {KEY}"
    assert KEY not in repr(cache.records)
    assert KEY not in repr(LLMConfig("m", "http://x/v1", KEY))


async def test_429_with_retry_after_is_honoured(chat_server):
    chat_server.state.faults = [Fault("429", times=2, retry_after="0.3")]
    runner = make_runner(chat_server)
    started = time.perf_counter()
    results = await run_all(runner, ITEMS[:1])
    assert time.perf_counter() - started >= 0.6
    assert results["s1-1"].valid
    assert chat_server.state.statuses[429] == 2 and runner.caller.stats.retries == 2


async def test_500_is_retried_with_backoff(chat_server):
    chat_server.state.faults = [Fault("500", times=2)]
    runner = make_runner(chat_server)
    results = await run_all(runner, ITEMS[:1])
    assert results["s1-1"].valid and chat_server.state.statuses[500] == 2


async def test_hang_past_the_timeout_is_retried(chat_server):
    chat_server.state.hang_s = 3
    chat_server.state.faults = [Fault("hang", times=1)]
    runner = make_runner(chat_server, timeout_s=0.5)
    started = time.perf_counter()
    results = await run_all(runner, ITEMS[:1])
    assert results["s1-1"].valid
    assert chat_server.state.requests == 2 and time.perf_counter() - started < 2.5
    assert runner.caller.stats.timeouts == 1 and runner.caller.stats.retries == 1


async def test_exhausted_retries_fail_the_item_not_the_run(chat_server):
    chat_server.state.faults = [Fault("500", times=10, match="okay")]
    results = await run_all(make_runner(chat_server, max_retries=2), ITEMS[:2])
    assert results["s1-1"].valid
    failed = results["s1-2"]
    assert not failed.valid and failed.failed.startswith("gave up after 2 retries (HTTP 500")


async def test_endpoint_that_keeps_failing_stops_the_run(chat_server):
    chat_server.state.faults = [Fault("500", times=1000)]
    runner = make_runner(chat_server, max_retries=1)
    runner.max_consecutive_failures = 3
    with pytest.raises(CallFailed, match="3 items in a row failed"):
        await run_all(runner, ITEMS, concurrency=1)


async def test_a_request_refused_for_one_item_fails_that_item_only(chat_server):
    chat_server.state.faults = [Fault("too_long", times=1000, match="okay")]
    # s1-4 has s1-2's text: the two identical requests may share one call, so leave it out
    results = await run_all(make_runner(chat_server), ITEMS[:3])
    assert results["s1-1"].valid and results["s1-3"].valid
    failed = results["s1-2"]
    assert not failed.valid
    assert failed.failed == (
        "the endpoint refused this item's request "
        "(HTTP 400: This model's maximum context length is 8192 tokens.)"
    )
    assert chat_server.state.statuses[400] == 1  # not retried: the same request fails again


async def test_bad_key_stops_at_once_and_is_not_echoed(chat_server):
    chat_server.state.faults = [Fault("401", times=1)]
    with pytest.raises(EndpointError) as info:
        await run_all(make_runner(chat_server), ITEMS[:1])
    assert "HTTP 401" in info.value.message and KEY not in info.value.message
    assert info.value.hint == "check OPENAI_API_KEY for this endpoint"


@pytest.mark.parametrize("fault", ["malformed", "bad_label"])
async def test_unusable_reply_is_retried_once_then_fine(chat_server, fault):
    chat_server.state.faults = [Fault(fault, times=1)]
    results = await run_all(make_runner(chat_server), ITEMS[:1])
    r = results["s1-1"]
    assert r.valid and len(r.raw_replies) == 2 and chat_server.state.requests == 2
    repair = chat_server.state.bodies[1]["messages"][-1]["content"]
    assert repair.startswith("That reply cannot be used:")


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        ("malformed", "the reply is not valid JSON"),
        ("bad_label", "question move: unknown code 'not-a-code'"),
    ],
)
async def test_unusable_twice_is_stored_invalid_with_raw_text(chat_server, fault, error):
    chat_server.state.faults = [Fault(fault, times=2)]
    cache = MemoryCache()
    results = await run_all(make_runner(chat_server, cache=cache), ITEMS[:1])
    r = results["s1-1"]
    assert not r.valid and r.error == error and r.failed is None
    assert len(r.raw_replies) == 2 and len(cache.records) == 2
    # a re-run replays both replies from the cache and gives the same verdict
    again = await run_all(make_runner(chat_server, cache=cache), ITEMS[:1])
    assert chat_server.state.requests == 2 and again["s1-1"].error == error


@pytest.mark.parametrize(
    ("accept", "final", "refusals"),
    [
        ("json_object", "json_object", {400: 2}),  # OpenAI also refuses a 'schema' key
        ("none", "none", {400: 3}),
        ("llama_cpp_python", "json_object_schema", {500: 1}),  # the body names the format
        ("ignore", "json_schema", {}),  # accepted and ignored: the replies decide
        ("lm_studio", "json_schema", {}),
    ],
)
async def test_response_format_fallback_is_detected_and_remembered(
    chat_server, accept, final, refusals
):
    chat_server.state.accept = accept
    chat_server.state.label_for = label_by_text
    chat_server.state.latency = 0.02
    runner = make_runner(chat_server, concurrency=4)
    results = await run_all(runner, ITEMS, concurrency=4)
    assert all(r.valid for r in results.values())
    assert runner.caller.fallback.mode == final
    statuses = chat_server.state.statuses
    # the first request probes alone: each refused mode is refused once, not once per slot
    assert {k: v for k, v in statuses.items() if k != 200} == refusals
    assert chat_server.state.requests == 10 + sum(refusals.values())
    assert runner.caller.stats.retries == 0  # a format refusal is not retried as a fault
    assert results["s1-1"].answers == {"move": Answer("instruct")}
    sent = chat_server.state.bodies[-1].get("response_format") or {}
    kind = {"json_object_schema": "json_object", "none": None}.get(final, final)
    assert sent.get("type") == kind


async def test_json_object_with_schema_sends_the_schema(chat_server):
    chat_server.state.accept = "llama_cpp_python"
    runner = make_runner(chat_server, concurrency=1)
    await run_all(runner, ITEMS[:2], concurrency=1)
    fmt = chat_server.state.bodies[-1]["response_format"]
    assert fmt["type"] == "json_object"
    assert fmt["schema"]["required"] == ["move"]
    assert fmt["schema"]["properties"]["move"]["properties"]["code"]["enum"][0] == "instruct"


async def test_a_forced_format_that_is_refused_stops_the_run(chat_server):
    chat_server.state.accept = "lm_studio"
    runner = make_runner(chat_server, fallback=FormatFallback("json_object", forced=True))
    with pytest.raises(EndpointError) as info:
        await run_all(runner, ITEMS[:1])
    assert "refused --response-format json_object (HTTP 400:" in info.value.message
    assert "must be 'json_schema' or 'text'" in info.value.message
    assert chat_server.state.requests == 1


async def test_concurrency_is_bounded(chat_server):
    chat_server.state.latency = 0.2
    runner = make_runner(chat_server, concurrency=5)
    items = [item(i, f"go {i}") for i in range(1, 21)]
    started = time.perf_counter()
    await run_all(runner, items, concurrency=5)
    elapsed = time.perf_counter() - started
    assert 0.8 <= elapsed < 1.6  # 20 items / 5 at a time * 0.2 s


async def test_votes_majority_and_confidence(chat_server):
    def by_seed(text, body):
        return "instruct" if body.get("seed", 0) != 2 else "acknowledge"

    chat_server.state.label_for = by_seed
    results = await run_all(make_runner(chat_server, votes=3, temperature=0.7), ITEMS[:2])
    r = results["s1-1"]
    assert r.answers == {"move": Answer("instruct")}
    assert r.confidence == pytest.approx(2 / 3)
    assert len(r.request_hashes) == 3 and len(set(r.request_hashes)) == 3
    assert {b["seed"] for b in chat_server.state.bodies} == {0, 1, 2}


async def test_identical_concurrent_requests_are_sent_once(chat_server):
    chat_server.state.latency = 0.1
    same = [item(5, "go left")] * 4
    results: list[ItemResult] = []
    await make_runner(chat_server).run(same, results.append, concurrency=4)
    assert len(results) == 4 and chat_server.state.requests == 1


def test_fallback_only_moves_down_once_per_mode():
    fb = FormatFallback()
    fb.downgrade("json_schema", "no")
    fb.downgrade("json_schema", "no again (a request that was already in flight)")
    assert fb.mode == "json_object_schema" and len(fb.changes) == 1
    fb.downgrade("json_object_schema", "no")
    assert fb.mode == "json_object"
    fb.downgrade("json_object", "no")
    assert fb.mode == "none"


def test_retry_after_parsing():
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after-ms": "250"}) == 0.25
    assert retry_after_seconds({}) is None
    date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 < retry_after_seconds({"retry-after": date}) <= 31
    assert RetryPolicy(max_delay_s=5).delay(1, 100.0) == 100.0  # the server's word counts
    assert RetryPolicy(max_delay_s=5).delay(1, None) <= 5


async def test_retry_after_longer_than_the_limit_fails_the_item(chat_server):
    chat_server.state.faults = [Fault("429", times=1, retry_after="3600")]
    config = LLMConfig("test-model", chat_server.base_url, KEY, timeout_s=5)
    waits: list[float] = []

    async def no_sleep(seconds: float) -> None:
        waits.append(seconds)

    caller = Caller(build_client(config), MemoryCache(), sleep=no_sleep)
    settings = Settings("test-model", config.endpoint_host, 0.0, 1)
    results = await run_all(Runner(caller, PromptBuilder(MOVES, []), settings), ITEMS[:1])
    assert waits == [] and results["s1-1"].failed == (
        "the endpoint asked to wait 3600 s before a retry (Retry-After; HTTP 429: "
        "Rate limit reached, slow down), longer than 600 s"
    )


def test_config_needs_key_and_endpoint_and_says_how():
    with pytest.raises(UsageError) as info:
        config_from_env("m", None, env={})
    msg = info.value.message
    assert "an endpoint (--base-url or OPENAI_BASE_URL)" in msg and "OPENAI_API_KEY" in msg
    assert "export OPENAI_API_KEY" in info.value.hint
    with pytest.raises(UsageError, match="an API key"):
        config_from_env("m", "http://localhost:1/v1", env={})
    config = config_from_env(
        "m", None, env={"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "http://h:9/v1/"}
    )
    assert config.base_url == "http://h:9/v1" and config.endpoint_host == "h:9"
    assert KEY not in repr(config) and KEY not in str(config)
    with pytest.raises(UsageError, match="http"):
        config_from_env("m", "localhost:1", env={"OPENAI_API_KEY": "k"})


def test_caller_needs_positive_concurrency():
    with pytest.raises(ValueError):
        Caller(None, MemoryCache(), concurrency=0)


async def test_a_key_in_the_base_url_is_not_echoed(chat_server):
    """A server that echoes the path in its 404 (the test server does, as many do) would
    print a key placed in the base URL's query."""
    secret = "sekret-in-the-url"
    url = chat_server.base_url.removesuffix("/v1") + f"/nope?key={secret}"
    config = LLMConfig("test-model", url, KEY, timeout_s=5)
    caller = Caller(build_client(config), MemoryCache(), policy=RetryPolicy(base_delay_s=0.01))
    runner = Runner(caller, PromptBuilder(MOVES, []), Settings("test-model", "h", 0.0, 1))
    with pytest.raises(EndpointError) as info:
        await run_all(runner, ITEMS[:1])
    assert "HTTP 404" in info.value.message and "no route" in info.value.message
    assert secret not in info.value.message and KEY not in info.value.message
