"""A build in parts (`--shards N`): each id in the part its remainder names, trained alike, and, once committed, N
segments that answer exactly as one index of the same vectors does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.vectors.build_parts import BuildParts, create_vectors
from searchengine.indexer.vectors.vector_index import VectorIndex

from tests.indexer.small_index import DIMENSION, build_small_index, unit_vectors
from tests.indexer.vectors.test_originals import segments_of


def _parts_of(ids: np.ndarray, parts: int) -> BuildParts:
    built = create_vectors("Flat", DIMENSION, parts)
    vectors = unit_vectors(len(ids), 0)
    for start in range(0, len(ids), 128):
        built.add(vectors[start : start + 128], ids[start : start + 128])
    return built


def test_each_id_lives_in_the_part_its_remainder_names() -> None:
    built = _parts_of(np.random.default_rng(1).permutation(np.arange(1, 501)), 3)
    assert [part.count for part in built.parts] == [166, 167, 167]
    for number, part in enumerate(built.parts):
        assert set(part.ids() % 3) == {number}
    assert built.count == 500 and built.factory == "Flat" and built.dimension == DIMENSION


def test_one_part_is_the_one_index() -> None:
    built = _parts_of(np.arange(40), 1)
    assert len(built.parts) == 1 and built.first.count == 40
    assert built.remove(np.array([3, 4])) and built.first.count == 38


@pytest.mark.parametrize(("k", "allowed"), [(1, None), (10, np.arange(0, 240, 2)), (300, None)])
def test_three_parts_commit_as_three_segments_that_answer_as_one_index(
    tmp_path: Path, k: int, allowed: np.ndarray | None
) -> None:
    build_small_index(tmp_path / "one", 240)
    build_small_index(tmp_path / "three", 240, shards=3)
    one, three = segments_of(IndexDirectory(tmp_path / "one")), segments_of(IndexDirectory(tmp_path / "three"))
    assert len(one.segments) == 1 and len(three.segments) == 3
    assert [set(segment.ids % 3) for segment in three.segments] == [{0}, {1}, {2}]
    queries = unit_vectors(7, 2)
    expected_scores, expected_ids = one.search(queries, k, allowed=allowed)
    scores, ids = three.search(queries, k, allowed=allowed)
    np.testing.assert_array_equal(ids, expected_ids)
    np.testing.assert_allclose(scores, expected_scores, rtol=1e-6, atol=1e-7)


def test_removal_goes_to_the_part_holding_each_id() -> None:
    built = _parts_of(np.arange(30), 3)
    assert built.remove(np.array([0, 1, 2, 5])) and built.count == 26
    assert [set(part.ids()) & {0, 1, 2, 5} for part in built.parts] == [set(), set(), set()]


def test_hnsw_parts_cannot_remove_in_place() -> None:
    built = create_vectors("HNSW8", DIMENSION, 2)
    built.add(unit_vectors(20, 0), np.arange(20))
    assert not built.remove(np.array([4, 5]))


def test_parts_that_need_training_are_trained_alike() -> None:
    built = create_vectors("IVF4,Flat", DIMENSION, 2)
    assert built.needs_training
    built.train(unit_vectors(400, 3))
    assert not built.needs_training
    first, second = (_ivf(part).quantizer.reconstruct_n(0, 4) for part in built.parts)
    np.testing.assert_array_equal(first, second)


def _ivf(part: VectorIndex):  # noqa: ANN202 (a faiss IndexIVF)
    import faiss

    return faiss.extract_index_ivf(part.index)
