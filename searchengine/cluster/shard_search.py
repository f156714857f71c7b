"""One shard's part of a cluster search: its candidates for the merge (searchengine.cluster.merge), scored as one
index of every shard's documents would score them. Dense scores need nothing from outside (the cosine to the
query vector, encoded once by the caller); keyword scores use the term statistics summed over the shards, given in
the query (ShardQuery.phrases and .average_length), so BM25 is computed here as FTS5 computes it
(searchengine.indexer.query.global_bm25).

The candidates come with the stored documents of every one that can still reach the cluster's top k (`reachable`),
read in the same call and snapshot, so a search needs no round of its own to fetch them."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from searchengine.engine.index_reader import IndexReader
from searchengine.engine.search import Hit, Scored, dense_rankings, hits_of
from searchengine.indexer.query.filter_sql import Filter
from searchengine.indexer.query.global_bm25 import TermStatistics
from searchengine.indexer.query.keyword_query import keyword_terms

Phrases = list[tuple[tuple[str, ...], float]]
"""A keyword query as BM25 scores it: (tokens, IDF) per phrase of its MATCH expression, in order."""


@dataclass(frozen=True)
class ShardQuery:
    """What every shard is asked, for a batch of queries: the sides to rank (`sides`), how many candidates per
    side (`depth`), the filters, the query vectors (dense side) and the phrases with their global IDFs (keyword
    side), one entry per query."""

    sides: tuple[str, ...]
    depth: int
    k: int
    conditions: list[Filter] = field(default_factory=list)
    query_vectors: np.ndarray | None = None
    phrases: list[Phrases] | None = None
    average_length: float = 0.0


@dataclass(frozen=True)
class ShardCandidates:
    """One shard's candidates for one query, with local ids: each side's best `depth` as (id, score) best first
    (a dense one's best passage `spans`), and both scores of every candidate of either side (`cosines`: the cosine
    of its first vector; `bm25`: 0 when it holds none of the words), which the merge needs when the other side
    did not find it; and the stored `documents` (unscored hits) of those candidates that can reach the top k."""

    dense: list[tuple[int, float]]
    keyword: list[tuple[int, float]]
    spans: dict[int, tuple[int, int] | None]
    cosines: dict[int, float]
    bm25: dict[int, float]
    documents: dict[int, Hit] = field(default_factory=dict)


def shard_statistics(reader: IndexReader, texts: list[str]) -> TermStatistics:
    """This shard's term statistics for the words of `texts` (what the caller sums over the shards)."""
    return reader.store.keyword.statistics([word for text in texts for word in keyword_terms(text)])


def shard_candidates(reader: IndexReader, query: ShardQuery, queries: int) -> tuple[list[ShardCandidates], int]:
    """This shard's candidates for each of `queries` queries, and how many of its documents meet the filters (the
    dense side's `searchable`)."""
    empty = ShardCandidates([], [], {}, {}, {}, {})
    if len(reader) == 0:
        return [empty] * queries, 0
    store = reader.store
    matching = store.filters.matching_ids(query.conditions) if query.conditions else None
    searchable = len(reader) if matching is None else len(matching)
    if matching is not None and len(matching) == 0:
        return [empty] * queries, 0
    dense_sides: list[list[Scored]] = [[] for _ in range(queries)]
    if "dense" in query.sides:
        allowed = None
        if matching is not None:
            passages = store.filters.passage_ids_matching(query.conditions)
            allowed = np.union1d(matching, passages) if len(passages) else matching
        excluded = reader.tombstones if len(reader.tombstones) else None
        depth = min(query.depth, searchable)
        dense_sides = dense_rankings(reader.vectors, store, query.query_vectors, depth, allowed, excluded)
    results = []
    for position in range(queries):
        dense = [(scored.id, scored.score) for scored in dense_sides[position]]
        keyword: list[tuple[int, float]] = []
        rows, scores = _NONE
        if "keyword" in query.sides and query.phrases is not None:
            rows, scores = _bm25(reader, query.phrases[position], query.average_length, matching)
            keyword = best_scored(rows, scores, query.depth)
        candidates = sorted({doc for doc, _ in dense} | {doc for doc, _ in keyword})
        cosines: dict[int, float] = {}
        bm25: dict[int, float] = {}
        if len(query.sides) > 1 and candidates:
            vectors = reader.vectors.reconstruct(np.asarray(candidates, dtype=np.int64))
            cosines = dict(zip(candidates, map(float, vectors @ query.query_vectors[position])))
            bm25 = dict(zip(candidates, _scores_of(rows, scores, candidates)))  # every candidate meets the filters
        spans = {scored.id: scored.span for scored in dense_sides[position]}
        results.append(ShardCandidates(dense, keyword, spans, cosines, bm25))
    wanted = [reachable(answer.dense, answer.keyword, query.k) for answer in results]
    documents = hits_of(store, [[Scored(doc, 0.0, ()) for doc in ids] for ids in wanted])
    for answer, found in zip(results, documents):
        answer.documents.update((hit.id, hit) for hit in found)
    return results, searchable


def reachable(dense: list[tuple[int, float]], keyword: list[tuple[int, float]], k: int) -> list[int]:
    """The candidates of one shard that can be among the cluster's k best, given each side's list of this shard
    (best first): those that fewer than k of the shard's other candidates dominate. Y dominates X when Y comes
    before X on both sides (missing from a side: after all). Every way the merge ranks (one side; fusion by rank,
    by bounded or min-max score) ranks Y ahead of X over the whole cluster too: each side's global list keeps this
    shard's candidates in this order, so Y's part is at least X's on each side, and where the fused scores tie, Y's
    better rank comes first. So a candidate k others dominate is never in the top k, wherever the others rank."""
    if not keyword or not dense:
        return [doc for doc, _ in (dense or keyword)[:k]]
    docs = sorted({doc for doc, _ in dense} | {doc for doc, _ in keyword})
    missing = len(dense) + len(keyword)
    ordered = [sorted(side, key=lambda item: (-item[1], item[0])) for side in (dense, keyword)]  # as the merge orders
    ranks = [{doc: rank for rank, (doc, _) in enumerate(side)} for side in ordered]
    on_dense = np.asarray([ranks[0].get(doc, missing) for doc in docs])
    on_keyword = np.asarray([ranks[1].get(doc, missing) for doc in docs])
    dominated = (on_dense[:, None] <= on_dense[None, :]) & (on_keyword[:, None] <= on_keyword[None, :])
    dominators = dominated.sum(axis=0) - 1  # each candidate is at least as good as itself
    return [doc for doc, count in zip(docs, dominators) if count < k]


def best_scored(rows: np.ndarray, scores: np.ndarray, depth: int) -> list[tuple[int, float]]:
    """The `depth` best of `rows` by their `scores`, ties by id, as (id, score) best first: what sorting every row
    gives, with only those scoring at least the depth-th best sorted."""
    if depth <= 0:
        return []
    if len(rows) > depth:
        kept = np.flatnonzero(scores >= np.partition(scores, len(scores) - depth)[len(scores) - depth])
        rows, scores = rows[kept], scores[kept]
    order = np.lexsort((rows, -scores))[:depth]
    return list(zip(rows[order].tolist(), scores[order].tolist()))


_NONE = (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64))
"""No row scored: the rows and scores of a search without a keyword side."""


def _scores_of(rows: np.ndarray, scores: np.ndarray, ids: list[int]) -> list[float]:
    """The score of each of `ids` among `rows` (ascending) and their `scores`; 0.0 for one not among them."""
    if not len(rows):
        return [0.0] * len(ids)
    wanted = np.asarray(ids, dtype=np.int64)
    places = np.minimum(np.searchsorted(rows, wanted), len(rows) - 1)
    return np.where(rows[places] == wanted, scores[places], 0.0).tolist()


def _bm25(
    reader: IndexReader, phrases: Phrases, average_length: float, matching: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """BM25 with the global statistics of every document holding a phrase, among `matching` (all when None): the
    rows, ascending, and their scores."""
    if not phrases:
        return _NONE
    return reader.store.keyword.scores_with(phrases, average_length, matching)
