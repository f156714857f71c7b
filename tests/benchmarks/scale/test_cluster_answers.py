"""benchmarks/scale/cluster_answers.py's measuring helpers, without Ray: exact search block by block equals one
search over every vector, and recall counts the shared ids."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.scale import cluster_answers


def test_exact_top_over_blocks_equals_one_search_over_every_vector(monkeypatch: pytest.MonkeyPatch) -> None:
    generator = np.random.default_rng(0)
    vectors = generator.standard_normal((103, 8)).astype(np.float32)
    queries = generator.standard_normal((5, 8)).astype(np.float32)
    monkeypatch.setattr(cluster_answers, "BLOCK", 7)  # blocks that end inside the best ten
    expected = np.argsort(-(queries @ vectors.T), axis=1, kind="stable")[:, :10]
    np.testing.assert_array_equal(cluster_answers.exact_top(vectors, queries), expected)


def test_recall_counts_the_shared_ids_whatever_their_order() -> None:
    truth = np.array([[1, 2, 3, 4], [5, 6, 7, 8]])
    assert cluster_answers.recall([[4, 3, 2, 1], [5, 6, 0, 9]], truth) == pytest.approx((1.0 + 0.5) / 2)
