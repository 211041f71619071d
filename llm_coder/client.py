"""The one place where the OpenAI client is built.

Any OpenAI-compatible endpoint works (OpenAI, vLLM, Ollama, llama.cpp, LM Studio...): give
the model name, the base URL (``--base-url`` or ``OPENAI_BASE_URL``) and a key in
``OPENAI_API_KEY``. The key is held only in memory: it is never part of a request hash,
never written to the store and never shown (``repr`` hides it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from annotate.errors import UsageError

KEY_ENV = "OPENAI_API_KEY"
BASE_URL_ENV = "OPENAI_BASE_URL"
MODEL_ENV = "ANNOTATE_MODEL"
DEFAULT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class LLMConfig:
    model: str
    base_url: str
    api_key: str = field(repr=False)
    timeout_s: float = DEFAULT_TIMEOUT_S

    @property
    def endpoint_host(self) -> str:
        """``host[:port]`` of the endpoint: recorded with every label, never the key."""
        return endpoint_host(self.base_url)

    def __str__(self) -> str:
        return f"{self.model} @ {self.endpoint_host}"


def endpoint_host(base_url: str) -> str:
    parts = urlsplit(base_url)
    return parts.netloc.rsplit("@", 1)[-1] or base_url


def config_from_env(
    model: str | None,
    base_url: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> LLMConfig:
    """Resolve model, endpoint and key, or raise one :class:`UsageError` naming what to set.

    Called before any work is done, so a missing setting fails fast.
    """
    env = os.environ if env is None else env
    base_url = (base_url or env.get(BASE_URL_ENV) or "").strip()
    api_key = (env.get(KEY_ENV) or "").strip()
    missing = []
    if not model:
        missing.append("a model (--model)")
    if not base_url:
        missing.append(f"an endpoint (--base-url or {BASE_URL_ENV})")
    if not api_key:
        missing.append(f"an API key ({KEY_ENV})")
    if missing:
        raise UsageError(
            "the LLM coder needs " + " and ".join(missing),
            hint=(
                f"export {KEY_ENV}=sk-... and {BASE_URL_ENV}=https://api.openai.com/v1 "
                "(for a local server such as Ollama: "
                f"{BASE_URL_ENV}=http://localhost:11434/v1 and any non-empty {KEY_ENV})"
            ),
        )
    if urlsplit(base_url).scheme not in {"http", "https"}:
        raise UsageError(
            f"the endpoint must be an http(s) URL, got '{base_url}'",
            hint="e.g. --base-url http://localhost:8000/v1",
        )
    return LLMConfig(
        model=str(model), base_url=base_url.rstrip("/"), api_key=api_key, timeout_s=timeout_s
    )


def listed_models(base_url: str, api_key: str, timeout_s: float = 10.0) -> list[str]:
    """The model ids the endpoint lists at ``GET {base_url}/models`` (OpenAI's shape:
    ``{"data": [{"id": ...}, ...]}``). Raises :class:`OSError` or :class:`ValueError`
    when the endpoint does not answer so."""
    import json
    from urllib.request import Request, urlopen

    request = Request(
        base_url.rstrip("/") + "/models", headers={"Authorization": f"Bearer {api_key}"}
    )
    with urlopen(request, timeout=timeout_s) as reply:
        body = json.loads(reply.read().decode("utf-8"))
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        raise ValueError("the reply has no list 'data'")
    return [str(m["id"]) for m in data if isinstance(m, dict) and m.get("id")]


def _ask_models(base_url: str, key: str, timeout_s: float, retries: int) -> tuple[list[str], str]:
    """The endpoint's models, or none and why; a timeout is asked again ``retries`` times
    (a busy local server answers late)."""
    problem = ""
    for _ in range(retries + 1):
        try:
            return listed_models(base_url, key, timeout_s), ""
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            problem = f"{base_url}/models did not answer with a list of models ({reason})"
            if not isinstance(reason, TimeoutError):
                break
    return [], problem


def default_model(
    base_url: str | None,
    *,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 10.0,
    ask: bool = True,
    retries: int = 0,
) -> tuple[str, str]:
    """The model when ``--model`` is not given, and where it came from: ``$ANNOTATE_MODEL``,
    else the only model the endpoint lists at ``/models`` (not asked when ``ask`` is
    false). A :class:`UsageError` names both ways when neither gives one."""
    env = os.environ if env is None else env
    named = (env.get(MODEL_ENV) or "").strip()
    if named:
        return named, f"${MODEL_ENV}"
    base_url = (base_url or env.get(BASE_URL_ENV) or "").strip()
    problem = "no endpoint to ask (--base-url or OPENAI_BASE_URL)"
    if base_url and ask:
        models, problem = _ask_models(
            base_url, (env.get(KEY_ENV) or "").strip(), timeout_s, retries
        )
        if len(models) == 1:
            return models[0], f"the only model {endpoint_host(base_url)} lists"
        if not problem:
            problem = f"{endpoint_host(base_url)} lists {len(models)} models" + (
                f" ({', '.join(models[:10])})" if models else ""
            )
    elif base_url:
        problem = "the endpoint is not asked without a network call"
    raise UsageError(
        f"no model: pass --model NAME or set ${MODEL_ENV}",
        hint=f"neither was given, and the endpoint's list could not choose: {problem}",
    )


def build_client(config: LLMConfig):  # -> openai.AsyncOpenAI
    """Build the async client; retries are ours (:mod:`llm_coder.calls`), the SDK's are off."""
    from openai import AsyncOpenAI

    return AsyncOpenAI(
        api_key=config.api_key,
        base_url=config.base_url,
        timeout=config.timeout_s,
        max_retries=0,
    )


class LazyClient:
    """Builds the client on first use: a run answered from the cache never loads the SDK."""

    def __init__(self, config: LLMConfig):
        self.config = config
        self._client = None

    @property
    def api_key(self) -> str:
        return self.config.api_key

    @property
    def base_url(self) -> str:
        return self.config.base_url

    def get(self):  # -> openai.AsyncOpenAI
        if self._client is None:
            self._client = build_client(self.config)
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
