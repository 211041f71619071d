"""all-MiniLM-L6-v2 as sentence-transformers computes it, in NumPy.

The model is a 6-layer BERT (hidden 384, 12 heads, GELU feed-forward of 1536), followed by
mean pooling over the tokens and L2 normalisation (the model's ``modules.json``). The forward
pass below is that of ``transformers``' BertModel in float32: no torch, no onnxruntime, and
the weights are read in place (memory-mapped) from ``model.safetensors``. Texts are embedded
in batches of similar length so that padding costs little; padded positions get no attention
weight, as in BERT, so a text's vector does not depend on its batch.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import numpy as np

from annotate.embeddings.weights import ModelFiles
from annotate.embeddings.wordpiece import WordPiece

_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def read_safetensors(data: bytes | np.ndarray) -> dict[str, np.ndarray]:
    """The tensors of a safetensors file's bytes (or memory map), without copying them."""
    buf = np.frombuffer(data, dtype=np.uint8) if isinstance(data, bytes) else data
    size = int(buf[:8].view("<u8")[0])
    header = json.loads(bytes(buf[8 : 8 + size]))
    base = 8 + size
    tensors: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        dtype = np.dtype(_DTYPES[info["dtype"]]).newbyteorder("<")
        tensors[name] = buf[base + start : base + end].view(dtype).reshape(info["shape"])
    return tensors


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(var + eps) * weight + bias


def _gelu(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf  # scipy comes with statsmodels

    return 0.5 * x * (1.0 + erf(x / np.float32(np.sqrt(2.0))))


class MiniLM:
    """Sentence embeddings of all-MiniLM-L6-v2 (384 dimensions, unit length)."""

    name = "sentence-transformers/all-MiniLM-L6-v2"

    def __init__(self, files: ModelFiles) -> None:
        self.config = json.loads(files.read_text("config.json"))
        st_config = json.loads(files.read_text("sentence_bert_config.json"))
        self.max_length = int(st_config.get("max_seq_length", 256))
        tokenizer = json.loads(files.read_text("tokenizer.json"))
        model = tokenizer["model"]
        self.tokenizer = WordPiece(
            model["vocab"],
            special=tuple(t["content"] for t in tokenizer.get("added_tokens", [])),
            max_input_chars_per_word=int(model.get("max_input_chars_per_word", 100)),
        )
        self.w: Mapping[str, np.ndarray] = read_safetensors(files.weights())
        self.dim = int(self.config["hidden_size"])
        self.heads = int(self.config["num_attention_heads"])
        self.layers = int(self.config["num_hidden_layers"])
        self.eps = float(self.config["layer_norm_eps"])
        self._t = {  # the linear layers' weights transposed once, for x @ W.T
            k: np.ascontiguousarray(v.T)
            for k, v in self.w.items()
            if k.endswith("dense.weight")
            or k.endswith(("query.weight", "key.weight", "value.weight"))
        }

    def tokenize(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, self.max_length)

    def embed(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """Unit-length float32 vectors, one row per text, in the order given."""
        ids = [self.tokenize(t) for t in texts]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            out[chunk] = self._forward([ids[i] for i in chunk])
        return out

    def _linear(self, x: np.ndarray, prefix: str) -> np.ndarray:
        # As one 2-D product: NumPy's stacked (3-D @ 2-D) matmul is ~20x slower here.
        flat = x.reshape(-1, x.shape[-1]) @ self._t[prefix + ".weight"]
        return (flat + self.w[prefix + ".bias"]).reshape(*x.shape[:-1], -1)

    def _forward(self, batch: list[list[int]]) -> np.ndarray:
        w = self.w
        width = max(len(ids) for ids in batch)
        tokens = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.float32)
        for row, ids in enumerate(batch):
            tokens[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1.0
        x = (
            w["embeddings.word_embeddings.weight"][tokens]
            + w["embeddings.position_embeddings.weight"][:width]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(
            x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps
        )
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        n, t, d = x.shape
        h = self.heads
        for layer in range(self.layers):
            p = f"encoder.layer.{layer}."

            def heads(y: np.ndarray) -> np.ndarray:
                return y.reshape(n, t, h, d // h).transpose(0, 2, 1, 3)

            q = heads(self._linear(x, p + "attention.self.query"))
            k = heads(self._linear(x, p + "attention.self.key"))
            v = heads(self._linear(x, p + "attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(d // h)) + bias
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(n, t, d)
            attended = self._linear(context, p + "attention.output.dense") + x
            x = _layer_norm(
                attended, w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"], self.eps,
            )  # fmt: skip
            inner = _gelu(self._linear(x, p + "intermediate.dense"))
            x = _layer_norm(
                self._linear(inner, p + "output.dense") + x,
                w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], self.eps,
            )  # fmt: skip
        summed = (x * mask[:, :, None]).sum(axis=1)
        pooled = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return (pooled / norms).astype(np.float32)
