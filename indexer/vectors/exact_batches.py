"""How FAISS's exact search takes a batch of queries: one query scans the vectors on its own (FAISS's sequential
path, fastest for one), several are scored together as one matrix product (its BLAS path, which reads the vectors
once for the whole batch).

FAISS picks the path by a process-wide setting (`distance_compute_blas_threshold`), whose default in the faiss
wheels we use sends every batch of up to thousands of queries down the sequential path, so a batch cost what its
queries cost one by one. The sequential path's time grows with the queries, the matrix product's hardly at all, and
they cross at a few queries (measured in docs/benchmarks.md#serving). So a batch of BATCH_FROM queries or more is
scored as a matrix product.
The setting is switched for the calls that need it and back when the last of them (in any thread) ends.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import faiss

BATCH_FROM = 3
"""Queries from which one call is scored as a matrix product (at 2 both paths cost the same)."""
_ALWAYS = 1
"""The setting that sends every call down the matrix-product path."""
_lock = threading.Lock()
_batches = 0
_default = faiss.cvar.distance_compute_blas_threshold


@contextmanager
def scored_together(queries: int) -> Iterator[None]:
    """Within the block, FAISS scores a call's `queries` as one matrix product when there are BATCH_FROM or
    more; a single query keeps the sequential scan."""
    global _batches
    if queries < BATCH_FROM:
        yield
        return
    with _lock:
        _batches += 1
        faiss.cvar.distance_compute_blas_threshold = _ALWAYS
    try:
        yield
    finally:
        with _lock:
            _batches -= 1
            if _batches == 0:
                faiss.cvar.distance_compute_blas_threshold = _default
