"""Keyword and hybrid search: the keyword side (BM25 over the store's keyword index, searchengine.indexer.tables.store) and
hybrid search, which fuses it with the dense side (searchengine.engine.fusion) and gives each hit both scores."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from searchengine.engine.fusion import Fusion, bounded_keyword, fuse
from searchengine.engine.search import Scored, dense_rankings
from searchengine.indexer.tables.store import DocumentStore
from searchengine.indexer.vectors.vector_index import VectorIndex


def keyword_rankings(
    store: DocumentStore, texts: Sequence[str], k: int, allowed: np.ndarray | None = None
) -> list[list[Scored]]:
    """The k best documents per query by BM25, best first, among `allowed` ids (all when None). Each scores its
    BM25 over the most the query's words let any document reach (0..1, the same scale for every query:
    DocumentStore.keyword_bound), and keeps its BM25 as `keyword_score`."""
    rankings = []
    for text in texts:
        found = store.keyword.search(text, k, allowed)
        shares = bounded_keyword(found, store.keyword.bound(text) if found else 0.0)
        rankings.append([Scored(doc, shares[doc], ("keyword",), keyword_score=score) for doc, score in found])
    return rankings


def hybrid_rankings(
    vectors: VectorIndex,
    store: DocumentStore,
    texts: Sequence[str],
    query_vectors: np.ndarray,
    k: int,
    fusion: Fusion,
    searchable: int,
    allowed: np.ndarray | None = None,
    excluded: np.ndarray | None = None,
) -> list[list[Scored]]:
    """The k best documents per query by the fusion of its dense and keyword candidates (the best
    max(k, fusion.depth) of each side, both among `allowed` ids, all when None; the ids of further passages there
    match no document on the keyword side), best first. Each hit keeps which sides found it and both its scores: a
    side that did not find a document still scores it (its cosine to the query; its BM25, 0 without any of the
    query's words; a document the dense side missed gets the cosine of its first vector, which for a document split
    into passages is its first passage's). `searchable` is how many documents the dense side can return.

    The two sides run one after the other. Encoding the query in a thread of its own while SQLite searches the
    words was tried: with ONNX Runtime's two threads per query it gained nothing on 2 cores, and with one thread it
    slowed dense search by more than it saved (docs/retrieval.md#query-time-cost)."""
    depth = max(k, fusion.depth)
    keyword_sides = [store.keyword.search(text, depth, allowed) for text in texts]
    dense_sides = dense_rankings(vectors, store, query_vectors, min(depth, searchable), allowed, excluded)
    results = []
    for text, query_vector, dense_side, keyword_side in zip(texts, query_vectors, dense_sides, keyword_sides):
        dense = {scored.id: scored.score for scored in dense_side}
        spans = {scored.id: scored.span for scored in dense_side}
        keyword = dict(keyword_side)
        bound = store.keyword.bound(text) if keyword_side and fusion.method == "bounded" else 0.0
        fused = fuse(list(dense.items()), keyword_side, fusion, bound)[:k]
        unscored_dense = [doc for doc, _ in fused if doc not in dense]
        if unscored_dense:
            cosines = vectors.reconstruct(np.array(unscored_dense, dtype=np.int64)) @ query_vector
            dense_scores = {**dense, **dict(zip(unscored_dense, map(float, cosines)))}
        else:
            dense_scores = dense
        unscored_keyword = [doc for doc, _ in fused if doc not in keyword]
        keyword_scores = {**store.keyword.scores(text, unscored_keyword), **keyword} if unscored_keyword else keyword
        results.append(
            [
                Scored(
                    doc,
                    score,
                    tuple(side for side, found in (("dense", dense), ("keyword", keyword)) if doc in found),
                    dense_score=dense_scores[doc],
                    keyword_score=keyword_scores[doc],
                    span=spans.get(doc),
                )
                for doc, score in fused
            ]
        )
    return results
