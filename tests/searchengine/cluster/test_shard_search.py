"""A shard's best keyword candidates (shard_search.best_scored): the same list, ties and all, as sorting every scored
row by score, then id."""

from __future__ import annotations

import numpy as np

from searchengine.cluster.shard_search import best_scored


def test_best_scored_is_every_row_sorted_then_cut() -> None:
    generator = np.random.default_rng(7)
    for size, depth, distinct in [(0, 10, 1), (5, 10, 3), (1000, 10, 4), (1000, 100, 50), (300, 1, 2), (50, 50, 5)]:
        rows = np.sort(generator.choice(100_000, size=size, replace=False)).astype(np.int64)
        scores = generator.integers(0, distinct, size=size) / 7.0  # few distinct scores: ties across the cut
        expected = sorted(zip(rows.tolist(), scores.tolist()), key=lambda item: (-item[1], item[0]))[:depth]
        assert best_scored(rows, scores, depth) == expected, (size, depth)
    assert best_scored(np.arange(3), np.ones(3), 0) == []
