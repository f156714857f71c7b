"""Vector sets larger than memory for the storage benchmarks: the real vectors and their noisy copies written block by
block into a memory-mapped file (the same rows benchmarks/scale/synthetic.noisy_copies returns, in float32, or
rounded to float16 to halve the disk), and the exact top k of queries over them computed block by block, so that
10M vectors of 384 dimensions (15 GB in float32) never sit in memory at once."""

from __future__ import annotations

from pathlib import Path

import numpy as np

EXACT_BLOCK = 500_000
"""Rows searched exactly at a time (about 770 MB of float32 at 384 dimensions)."""


def noisy_copies_file(
    real: np.ndarray, n: int, noise: float, path: Path, dtype: str = "float32", seed: int = 0
) -> np.memmap:
    """n rows in a new .npy file at `path`, memory-mapped: the real vectors, then noisy re-normalised copies of them
    until there are n, drawn as noisy_copies draws them (the same generator, the same blocks), stored as `dtype`."""
    real = np.asarray(real, dtype=np.float32)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.dtype(dtype), shape=(n, real.shape[1]))
    out[: min(n, len(real))] = real[:n]
    rng = np.random.default_rng(seed)
    for start in range(len(real), n, len(real)):
        stop = min(start + len(real), n)
        block = real[: stop - start] + rng.normal(scale=noise, size=(stop - start, real.shape[1])).astype(np.float32)
        out[start:stop] = block / np.linalg.norm(block, axis=1, keepdims=True)
    out.flush()
    return out


def exact_top_blocks(vectors: np.ndarray, queries: np.ndarray, k: int, block: int = EXACT_BLOCK) -> np.ndarray:
    """The ids (row numbers) of each query's k largest inner products over every row of `vectors`, best first,
    searched `block` rows at a time (faiss IndexFlatIP) and merged."""
    import faiss

    best_scores = np.full((len(queries), 0), -np.inf, dtype=np.float32)
    best_ids = np.zeros((len(queries), 0), dtype=np.int64)
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    for start in range(0, len(vectors), block):
        flat = faiss.IndexFlatIP(vectors.shape[1])
        flat.add(np.ascontiguousarray(vectors[start : start + block], dtype=np.float32))
        scores, ids = flat.search(queries, min(k, flat.ntotal))
        scores = np.concatenate([best_scores, scores], axis=1)
        ids = np.concatenate([best_ids, ids + start], axis=1)
        order = np.lexsort((ids, -scores), axis=1)[:, :k]
        best_scores, best_ids = np.take_along_axis(scores, order, 1), np.take_along_axis(ids, order, 1)
    return best_ids
