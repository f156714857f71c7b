"""Vector sets larger than memory for the storage benchmarks: the real vectors and their noisy copies written block by
block into a memory-mapped file (the same rows benchmarks/scale/synthetic.noisy_copies returns, in float32, or
rounded to float16 to halve the disk), and the exact top k of queries over them computed block by block, so that
10M vectors of 384 dimensions (15 GB in float32) never sit in memory at once.

The exact top k (RunningTop) is a matrix product per block and a threshold: once every query holds k candidates,
only a block's scores at or above a query's k-th best are merged, so the cost is the product (about 10^12
multiply-adds for 300 queries over 10M vectors). faiss's IndexFlatIP took 4.7 times as long for 300 queries over
500,000 rows (18.4 s against 3.9 s for numpy's product and a full partition, one thread, this machine), and the
partition was most of that. The file's writer can hand each block to a RunningTop as it is made (noisy_copies_file's
`top`), so the rows are never read back from disk for it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

EXACT_BLOCK = 65_536
"""Rows scored at a time (about 100 MB of float32 at 384 dimensions, and 300 queries' scores of them 80 MB)."""


class RunningTop:
    """The k largest inner products of each query over the rows given so far (block by block, each with the row
    number of its first row), ties broken by the smaller row number."""

    def __init__(self, queries: np.ndarray, k: int) -> None:
        self.queries = np.ascontiguousarray(queries, dtype=np.float32)
        self.k = k
        self.scores = np.full((len(queries), 0), -np.inf, dtype=np.float32)
        self.rows = np.zeros((len(queries), 0), dtype=np.int64)

    def add(self, block: np.ndarray, first_row: int) -> None:
        """Merge the rows of `block` (row i is row first_row + i) into each query's top k."""
        for start in range(0, len(block), EXACT_BLOCK):
            part = np.asarray(block[start : start + EXACT_BLOCK], dtype=np.float32)
            self._merge(self.queries @ part.T, first_row + start)

    def _merge(self, scores: np.ndarray, first_row: int) -> None:
        if self.scores.shape[1] < self.k:  # not yet k a query: take every row
            rows = np.broadcast_to(np.arange(first_row, first_row + scores.shape[1]), scores.shape)
            self._keep(np.concatenate([self.scores, scores], axis=1), np.concatenate([self.rows, rows], axis=1))
            return
        above = scores >= self.scores[:, -1:]
        for query in np.flatnonzero(above.any(axis=1)):
            columns = np.flatnonzero(above[query])
            merged = np.concatenate([self.scores[query], scores[query, columns]])
            rows = np.concatenate([self.rows[query], columns + first_row])
            order = np.lexsort((rows, -merged))[: self.k]
            self.scores[query], self.rows[query] = merged[order], rows[order]

    def _keep(self, scores: np.ndarray, rows: np.ndarray) -> None:
        if scores.shape[1] > self.k:
            best = np.argpartition(-scores, self.k - 1, axis=1)[:, : self.k]
            scores, rows = np.take_along_axis(scores, best, 1), np.take_along_axis(rows, best, 1)
        order = np.lexsort((rows, -scores), axis=1)
        self.scores, self.rows = np.take_along_axis(scores, order, 1), np.take_along_axis(rows, order, 1)


def noisy_copies_file(
    real: np.ndarray,
    n: int,
    noise: float,
    path: Path,
    dtype: str = "float32",
    seed: int = 0,
    top: RunningTop | None = None,
) -> np.memmap:
    """n rows in a new .npy file at `path`, memory-mapped: the real vectors, then noisy re-normalised copies of them
    until there are n, drawn as noisy_copies draws them (the same generator, the same blocks), stored as `dtype`.
    `top`, when given, is handed every block as stored (rounded to `dtype`), so it holds their exact top k after."""
    real = np.asarray(real, dtype=np.float32)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.dtype(dtype), shape=(n, real.shape[1]))
    out[: min(n, len(real))] = real[:n]
    if top is not None:
        top.add(out[: min(n, len(real))], 0)
    rng = np.random.default_rng(seed)
    for start in range(len(real), n, len(real)):
        stop = min(start + len(real), n)
        block = real[: stop - start] + rng.normal(scale=noise, size=(stop - start, real.shape[1])).astype(np.float32)
        out[start:stop] = block / np.linalg.norm(block, axis=1, keepdims=True)
        if top is not None:
            top.add(out[start:stop], start)
    out.flush()
    return out


def exact_top_blocks(vectors: np.ndarray, queries: np.ndarray, k: int, block: int = EXACT_BLOCK) -> np.ndarray:
    """The row numbers of each query's k largest inner products over every row of `vectors`, best first (ties: the
    smaller row first), read `block` rows at a time."""
    top = RunningTop(queries, k)
    for start in range(0, len(vectors), block):
        top.add(vectors[start : start + block], start)
    return top.rows[:, : min(k, len(vectors))]
