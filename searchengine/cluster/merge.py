"""The merge of a cluster search: the shards' term statistics summed into one keyword query (the words kept by the
keyword query's rules with the summed counts, their IDFs, the bound of bounded fusion), then the shards' candidates
joined into the ranking one index of every shard's documents gives (engine.search, engine.hybrid): the best k by
cosine, by BM25 over its bound, or by the fusion of each side's best `depth` over all shards."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from operator import itemgetter

from searchengine.cluster.routing import global_id
from searchengine.cluster.shard_search import Phrases, ShardCandidates
from searchengine.engine.fusion import Fusion, bounded_keyword, fuse
from searchengine.engine.search import Scored
from searchengine.indexer.query.global_bm25 import TermStatistics
from searchengine.indexer.query.keyword_query import BM25_K1, fts5_idf, keyword_terms, select_terms


@dataclass(frozen=True)
class KeywordPlan:
    """One query's keyword side for every shard: its phrases with global IDFs, and the most BM25 any document can
    reach (bounded fusion's scale), both as one index of all the shards' documents has them."""

    phrases: Phrases
    bound: float


def keyword_plan(statistics: TermStatistics, text: str) -> KeywordPlan:
    """The keyword query of `text` over the summed `statistics` (keyword_query's word rules, FTS5's IDF)."""
    counts = keyword_terms(text)
    if not counts:
        return KeywordPlan([], 0.0)
    terms = select_terms(counts, statistics.held(list(counts)), statistics.documents)
    phrases = [(statistics.tokens_of.get(t.word, ()), statistics.idf(t.word)) for t in terms for _ in range(t.repeats)]
    bound = sum(t.repeats * fts5_idf(statistics.documents, t.held) * (BM25_K1 + 1.0) for t in terms)
    return KeywordPlan(phrases, bound)


def summed(statistics: Sequence[TermStatistics]) -> TermStatistics:
    """The shards' statistics as one index of all their documents has them."""
    total = TermStatistics()
    for part in statistics:
        total = total + part
    return total


def merged_ranking(
    sides: tuple[str, ...],
    answers: dict[int, ShardCandidates],
    shards: int,
    k: int,
    fusion: Fusion,
    plan: KeywordPlan | None,
    searchable: int,
) -> list[tuple[int, Scored]]:
    """One query's ranking over the shards that answered (`answers`, by shard), as (shard, Scored with the
    shard's own id) best first. Only each side's (id, score) lists are joined; a hit's span and its score on the
    side that did not find it are read from its own shard's answer, for the k kept alone."""
    dense = [(global_id(doc, shard, shards), score) for shard, answer in answers.items() for doc, score in answer.dense]
    keyword = [
        (global_id(doc, shard, shards), score) for shard, answer in answers.items() for doc, score in answer.keyword
    ]
    # Best first, ties by id: sorted by id, then stably by score, with no tuple key built per pair (0.6 times the
    # time of one sort by (-score, id) for 400 pairs).
    for side in (dense, keyword):
        side.sort(key=itemgetter(0))
        side.sort(key=itemgetter(1), reverse=True)
    bound = plan.bound if plan is not None else 0.0

    def shard_answer(doc: int) -> tuple[ShardCandidates, int]:
        """The answer of `doc`'s shard and `doc`'s id there (shard_of_id)."""
        return answers[doc % shards], doc // shards

    if sides == ("dense",):
        ranked = [
            Scored(doc, score, ("dense",), dense_score=score, span=answers[doc % shards].spans.get(doc // shards))
            for doc, score in dense[:k]
        ]
    elif sides == ("keyword",):
        shares = bounded_keyword(keyword[:k], bound if keyword else 0.0)
        ranked = [Scored(doc, shares[doc], ("keyword",), keyword_score=score) for doc, score in keyword[:k]]
    else:
        depth = max(k, fusion.depth)
        dense_side = dict(dense[: min(depth, searchable)])
        keyword_side = keyword[:depth]
        keyword_found = dict(keyword_side)
        side_bound = bound if keyword_side and fusion.method == "bounded" else 0.0
        fused = fuse(list(dense_side.items()), keyword_side, fusion, side_bound)[:k]
        ranked = []
        for doc, score in fused:
            answer, local = shard_answer(doc)
            ranked.append(
                Scored(
                    doc,
                    score,
                    tuple(side for side, found in (("dense", dense_side), ("keyword", keyword_found)) if doc in found),
                    dense_score=dense_side.get(doc, answer.cosines.get(local)),
                    keyword_score=keyword_found.get(doc, answer.bm25.get(local, 0.0)),
                    span=answer.spans.get(local) if doc in dense_side else None,
                )
            )
    return [(doc.id % shards, _local(doc, shards)) for doc in ranked]


def _local(scored: Scored, shards: int) -> Scored:
    """`scored` with its shard's own id (the cluster id's quotient)."""
    return replace(scored, id=scored.id // shards)
