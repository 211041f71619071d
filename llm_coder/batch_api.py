"""The provider's Batch API through the openai SDK: upload, create, retrieve, cancel, download.

``/v1/files`` (purpose ``batch``) and ``/v1/batches`` (endpoint ``/v1/chat/completions``,
completion window ``24h``), as OpenAI, Azure OpenAI and compatible providers serve them.
Each batch is created with ``metadata.annotate_batch`` = a tag unique to the project's
batch row, so that a process killed after the provider created the batch but before the
project recorded its id finds it again instead of submitting it twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from annotate.errors import AnnotateError
from llm_coder.batch import BATCH_URL, COMPLETION_WINDOW, FILE_PURPOSE
from llm_coder.calls import token_count
from llm_coder.client import LLMConfig

TAG_KEY = "annotate_batch"
TERMINAL = ("completed", "failed", "expired", "cancelled")


class BatchAPIError(AnnotateError):
    """The endpoint refused a batch call (no Batch API, bad key, bad file)."""


@dataclass(frozen=True)
class BatchState:
    id: str
    status: str
    total: int
    completed: int
    failed: int
    output_file_id: str | None
    error_file_id: str | None
    errors: tuple[str, ...] = ()

    @classmethod
    def of(cls, batch: Any) -> BatchState:
        """The provider's batch object, read defensively: a field of the wrong type is a
        :class:`BatchAPIError` naming it, never a traceback."""
        if not isinstance(getattr(batch, "id", None), str):
            raise BatchAPIError(
                "the endpoint's reply is not a batch (no id)",
                hint="check --base-url: it must be an OpenAI-compatible Batch API",
            )
        counts = getattr(batch, "request_counts", None)
        errors = getattr(batch, "errors", None)
        data = getattr(errors, "data", None)
        messages = tuple(
            f"{getattr(e, 'code', '?')}: {getattr(e, 'message', '')}"
            + (f" (line {e.line})" if getattr(e, "line", None) else "")
            for e in (data if isinstance(data, list) else [])
        )
        return cls(
            id=batch.id,
            status=str(getattr(batch, "status", "")),
            total=_count(counts, "total"),
            completed=_count(counts, "completed"),
            failed=_count(counts, "failed"),
            output_file_id=_file_id(batch, "output_file_id"),
            error_file_id=_file_id(batch, "error_file_id"),
            errors=messages,
        )


def _count(counts: Any, name: str) -> int:
    value = getattr(counts, name, 0) if counts is not None else 0
    return token_count(value)


def _file_id(batch: Any, name: str) -> str | None:
    value = getattr(batch, name, None)
    return value if isinstance(value, str) and value else None


class BatchAPI:
    def __init__(self, config: LLMConfig):
        import openai

        self._openai = openai
        self.client = openai.OpenAI(
            api_key=config.api_key,
            base_url=config.base_url,
            timeout=max(config.timeout_s, 120.0),
            max_retries=3,
        )

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except self._openai.APIStatusError as exc:
            message = " ".join(str(getattr(exc, "message", exc)).split())[:400]
            hint = (
                "this endpoint may have no Batch API (vLLM's server and most local servers "
                "have none): use --batch-export FILE with vLLM's run_batch, then "
                "`annotate llm-import`"
                if exc.status_code in (404, 405)
                else "check OPENAI_API_KEY and --base-url"
            )
            raise BatchAPIError(
                f"{what} failed (HTTP {exc.status_code}: {message})", hint=hint
            ) from None
        except (self._openai.APIConnectionError, self._openai.APITimeoutError) as exc:
            raise BatchAPIError(
                f"{what} failed ({exc})",
                hint="run the same command again: nothing is submitted twice",
            ) from None

    def upload(self, path: Path) -> str:
        with open(path, "rb") as f:
            uploaded = self._call(
                "uploading the batch file", self.client.files.create, file=f, purpose=FILE_PURPOSE
            )
        file_id = getattr(uploaded, "id", None)
        if not isinstance(file_id, str) or not file_id:
            raise BatchAPIError(
                "uploading the batch file failed: the endpoint's reply is not a file object",
                hint="check --base-url: it must be an OpenAI-compatible Files and Batch API",
            )
        return file_id

    def create(self, input_file_id: str, tag: str) -> BatchState:
        batch = self._call(
            "creating the batch",
            self.client.batches.create,
            input_file_id=input_file_id,
            endpoint=BATCH_URL,
            completion_window=COMPLETION_WINDOW,
            metadata={TAG_KEY: tag},
        )
        return BatchState.of(batch)

    def find(self, tag: str) -> BatchState | None:
        """The batch created with this tag, if the provider has it (newest first)."""
        page = self._call("listing batches", self.client.batches.list, limit=100)
        for batch in page:
            if (batch.metadata or {}).get(TAG_KEY) == tag:
                return BatchState.of(batch)
        return None

    def retrieve(self, batch_id: str) -> BatchState:
        return BatchState.of(
            self._call("polling the batch", self.client.batches.retrieve, batch_id)
        )

    def cancel(self, batch_id: str) -> BatchState:
        return BatchState.of(
            self._call("cancelling the batch", self.client.batches.cancel, batch_id)
        )

    def download(self, file_id: str, dest: Path) -> Path:
        """Stream a file's content to ``dest`` (never whole in memory)."""
        try:
            with (
                self.client.files.with_streaming_response.content(file_id) as response,
                open(dest, "wb") as f,
            ):
                for chunk in response.iter_bytes(1 << 20):
                    f.write(chunk)
        except self._openai.APIStatusError as exc:
            raise BatchAPIError(
                f"downloading file {file_id} failed (HTTP {exc.status_code})",
                hint="run the same command again",
            ) from None
        return dest
