"""A real chat-completions server on 127.0.0.1 for testing the LLM coder.

It speaks ``POST /v1/chat/completions`` like an OpenAI-compatible endpoint and answers
deterministically: the label for a request comes from ``label_for(target_text, body)``,
where ``target_text`` is the content of the action to code (the line after
``TARGET_MARKER`` in the last user message). Tests steer it with :class:`Fault` entries
(429 with Retry-After, 500, a hang past the client's timeout, malformed JSON, a label that
is not in the codebook), a fixed ``latency``, and ``accept`` — how the endpoint treats
``response_format``, one behaviour per server family in the README's compatibility table
(each modelled on that server's documentation or source; see :data:`ACCEPT`).

Run it by hand for a demo: ``python -m tests.chat_server --port 8765 --label acknowledge``.
"""

from __future__ import annotations

import argparse
import contextlib
import email.parser
import email.policy
import json
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

TARGET_MARKER = "Action to code:"
MODEL = "test-model"
"""The one model the server lists at /v1/models (any model name is answered)."""
FaultKind = Literal["429", "500", "hang", "malformed", "bad_label", "401", "too_long"]
Accept = Literal["json_schema", "json_object", "none", "llama_cpp_python", "ignore", "lm_studio"]
ACCEPT: dict[str, str] = {
    "json_schema": "OpenAI, vLLM, llama-server, Ollama: every format honoured",
    "json_object": "an OpenAI model without structured outputs: json_schema and a 'schema' "
    "key refused with HTTP 400 and param",
    "none": "no response_format at all: HTTP 400 with param 'response_format'",
    "llama_cpp_python": "json_schema -> HTTP 500 with a pydantic validation body; json_object "
    "with 'schema' honoured (llama_cpp/server/errors.py turns every error into 500)",
    "ignore": "response_format silently ignored (Ollama with an unknown type): prose around "
    "the JSON",
    "lm_studio": "json_schema honoured, json_object refused with HTTP 400 and a string error",
}


@dataclass
class Fault:
    """Misbehave on the next ``times`` requests whose target text contains ``match``."""

    kind: FaultKind
    times: int = 1
    match: str | None = None
    retry_after: str | None = None


FIELDS_SHOWN = re.compile(r" \[[\w.]+: [^\]]*\]$")


def target_text(body: dict[str, Any]) -> str:
    """The content of the action to code, as rendered by ``llm_coder.prompt``.

    Taken from the last user message that shows an item (a repair request after an unusable
    reply ends with a plain user message, but is about the same item).
    """
    users = [str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "user"]
    items = [u for u in users if TARGET_MARKER in u]
    if not items:
        return users[-1] if users else ""
    after = items[-1].split(TARGET_MARKER, 1)[1].strip().splitlines()
    line = after[0] if after else ""
    # "[#12 +3.0s] guide, message: go left" -> "go left"
    text = line.split(": ", 1)[1] if ": " in line else line
    # without the context fields shown beside it: "go left [verifier: ...; timestep: 3]"
    return FIELDS_SHOWN.sub("", text)


def question_ids(body: dict[str, Any]) -> list[str]:
    """Question ids from the JSON schema if one was sent (either shape), else ``["move"]``."""
    fmt = body.get("response_format") or {}
    schema = fmt.get("schema") or (fmt.get("json_schema") or {}).get("schema") or {}
    return list(schema.get("properties") or {}) or ["move"]


@dataclass
class ServerState:
    label_for: Callable[[str, dict[str, Any]], str] = lambda text, body: "acknowledge"
    answer_for: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None
    latency: float = 0.0
    serial: bool = False
    """Answer one request at a time (as llama-cpp-python's server does): the others wait."""
    slots: int | None = None
    """Say this many parallel slots at ``GET /props`` (``total_slots``), as llama.cpp's
    llama-server does; None: 404, as llama-cpp-python's server answers."""
    hang_s: float = 5.0
    accept: Accept = "json_schema"
    faults: list[Fault] = field(default_factory=list)
    requests: int = 0
    served: int = 0
    statuses: Counter = field(default_factory=Counter)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    auth_headers: list[str] = field(default_factory=list)
    keep_bodies: bool = True
    lock: threading.Lock = field(default_factory=threading.Lock)
    one_at_a_time: threading.Lock = field(default_factory=threading.Lock)
    batches: BatchService = field(init=False)

    def __post_init__(self) -> None:
        self.batches = BatchService(self)

    def take_fault(self, text: str) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.times > 0 and (fault.match is None or fault.match in text):
                    fault.times -= 1
                    return fault
        return None

    def reset_counts(self) -> None:
        with self.lock:
            self.requests = 0
            self.served = 0
            self.statuses.clear()
            self.bodies.clear()
            self.auth_headers.clear()


@dataclass
class BatchService:
    """``/v1/files`` and ``/v1/batches`` as the OpenAI Batch API serves them.

    A batch goes ``validating`` -> ``in_progress`` on the first poll, stays in progress for
    ``polls`` more polls (and at least ``delay`` seconds), then ends as the next entry of
    ``outcomes`` says (default ``completed``): ``completed`` answers every line through the
    chat-completions logic (faults included); ``expired`` answers the first half and puts
    the rest in the error file as ``batch_expired``; ``failed`` answers nothing (the input is
    refused, as when a file breaks the format: that also fails the batch). A line whose
    target text contains one of ``line_errors`` comes back as an HTTP 500 in the error file.
    ``create_delay`` holds the answer to ``POST /v1/batches`` after the batch exists.
    """

    state: ServerState
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    batches: dict[str, dict[str, Any]] = field(default_factory=dict)
    outcomes: list[str] = field(default_factory=list)
    polls: int = 1
    delay: float = 0.0
    create_delay: float = 0.0
    line_errors: list[str] = field(default_factory=list)
    max_requests: int = 50_000
    garble: Callable[[bytes], bytes] | None = None
    """What a provider's file content turns into on the way (a test's fault)."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    _next: int = 0

    def _id(self, prefix: str) -> str:
        with self.lock:
            self._next += 1
            return f"{prefix}-{self._next:04d}"

    def _add_file(self, content: bytes, purpose: str, filename: str) -> dict[str, Any]:
        file_id = self._id("file")
        entry = {
            "id": file_id,
            "object": "file",
            "bytes": len(content),
            "created_at": int(time.time()),
            "filename": filename,
            "purpose": purpose,
        }
        self.files[file_id] = {**entry, "content": content}
        return entry

    def post(self, path: str, raw: bytes, content_type: str) -> tuple[int, Any]:
        if path.endswith("/files"):
            return self._upload(raw, content_type)
        if path.endswith("/batches"):
            return self._create(raw)
        if path.endswith("/cancel"):
            batch = self.batches.get(path.split("/")[-2])
            if batch is None:
                return 404, _error(404, "No such batch")
            if batch["status"] in ("validating", "in_progress"):
                batch["status"] = "cancelling"
            return 200, self._public(batch)
        return 404, _error(404, f"no route {path}")

    def get(self, path: str) -> tuple[int, Any]:
        parts = path.split("/")
        if path.endswith("/content") and parts[-2] in self.files:
            content = self.files[parts[-2]]["content"]
            return 200, self.garble(content) if self.garble else content
        if path.endswith("/batches"):
            data = [self._public(b) for b in reversed(self.batches.values())]
            return 200, {"object": "list", "data": data, "has_more": False,
                         "first_id": data[0]["id"] if data else None,
                         "last_id": data[-1]["id"] if data else None}  # fmt: skip
        batch = self.batches.get(parts[-1])
        if batch is None:
            return 404, _error(404, f"no route {path}")
        self._advance(batch)
        return 200, self._public(batch)

    def _upload(self, raw: bytes, content_type: str) -> tuple[int, Any]:
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw
        )
        fields: dict[str, Any] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            fields[name] = (part.get_payload(decode=True), part.get_filename())
        if "file" not in fields or "purpose" not in fields:
            return 400, _error(400, "file and purpose are required")
        purpose = fields["purpose"][0].decode()
        if purpose not in ("batch", "fine-tune", "assistants", "vision", "user_data", "evals"):
            return 400, _error(400, f"invalid purpose '{purpose}'")
        content, filename = fields["file"]
        return 200, self._add_file(content, purpose, filename or "upload.jsonl")

    def _create(self, raw: bytes) -> tuple[int, Any]:
        body = json.loads(raw)
        file = self.files.get(body.get("input_file_id", ""))
        if file is None:
            return 400, _error(400, "input_file_id: no such file")
        if file["purpose"] != "batch":
            return 400, _error(400, "the input file must be uploaded with purpose 'batch'")
        if body.get("completion_window") != "24h":
            return 400, _error(400, "completion_window: only '24h' is supported")
        if body.get("endpoint") not in ("/v1/chat/completions", "/v1/responses"):
            return 400, _error(400, "endpoint: not supported")
        batch_id = self._id("batch")
        with self.lock:
            outcome = self.outcomes.pop(0) if self.outcomes else "completed"
        lines, errors = self._validate(file["content"], body["endpoint"])
        batch = {
            "id": batch_id, "object": "batch", "endpoint": body["endpoint"],
            "input_file_id": file["id"], "completion_window": "24h",
            "status": "validating", "created_at": int(time.time()),
            "metadata": body.get("metadata"), "output_file_id": None,
            "error_file_id": None, "errors": None,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "_lines": lines, "_outcome": "failed" if errors else outcome,
            "_errors": errors, "_polls": 0, "_started": time.monotonic(),
        }  # fmt: skip
        self.batches[batch_id] = batch
        if self.create_delay:
            time.sleep(self.create_delay)
        return 200, self._public(batch)

    def _validate(self, content: bytes, endpoint: str) -> tuple[list[dict], list[dict]]:
        """The input file's lines, and format errors as OpenAI lists them (code, line)."""
        lines: list[dict] = []
        errors: list[dict] = []
        seen: set[str] = set()
        models: set[str] = set()
        for number, text in enumerate(content.decode().splitlines(), 1):
            try:
                line = json.loads(text)
            except ValueError:
                errors.append({"code": "invalid_json_line", "line": number,
                               "message": "This line is not parseable as valid JSON."})  # fmt: skip
                continue
            problem = None
            if set(line) != {"custom_id", "method", "url", "body"}:
                problem = "a line has exactly custom_id, method, url and body"
            elif not isinstance(line["custom_id"], str) or line["custom_id"] in seen:
                problem = "custom_id must be a unique string"
            elif line["method"] != "POST" or line["url"] != endpoint:
                problem = f"method must be POST and url {endpoint}"
            elif not isinstance(line["body"], dict) or "model" not in line["body"]:
                problem = "body must be an object with a model"
            if problem:
                errors.append({"code": "invalid_request", "line": number, "message": problem})
                continue
            seen.add(line["custom_id"])
            models.add(line["body"]["model"])
            lines.append(line)
        if len(models) > 1:
            errors.append({"code": "mismatched_model", "line": None,
                           "message": "every line must use the same model"})  # fmt: skip
        if len(lines) > self.max_requests:
            message = f"at most {self.max_requests} requests per batch"
            errors.append({"code": "too_many_requests", "line": None, "message": message})
        return lines, errors

    def _advance(self, batch: dict[str, Any]) -> None:
        status = batch["status"]
        if status == "validating":
            if batch["_outcome"] == "failed":
                batch["status"] = "failed"
                batch["errors"] = {"object": "list", "data": batch["_errors"] or [
                    {"code": "invalid_request", "line": None,
                     "message": "the batch failed (test server outcome)"}]}  # fmt: skip
                return
            batch["status"] = "in_progress"
            return
        if status == "cancelling":
            self._finish(batch, answered=0, status="cancelled", why="batch_cancelled")
            return
        if status != "in_progress":
            return
        batch["_polls"] += 1
        if batch["_polls"] < self.polls or time.monotonic() - batch["_started"] < self.delay:
            return
        lines = batch["_lines"]
        if batch["_outcome"] == "expired":
            self._finish(batch, answered=len(lines) // 2, status="expired", why="batch_expired")
        else:
            self._finish(batch, answered=len(lines), status="completed", why="")

    def _finish(self, batch: dict[str, Any], *, answered: int, status: str, why: str) -> None:
        out: list[str] = []
        err: list[str] = []
        for n, line in enumerate(batch["_lines"]):
            rid = f"batch_req_{batch['id']}_{n}"
            if n >= answered:
                message = {"batch_expired": "This request could not be executed before the "
                           "completion window expired.",
                           "batch_cancelled": "This request was cancelled."}[why]  # fmt: skip
                err.append(json.dumps({"id": rid, "custom_id": line["custom_id"],
                                       "response": None,
                                       "error": {"code": why, "message": message}}))  # fmt: skip
                continue
            body = line["body"]
            if any(m in target_text(body) for m in self.line_errors):
                code, payload = 500, _error(500, "The server had an error processing the line")
            else:
                code, payload, _ = chat_reply(self.state, body, hang=False)
            entry = {"id": rid, "custom_id": line["custom_id"],
                     "response": {"status_code": code, "request_id": f"req_{rid}",
                                  "body": payload}, "error": None}  # fmt: skip
            (out if code == 200 else err).append(json.dumps(entry))
        counts = batch["request_counts"]
        counts["completed"], counts["failed"] = len(out), len(err)
        if out:
            batch["output_file_id"] = self._add_file(
                ("\n".join(out) + "\n").encode(), "batch_output", "output.jsonl")["id"]  # fmt: skip
        if err:
            batch["error_file_id"] = self._add_file(
                ("\n".join(err) + "\n").encode(), "batch_output", "errors.jsonl")["id"]  # fmt: skip
        batch["status"] = status

    @staticmethod
    def _public(batch: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in batch.items() if not k.startswith("_")}


def _error(status: int, message: str, *, param: str | None = None) -> dict[str, Any]:
    kinds = {400: "invalid_request_error", 401: "invalid_request_error", 429: "rate_limit"}
    return {
        "error": {
            "message": message,
            "type": kinds.get(status, "server_error"),
            "param": param,
            "code": None,
        }
    }


def _format_refusal(accept: str, fmt: dict[str, Any]) -> tuple[int, Any] | None:
    """The status and body this kind of server answers to ``fmt``, or None if it accepts it."""
    kind = fmt.get("type")
    if not kind or accept in ("json_schema", "ignore"):
        return None
    if accept == "none":
        message = "'response_format' is not supported by this model"
        return 400, _error(400, message, param="response_format")
    if accept == "json_object" and kind == "json_schema":
        message = (
            "Invalid parameter: 'response_format' of type 'json_schema' is not supported "
            "with this model. Use 'json_object' instead."
        )
        return 400, _error(400, message, param="response_format")
    if accept == "json_object" and "schema" in fmt:  # OpenAI: an unknown key is refused
        message = "Unknown parameter: 'response_format.schema'."
        return 400, _error(400, message, param="response_format.schema")
    if accept == "llama_cpp_python" and kind == "json_schema":
        detail = (
            "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
            "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}"
        )
        body = {"error": {"message": detail, "type": "internal_server_error", "param": None}}
        return 500, body
    if accept == "lm_studio" and kind != "json_schema":
        return 400, {"error": "'response_format.type' must be 'json_schema' or 'text'"}
    return None


def _completion(body: dict[str, Any], content: str) -> dict[str, Any]:
    prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages", []))
    prompt_tokens = max(1, prompt_chars // 4)
    completion_tokens = max(1, len(content) // 4)
    return {
        "id": f"chatcmpl-test-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "test-model"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are separate writes
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)
        with self.server.state.lock:
            self.server.state.statuses[status] += 1

    def do_POST(self) -> None:
        state = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.endswith("/files") or "/batches" in path:
            self._send(*state.batches.post(path, raw, self.headers.get("Content-Type", "")))
            return
        if not path.endswith("/chat/completions"):
            self._send(404, _error(404, f"no route {self.path}"))
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._send(400, _error(400, "request body is not JSON"))
            return
        with state.lock:
            state.requests += 1
            if state.keep_bodies:
                state.bodies.append(body)
            state.auth_headers.append(self.headers.get("Authorization", ""))
        with state.one_at_a_time if state.serial else contextlib.nullcontext():
            if state.latency:
                time.sleep(state.latency)
            status, payload, headers = chat_reply(state, body)
        try:
            self._send(status, payload, headers)
        except (BrokenPipeError, ConnectionResetError):
            return  # the client gave up (timeout)
        if status == 200:
            with state.lock:
                state.served += 1

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.endswith("/models"):  # as an OpenAI-compatible server lists what it serves
            self._send(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
            return
        if path == "/props" and self.server.state.slots is not None:
            self._send(200, {"total_slots": self.server.state.slots})
            return
        status, payload = self.server.state.batches.get(path)
        self._send(status, payload)


def chat_reply(
    state: ServerState, body: dict[str, Any], *, hang: bool = True
) -> tuple[int, Any, dict[str, str]]:
    """Status, body and headers of the answer to one chat-completion request."""
    fmt = body.get("response_format") or {}
    refusal = _format_refusal(state.accept, fmt)
    if refusal is not None:
        return refusal[0], refusal[1], {}
    fmt_type = None if state.accept == "ignore" else fmt.get("type")

    text = target_text(body)
    fault = state.take_fault(text)
    if fault is not None:
        if fault.kind == "429":
            headers = {"Retry-After": fault.retry_after} if fault.retry_after else {}
            return 429, _error(429, "Rate limit reached, slow down"), headers
        if fault.kind == "500":
            headers = {"Retry-After": fault.retry_after} if fault.retry_after else {}
            return 500, _error(500, "The server had an error"), headers
        if fault.kind == "401":
            return 401, _error(401, "Incorrect API key provided"), {}
        if fault.kind == "too_long":  # as OpenAI answers a prompt over the context size
            return 400, _error(400, "This model's maximum context length is 8192 tokens."), {}
        if fault.kind == "hang" and hang:
            time.sleep(state.hang_s)
    if fault is not None and fault.kind == "malformed":
        content = '{"move": {"code": "instruct"'  # cut off: not JSON
    else:
        if state.answer_for is not None:
            answer = state.answer_for(text, body)
        else:
            label = "not-a-code" if fault and fault.kind == "bad_label" else None
            label = label or state.label_for(text, body)
            answer = {qid: {"code": label, "other_text": None} for qid in question_ids(body)}
        content = json.dumps(answer)
        if fmt_type is None:
            content = f"Here is my answer:\n```json\n{content}\n```"
    return 200, _completion(body, content), {}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True

    def __init__(self, state: ServerState, port: int = 0):
        super().__init__(("127.0.0.1", port), _Handler)
        self.state = state

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):  # a client killed mid-request
            return
        super().handle_error(request, client_address)


class ChatServer:
    """Start with :meth:`start` (or as a context manager); ``base_url`` ends in ``/v1``."""

    def __init__(self, state: ServerState | None = None, port: int = 0):
        self.state = state or ServerState()
        self._server = _Server(self.state, port)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ChatServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--label", default="acknowledge")
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--accept", choices=list(ACCEPT))
    args = parser.parse_args()
    label = args.label
    state = ServerState(label_for=lambda text, body: label, latency=args.latency, keep_bodies=False)
    if args.accept:
        state.accept = args.accept
    server = ChatServer(state, args.port)
    print(f"listening on {server.base_url}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server._server.serve_forever()


if __name__ == "__main__":
    main()
