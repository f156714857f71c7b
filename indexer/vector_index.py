"""The FAISS vector index: any factory string, inner product on normalised vectors, ids = store row ids."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import faiss
import numpy as np

from indexer.errors import IndexerError

EXACT_SEARCH_LIMIT = 200_000
"""Up to this many vectors the default index is exact ("Flat"); beyond it, graph search ("HNSW32")."""

HNSW_EF_SEARCH = 128
HNSW_EF_CONSTRUCTION = 80
IVF_NPROBE_FRACTION = 16
"""IVF indexes search nlist / 16 cells (at least 1)."""


def default_factory(count: int | None) -> str:
    """Exact search for small corpora (and unknown sizes), HNSW32 for large ones."""
    return "Flat" if count is None or count <= EXACT_SEARCH_LIMIT else "HNSW32"


class VectorIndex:
    """A FAISS index whose ids are the document store's row ids."""

    def __init__(self, index: faiss.Index, factory: str) -> None:
        self.index = index
        self.factory = factory

    @classmethod
    def create(cls, factory: str, dimension: int) -> VectorIndex:
        """Build an empty index from a FAISS factory string ("Flat", "HNSW32", "IVF1024,PQ32", ...)."""
        try:
            inner = faiss.index_factory(dimension, factory, faiss.METRIC_INNER_PRODUCT)
        except RuntimeError as exc:
            reason = str(exc).strip().splitlines()[-1]
            raise IndexerError(
                f"FAISS cannot build index type {factory!r} for dimension {dimension}: {reason}. "
                'Use a factory string such as "Flat", "HNSW32" or "IVF1024,Flat"'
            ) from None
        _tune(inner)
        index = inner if isinstance(inner, faiss.IndexIDMap) else faiss.IndexIDMap2(inner)
        return cls(index, factory)

    @property
    def dimension(self) -> int:
        return int(self.index.d)

    @property
    def count(self) -> int:
        return int(self.index.ntotal)

    @property
    def needs_training(self) -> bool:
        return not self.index.is_trained

    def train(self, vectors: np.ndarray) -> None:
        """Train quantisers (IVF, PQ) on a sample of the vectors that will be added."""
        try:
            self.index.train(np.ascontiguousarray(vectors, dtype=np.float32))
        except RuntimeError as exc:
            reason = str(exc).strip().splitlines()[-1]
            raise IndexerError(
                f"training index type {self.factory!r} on {len(vectors)} vectors failed: {reason}. "
                "Index more documents or choose a smaller index (fewer IVF lists, or Flat/HNSW32)"
            ) from None

    def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), np.asarray(ids, dtype=np.int64))

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k inner products and ids per query row; missing results have id -1."""
        return self.index.search(np.ascontiguousarray(queries, dtype=np.float32), k)

    def ids(self) -> np.ndarray:
        """Every stored id, in the order the vectors were added."""
        return faiss.vector_to_array(self.index.id_map).astype(np.int64)

    def stored_vectors(self, batch_size: int = 65_536) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(ids, vectors) in batches, read back from the index itself (approximate for PQ/SQ codes)."""
        inner = faiss.downcast_index(self.index.index)
        try:
            faiss.extract_index_ivf(inner).make_direct_map()
        except RuntimeError:
            pass
        ids = self.ids()
        for start in range(0, len(ids), batch_size):
            stop = min(start + batch_size, len(ids))
            yield ids[start:stop], inner.reconstruct_n(start, stop - start)

    def save(self, path: Path) -> None:
        faiss.write_index(_on_cpu(self.index), str(path))

    @classmethod
    def load(cls, path: Path, factory: str) -> VectorIndex:
        """Read an index written by `save`; a GPU copy is used for search when the GPU build finds a GPU."""
        try:
            index = faiss.read_index(str(path))
        except RuntimeError:
            raise IndexerError(f"vector index file {path} is corrupt or truncated; rebuild the index") from None
        return cls(_on_gpu_when_present(index), factory)


def _tune(index: faiss.Index) -> None:
    """Search-quality defaults stored inside the index file: HNSW efSearch/efConstruction, IVF nprobe."""
    if hasattr(index, "hnsw"):
        index.hnsw.efSearch = HNSW_EF_SEARCH
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    try:
        ivf = faiss.extract_index_ivf(index)
    except RuntimeError:
        return
    ivf.nprobe = max(1, ivf.nlist // IVF_NPROBE_FRACTION)


def _on_cpu(index: faiss.Index) -> faiss.Index:
    return faiss.index_gpu_to_cpu(index) if hasattr(faiss, "GpuIndex") and _is_gpu(index) else index


def _is_gpu(index: faiss.Index) -> bool:
    return "Gpu" in type(faiss.downcast_index(index)).__name__


def _on_gpu_when_present(index: faiss.Index) -> faiss.Index:
    """Move to all GPUs with the faiss GPU build; HNSW and other CPU-only types stay on the CPU."""
    if not hasattr(faiss, "index_cpu_to_all_gpus") or faiss.get_num_gpus() == 0:
        return index
    try:
        return faiss.index_cpu_to_all_gpus(index)
    except RuntimeError:
        return index
