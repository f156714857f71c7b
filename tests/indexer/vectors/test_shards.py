"""A vector index in shards answers as one index of the same vectors: the same top k, filters, ids and vectors."""

from __future__ import annotations

import numpy as np
import pytest
from searchengine.indexer.vectors.shards import ShardedVectorIndex, merge_top_k
from searchengine.indexer.vectors.vector_index import VectorIndex

DIMENSION = 16


def _vectors(count: int, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((count, DIMENSION)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture
def pair() -> tuple[VectorIndex, ShardedVectorIndex]:
    """One Flat index and a 3-shard Flat index of the same 500 vectors, ids 1..500 added in shuffled order."""
    ids = np.random.default_rng(1).permutation(np.arange(1, 501))
    vectors = _vectors(500)
    single, sharded = VectorIndex.create("Flat", DIMENSION), ShardedVectorIndex.create("Flat", DIMENSION, 3)
    for index in (single, sharded):
        for start in range(0, 500, 128):
            index.add(vectors[start : start + 128], ids[start : start + 128])
    return single, sharded


def test_each_id_lives_in_the_shard_its_remainder_names(pair: tuple[VectorIndex, ShardedVectorIndex]) -> None:
    _, sharded = pair
    assert [shard.count for shard in sharded.shards] == [166, 167, 167]
    for number, shard in enumerate(sharded.shards):
        assert set(shard.ids() % 3) == {number}
    assert sharded.count == 500 and sorted(sharded.ids()) == list(range(1, 501))


@pytest.mark.parametrize("k", [1, 10, 200, 600])
def test_search_returns_exactly_what_one_index_returns(pair: tuple[VectorIndex, ShardedVectorIndex], k: int) -> None:
    single, sharded = pair
    queries = _vectors(7, seed=2)
    expected_scores, expected_ids = single.search(queries, k)
    scores, ids = sharded.search(queries, k)
    found = min(k, 500)
    np.testing.assert_array_equal(ids[:, :found], expected_ids[:, :found])
    # scores to float rounding: on the 16-core Xeon of a GPU machine one score in 7 differed in its last bit (FAISS's
    # SIMD kernels need not add a vector's products in the same order in a shard as in one index); never on 2 cores
    np.testing.assert_allclose(scores[:, :found], expected_scores[:, :found], rtol=1e-6, atol=1e-7)
    assert (ids[:, found:] == -1).all()


def test_filters_go_to_each_shard_as_its_own_ids(pair: tuple[VectorIndex, ShardedVectorIndex]) -> None:
    single, sharded = pair
    queries = _vectors(3, seed=3)
    allowed, excluded = np.arange(1, 501, 7), np.array([8, 15, 22, 400])
    for restriction in ({"allowed": allowed}, {"excluded": excluded}, {"allowed": allowed, "excluded": excluded}):
        expected_scores, expected_ids = single.search(queries, 20, **restriction)
        scores, ids = sharded.search(queries, 20, **restriction)
        np.testing.assert_array_equal(ids, expected_ids)
        np.testing.assert_array_equal(scores, expected_scores)
    _, only_one_shard = sharded.search(queries, 5, allowed=np.array([3, 6, 9]))
    assert set(only_one_shard.ravel()) == {3, 6, 9, -1}


def test_reconstruct_remove_and_stored_vectors_route_by_id(pair: tuple[VectorIndex, ShardedVectorIndex]) -> None:
    single, sharded = pair
    some = np.array([500, 1, 2, 3, 250])
    np.testing.assert_array_equal(sharded.reconstruct(some), single.reconstruct(some))
    ids, matrix = sharded.stored_matrix()
    order = np.argsort(ids)
    np.testing.assert_array_equal(matrix[order], single.reconstruct(np.arange(1, 501)))
    assert sharded.remove(np.array([1, 2, 3])) and sharded.count == 497
    assert not {1, 2, 3} & set(sharded.search(_vectors(4, seed=4), 497)[1].ravel())


def test_hnsw_shards_cannot_remove_in_place() -> None:
    sharded = ShardedVectorIndex.create("HNSW8", DIMENSION, 2)
    sharded.add(_vectors(20), np.arange(20))
    assert not sharded.remove(np.array([4, 5]))


def test_shards_that_need_training_are_trained_alike() -> None:
    sharded = ShardedVectorIndex.create("IVF4,Flat", DIMENSION, 2)
    assert sharded.needs_training
    sharded.train(_vectors(400))
    assert not sharded.needs_training
    first, second = (ivf.quantizer.reconstruct_n(0, 4) for ivf in map(_ivf, sharded.shards))
    np.testing.assert_array_equal(first, second)


def _ivf(shard: VectorIndex):  # noqa: ANN202 (a faiss IndexIVF)
    import faiss

    return faiss.extract_index_ivf(shard.index)


def test_merge_orders_by_score_then_id_and_puts_missing_results_last() -> None:
    first = (np.array([[0.9, 0.5, -3.4e38]], dtype=np.float32), np.array([[7, 4, -1]]))
    second = (np.array([[0.5, 0.2, 0.1]], dtype=np.float32), np.array([[2, 9, 11]]))
    scores, ids = merge_top_k([first, second], 4)
    assert ids.tolist() == [[7, 2, 4, 9]]
    assert scores[0].tolist() == pytest.approx([0.9, 0.5, 0.5, 0.2])
    _, short = merge_top_k([(first[0][:, :1], first[1][:, :1]), (np.full((1, 1), -np.inf), np.array([[-1]]))], 2)
    assert short.tolist() == [[7, -1]]
