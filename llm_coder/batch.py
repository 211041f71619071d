"""Batch files: the request lines `annotate` writes and the result lines it reads back.

One request per line, the format of the OpenAI Batch API, which Azure OpenAI, several
OpenAI-compatible providers and vLLM's offline runner (``python -m
vllm.entrypoints.openai.run_batch -i requests.jsonl -o results.jsonl --model M``) read::

    {"custom_id": "<request hash>", "method": "POST", "url": "/v1/chat/completions",
     "body": <exactly the body the online path POSTs>}

``custom_id`` is the request's identity (:attr:`llm_coder.calls.ChatRequest.hash`, 64 hex
characters), so a reply is matched to its request, cache row and item whatever the order
of the results. A result line (output or error file)::

    {"id": "batch_req_...", "custom_id": "...",
     "response": {"status_code": 200, "request_id": "...", "body": <chat completion>},
     "error": null | {"code": "...", "message": "..."}}

No SQL here, no network: :mod:`llm_coder.batch_export` and :mod:`llm_coder.batch_import`
use these to stream files of any size.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llm_coder.calls import ChatRequest, read_completion, request_body
from llm_coder.prompt import Message
from llm_coder.schema import FormatMode, response_format

BATCH_URL = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
FILE_PURPOSE = "batch"


@dataclass(frozen=True)
class BatchLimits:
    """A provider's limits per batch input file (OpenAI: 50,000 requests, 200 MB)."""

    max_requests: int = 50_000
    max_bytes: int = 200 * 1024 * 1024

    def fits(self, requests: int, size: int) -> bool:
        return requests <= self.max_requests and size <= self.max_bytes


def _dumps(value: Any) -> str:
    # json.dumps' defaults (", " and ": "), as the SDK and most writers use
    return json.dumps(value, ensure_ascii=False)


class LineWriter:
    """Request lines, the prompt prefix serialised once per prompt (it is ~90% of a line).

    ``line(request, mode)`` equals ``json.dumps({"custom_id": ..., "method": "POST",
    "url": ..., "body": request_body(request, mode)})`` once parsed; only the prefix's
    JSON is reused instead of being encoded again for every request.
    """

    def __init__(self) -> None:
        self._prefix_json: dict[str, str] = {}
        self._format_json: dict[tuple[int, str], tuple[dict[str, Any], str]] = {}

    def _prefix(self, request: ChatRequest) -> str:
        key = request.prompt_hash
        text = self._prefix_json.get(key)
        if text is None:
            prefix: Sequence[Message] = request.messages[: request.prefix_len]
            text = ", ".join(_dumps(m) for m in prefix)
            self._prefix_json[key] = text
        return text

    def _format(self, request: ChatRequest, mode: FormatMode) -> str:
        key = (id(request.schema), mode)
        hit = self._format_json.get(key)
        if hit is not None and hit[0] is request.schema:  # the schema itself, not a new one
            return hit[1]
        fmt = response_format(mode, request.schema)
        text = "" if fmt is None else ', "response_format": ' + _dumps(fmt)
        self._format_json[key] = (request.schema, text)
        return text

    def line(self, request: ChatRequest, mode: FormatMode) -> str:
        return self.line_and_tail(request, mode)[0]

    def line_and_tail(self, request: ChatRequest, mode: FormatMode) -> tuple[str, str]:
        """The line, and the JSON list of the messages after the prefix (stored with it)."""
        tail = ", ".join(_dumps(m) for m in request.messages[request.prefix_len :])
        prefix = self._prefix(request)
        messages = ", ".join(part for part in (prefix, tail) if part)
        seed = f', "seed": {request.vote}' if request.send_seed else ""
        line = (
            f'{{"custom_id": "{request.hash}", "method": "POST", "url": "{BATCH_URL}", '
            f'"body": {{"model": {_dumps(request.model)}, "messages": [{messages}], '
            f'"temperature": {_dumps(request.temperature)}{seed}{self._format(request, mode)}}}}}\n'
        )
        return line, f"[{tail}]"


def request_line(request: ChatRequest, mode: FormatMode) -> dict[str, Any]:
    """One request line as a dict (the reference :class:`LineWriter` is checked against)."""
    return {
        "custom_id": request.hash,
        "method": "POST",
        "url": BATCH_URL,
        "body": request_body(request, mode),
    }


@dataclass(frozen=True)
class ResultLine:
    """One line of an output or error file: a reply, or why the request has none."""

    custom_id: str
    text: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.text is not None


class BadLine(ValueError):
    """A line that is not a batch result at all (not JSON, no custom_id)."""


def _error_text(error: Any, status: int | None = None) -> str:
    if isinstance(error, dict):
        inner = error.get("error", error)
        if isinstance(inner, dict):
            code = inner.get("code") or inner.get("type")
            message = inner.get("message") or json.dumps(inner, ensure_ascii=False)
            text = f"{code}: {message}" if code else str(message)
        else:
            text = str(inner)
    else:
        text = str(error)
    text = " ".join(text.split())
    return f"HTTP {status}: {text}" if status is not None else text


def parse_result_line(line: str) -> ResultLine:
    """Read one result line (OpenAI's output/error files, vLLM ``run_batch`` output)."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        raise BadLine("not JSON") from None
    if not isinstance(data, dict) or not isinstance(data.get("custom_id"), str):
        raise BadLine("no custom_id")
    custom_id = data["custom_id"]
    if data.get("error"):
        return ResultLine(custom_id, error=_error_text(data["error"]))
    response = data.get("response")
    if not isinstance(response, dict):
        return ResultLine(custom_id, error="no response in the result line")
    # the documented shape nests the completion in "body"; tolerate it unwrapped
    body = response.get("body", response) if "choices" not in response else response
    status = response.get("status_code", 200)
    if not isinstance(status, int) or isinstance(status, bool):
        return ResultLine(custom_id, error=f"status_code {str(status)[:40]!r} is not a number")
    if status != 200:
        return ResultLine(custom_id, error=_error_text(body, status))
    try:
        text, tokens_in, tokens_out = read_completion(body)
    except (LookupError, TypeError, ValueError, AttributeError):
        return ResultLine(custom_id, error="the response is not a chat completion")
    return ResultLine(custom_id, text, tokens_in, tokens_out)
