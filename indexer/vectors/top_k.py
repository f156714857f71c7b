"""The k best of several searches' results (segments searched apart: indexer/vectors/segments.SegmentSet), and the
threads they are searched in."""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np


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


@functools.cache
def pool() -> ThreadPoolExecutor:
    """The threads segments are searched in, made once per process."""
    return ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="shard-search")
