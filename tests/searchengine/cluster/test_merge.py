"""The merge of a cluster search without Ray: each shard sends its candidates with the documents of those that can
still reach the top k (shard_search.reachable), and every document the merge ranks in the top k is among them,
whatever the fusion, the scores' ties and the way the documents fall into shards."""

from __future__ import annotations

import random

import pytest

from searchengine.cluster.merge import KeywordPlan, merged_ranking
from searchengine.cluster.shard_search import ShardCandidates, reachable
from searchengine.engine.fusion import Fusion


def _shard_answers(rng: random.Random, shards: int, depth: int) -> dict[int, ShardCandidates]:
    """Random candidates per shard: ranked lists of both sides as a shard returns them (its best `depth`), with
    scores drawn from few values so that ties are common."""
    answers = {}
    for shard in range(shards):
        documents = rng.randint(0, 3 * depth)
        cosines = {doc: rng.choice([0.1, 0.2, 0.3, 0.5, 0.8, rng.random()]) for doc in range(documents)}
        held = [doc for doc in range(documents) if rng.random() < 0.6]
        bm25 = {doc: rng.choice([1.0, 2.0, 4.0, rng.uniform(0, 8)]) for doc in held}
        best = lambda scores: sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:depth]  # noqa: E731
        dense, keyword = best(cosines), best(bm25)
        candidates = {doc for doc, _ in dense} | {doc for doc, _ in keyword}
        answers[shard] = ShardCandidates(
            dense,
            keyword,
            {doc: None for doc, _ in dense},
            {doc: cosines[doc] for doc in candidates},
            {doc: bm25.get(doc, 0.0) for doc in candidates},
        )
    return answers


@pytest.mark.parametrize("method", ["bounded", "rrf", "minmax"])
def test_every_document_the_merge_keeps_is_one_its_shard_sent(method: str) -> None:
    rng = random.Random(method)
    for _ in range(150):
        shards, depth = rng.randint(1, 4), rng.randint(1, 12)
        k = rng.randint(1, depth)
        fusion = Fusion(method, dense_weight=rng.choice([0.0, 0.3, 0.5, 1.0]), depth=depth)
        answers = _shard_answers(rng, shards, depth)
        searchable = sum(len(answer.cosines) for answer in answers.values())
        sent = {shard: set(reachable(answer.dense, answer.keyword, k)) for shard, answer in answers.items()}
        ranking = merged_ranking(("dense", "keyword"), answers, shards, k, fusion, KeywordPlan([], 8.0), searchable)
        assert all(scored.id in sent[shard] for shard, scored in ranking)
        for sides in (("dense",), ("keyword",)):  # one side: the shard's first k of that side
            ranking = merged_ranking(sides, answers, shards, k, fusion, KeywordPlan([], 8.0), searchable)
            assert all(scored.id in sent[shard] for shard, scored in ranking)


def test_a_candidate_that_k_others_beat_on_both_sides_is_not_sent() -> None:
    dense = [(1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6)]
    keyword = [(4, 9.0), (1, 5.0), (2, 4.0), (3, 3.0)]
    assert reachable(dense, keyword, 2) == [1, 2, 4]  # 3: 1 and 2 beat it on both sides
    assert reachable(dense, keyword, 1) == [1, 4]
    assert reachable(dense, [], 2) == [1, 2]
