"""The vectors of a build split over several FAISS indexes (`index --shards N`), used as one while it is built and
written as one segment each (indexer/commit/rewrite.save_segments); and how the results of several parts (shards,
segments) are merged into one top k.

Document id d lives in shard d % shards, so every operation by id (add, remove, reconstruct, a filter's allowed
and excluded ids) goes straight to the one shard holding it. A search asks every shard for its own k best,
restricted to that shard's part of the filter, in parallel threads (FAISS releases the GIL while it searches), and
merges them into the k best by score, ties by id. For exact index types (Flat) that is the exact top k: the hits
one index of the same vectors returns. Approximate types (HNSW, IVF, PQ) search each shard approximately.
Format 1 kept the shards as files of their own; such an index is read as segments (indexer/upgrades/format_one.py).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import faiss
import numpy as np
from searchengine.indexer.vectors.vector_index import VectorIndex, collect_matrix


class ShardedVectorIndex:
    """Several VectorIndexes of one FAISS type and dimension, document id d in shard d % len(shards); the same
    methods as VectorIndex that a build uses (train, add, reconstruct), so it builds into either."""

    def __init__(self, shards: list[VectorIndex]) -> None:
        self.shards = shards

    @classmethod
    def create(cls, factory: str, dimension: int, shards: int, originals: str | None = None) -> ShardedVectorIndex:
        return cls([VectorIndex.create(factory, dimension, originals) for _ in range(shards)])

    @property
    def factory(self) -> str:
        return self.shards[0].factory

    @property
    def dimension(self) -> int:
        return self.shards[0].dimension

    @property
    def count(self) -> int:
        return sum(shard.count for shard in self.shards)

    @property
    def needs_training(self) -> bool:
        return self.shards[0].needs_training

    def _parts(self, ids: np.ndarray) -> Iterator[tuple[VectorIndex, np.ndarray]]:
        """Each shard with the mask of `ids` that live in it."""
        ids = np.asarray(ids, dtype=np.int64)
        for number, shard in enumerate(self.shards):
            yield shard, ids % len(self.shards) == number

    def train(self, vectors: np.ndarray) -> None:
        """Train the first shard on the sample and give every other a copy of its training, so their quantisers
        are one (the index's template, indexer/vectors/template.py)."""
        first = self.shards[0]
        first.train(vectors)
        for shard in self.shards[1:]:
            shard.index = faiss.clone_index(first.index)

    @property
    def trained_vectors(self) -> int:
        return self.shards[0].trained_vectors

    @property
    def training_probe(self) -> np.ndarray | None:
        return self.shards[0].training_probe

    def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        for shard, mask in self._parts(ids):
            if mask.any():
                shard.add(vectors[mask], np.asarray(ids, dtype=np.int64)[mask])

    def search(
        self, queries: np.ndarray, k: int, allowed: np.ndarray | None = None, excluded: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """VectorIndex.search over every shard at once, merged: the k best per query, ties by id."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        threads = max(1, faiss.omp_get_max_threads() // len(self.shards))  # the caller's share, split over shards

        def search_shard(number: int) -> tuple[np.ndarray, np.ndarray] | None:
            own = None if allowed is None else _in_shard(allowed, number, len(self.shards))
            if own is not None and not len(own):
                return None
            gone = None if excluded is None else _in_shard(excluded, number, len(self.shards))
            faiss.omp_set_num_threads(threads)  # this pool thread's own OpenMP setting
            return self.shards[number].search(queries, k, own, gone if gone is not None and len(gone) else None)

        return merge_found(list(pool().map(search_shard, range(len(self.shards)))), k, len(queries))

    def reconstruct(self, ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        out = np.empty((len(ids), self.dimension), dtype=np.float32)
        for shard, mask in self._parts(ids):
            if mask.any():
                out[mask] = shard.reconstruct(ids[mask])
        return out

    def remove(self, ids: np.ndarray) -> bool:
        """Remove in place; False when the index type cannot (HNSW, PQ: every shard is of that type alike)."""
        ids = np.asarray(ids, dtype=np.int64)
        return all([shard.remove(ids[mask]) for shard, mask in self._parts(ids) if mask.any()])

    def ids(self) -> np.ndarray:
        """Every stored id, shard after shard."""
        return np.concatenate([shard.ids() for shard in self.shards])

    def stored_vectors(self, batch_size: int = 65_536) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for shard in self.shards:
            yield from shard.stored_vectors(batch_size)

    def stored_matrix(self) -> tuple[np.ndarray, np.ndarray]:
        return collect_matrix(self.count, self.dimension, self.stored_vectors())


Vectors = VectorIndex | ShardedVectorIndex
"""A build's new vectors, in one FAISS index or in shards (each written as a segment)."""


def merge_found(
    results: list[tuple[np.ndarray, np.ndarray] | None], k: int, rows: int
) -> tuple[np.ndarray, np.ndarray]:
    """`merge_top_k` of the parts that searched (None: a part with nothing to search); `rows` queries of no
    result at all (ids -1, scores -inf) when none did."""
    found = [result for result in results if result is not None]
    if not found:
        return np.full((rows, k), -np.inf, dtype=np.float32), np.full((rows, k), -1, np.int64)
    return merge_top_k(found, k)


def merge_top_k(results: list[tuple[np.ndarray, np.ndarray]], k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best (score, id) per row of several searches' results, best first, equal scores by id; missing
    results (id -1) last."""
    scores = np.concatenate([scores for scores, _ in results], axis=1)
    ids = np.concatenate([ids for _, ids in results], axis=1)
    scores = np.where(ids >= 0, scores, -np.inf).astype(np.float32)
    order = np.lexsort((ids, -scores), axis=1)[:, :k]
    return np.take_along_axis(scores, order, 1), np.take_along_axis(ids, order, 1)


def _in_shard(ids: np.ndarray, number: int, shards: int) -> np.ndarray:
    ids = np.asarray(ids, dtype=np.int64)
    return ids[ids % shards == number]


@functools.cache
def pool() -> ThreadPoolExecutor:
    """The threads shards and segments are searched in, made once per process."""
    return ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="shard-search")


def create_vectors(factory: str, dimension: int, shards: int = 1, originals: str | None = None) -> Vectors:
    """An empty vector index of `factory`, in `shards` shards (one plain VectorIndex when 1); `originals`: how a
    type whose codes are approximate keeps its original vectors (VectorIndex.create)."""
    if shards == 1:
        return VectorIndex.create(factory, dimension, originals)
    return ShardedVectorIndex.create(factory, dimension, shards, originals)

