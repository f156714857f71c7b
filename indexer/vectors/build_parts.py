"""The new vectors of a build (or of `adapt`'s re-embedding), held in memory until its commit writes each part as
one segment (indexer/commit/rewrite.save_segments). A build is one part; `index --shards N` splits it into N,
document id d in part d % N, so each id's add or removal goes straight to the part holding it. Once committed
they are segments like any other: the read path knows segments only (indexer/vectors/segments.SegmentSet)."""

from __future__ import annotations

import faiss
import numpy as np
from searchengine.indexer.vectors.vector_index import VectorIndex


class BuildParts:
    """One or more VectorIndexes of one FAISS type and dimension that a build adds to, trains and removes from as
    one; document id d in part d % len(parts)."""

    def __init__(self, parts: list[VectorIndex]) -> None:
        self.parts = parts

    @property
    def factory(self) -> str:
        return self.parts[0].factory

    @property
    def dimension(self) -> int:
        return self.parts[0].dimension

    @property
    def count(self) -> int:
        return sum(part.count for part in self.parts)

    @property
    def needs_training(self) -> bool:
        return self.parts[0].needs_training

    @property
    def first(self) -> VectorIndex:
        """The part trained on the sample (whose training the others copy): what the trained template is made of
        (indexer/vectors/template.py)."""
        return self.parts[0]

    def train(self, vectors: np.ndarray) -> None:
        """Train the first part on the sample and give every other a copy of its training, so their quantisers
        are one (the index's template, indexer/vectors/template.py)."""
        self.first.train(vectors)
        for part in self.parts[1:]:
            part.index = faiss.clone_index(self.first.index)

    def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        if len(self.parts) == 1:
            self.first.add(vectors, ids)
            return
        ids = np.asarray(ids, dtype=np.int64)
        for part, mask in self._routed(ids):
            if mask.any():
                part.add(vectors[mask], ids[mask])

    def remove(self, ids: np.ndarray) -> bool:
        """Remove in place; False when the index type cannot (HNSW, PQ: every part is of that type alike)."""
        if len(self.parts) == 1:
            return self.first.remove(ids)
        ids = np.asarray(ids, dtype=np.int64)
        return all([part.remove(ids[mask]) for part, mask in self._routed(ids) if mask.any()])

    def _routed(self, ids: np.ndarray) -> list[tuple[VectorIndex, np.ndarray]]:
        """Each part with the mask of `ids` that live in it."""
        return [(part, ids % len(self.parts) == number) for number, part in enumerate(self.parts)]


def create_vectors(factory: str, dimension: int, parts: int = 1, originals: str | None = None) -> BuildParts:
    """An empty build of `factory` vectors in `parts` parts (`--shards`; 1 for one segment); `originals`: how a type
    whose codes are approximate keeps its original vectors (VectorIndex.create)."""
    return BuildParts([VectorIndex.create(factory, dimension, originals) for _ in range(parts)])
