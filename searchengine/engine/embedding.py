"""The one place that turns encoder output into what the vector index stores, for documents and queries alike."""

from __future__ import annotations

import faiss
import numpy as np

from searchengine.indexer.vectors.whitening import Whitening


def to_index_vectors(embeddings: np.ndarray, whitening: Whitening | None) -> np.ndarray:
    """Whiten (when a transform was fitted), then L2-normalise so inner product is cosine similarity."""
    vectors = whitening.apply(embeddings) if whitening is not None else np.array(embeddings, dtype=np.float32)
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    faiss.normalize_L2(vectors)
    return vectors
