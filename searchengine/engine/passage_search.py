"""From nearest vectors to nearest documents: a document split into passages has several vectors, and its best
passage decides its score. The vector index is asked for more candidates than documents wanted, and again for more
where one document's passages took so many places that fewer than k documents came back."""

from __future__ import annotations

import numpy as np

from searchengine.indexer.tables.store import DocumentStore
from searchengine.indexer.vectors.vector_index import VectorIndex

Span = tuple[int, int]
BestPassages = dict[int, tuple[float, Span | None]]
"""Document id -> (score of its best vector, the characters of its text that passage covers, None for a document
that is one vector), best first."""
CANDIDATES_PER_HIT = 4
"""Vectors asked for per document wanted, at first, when some documents are split (four times more each retry)."""


def best_passages(
    vectors: VectorIndex,
    store: DocumentStore,
    queries: np.ndarray,
    k: int,
    allowed: np.ndarray | None = None,
    excluded: np.ndarray | None = None,
) -> list[BestPassages]:
    """For each query row, its k best documents (fewer when fewer qualify), each with its best passage, searching
    the `allowed` vector ids (all when None) and never `excluded` ones."""
    if not store.passages.any():  # one vector per document: the k nearest vectors are the k nearest documents
        scores, ids = vectors.search(queries, k, allowed, excluded)
        return [
            {int(i): (float(s), None) for s, i in zip(row_scores, row_ids) if i >= 0}
            for row_scores, row_ids in zip(scores, ids)
        ]
    available = len(allowed) if allowed is not None else vectors.count - (0 if excluded is None else len(excluded))
    results: list[BestPassages] = [{} for _ in range(len(queries))]
    pending = np.arange(len(queries))
    depth = min(available, k * CANDIDATES_PER_HIT)
    while len(pending):
        scores, ids = vectors.search(queries[pending], depth, allowed, excluded)
        passages = store.passages.of_vectors(np.unique(ids[ids >= 0]).tolist())
        short = []
        for row, row_scores, row_ids in zip(pending, scores, ids):
            results[row] = _collapse(row_scores, row_ids, passages, k)
            if len(results[row]) < k and row_ids[-1] >= 0 and depth < available:
                short.append(row)
        pending = np.asarray(short, dtype=np.int64)
        depth = min(available, depth * CANDIDATES_PER_HIT)
    return results


def _collapse(scores: np.ndarray, ids: np.ndarray, passages: dict[int, tuple[int, int, int]], k: int) -> BestPassages:
    """The first k documents of a ranked list of vector ids, each at its first (best) vector."""
    found: BestPassages = {}
    for score, vector_id in zip(scores, ids):
        if vector_id < 0:  # FAISS pads a short result with -1
            continue
        passage = passages.get(int(vector_id))
        document = int(vector_id) if passage is None else passage[0]
        if document not in found:
            found[document] = (float(score), None if passage is None else (passage[1], passage[2]))
            if len(found) == k:
                break
    return found
