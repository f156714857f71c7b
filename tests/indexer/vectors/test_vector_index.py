"""The FAISS wrapper: factory strings, ids, training, persistence and search-time settings."""

from __future__ import annotations

import math

import faiss
import numpy as np
import pytest
from searchengine.indexer.errors import IndexerError
from searchengine.indexer.vectors import vector_index
from searchengine.indexer.vectors.index_choice import EXACT_SEARCH_LIMIT
from searchengine.indexer.vectors.vector_index import (
    FAST_SCAN_KERNEL,
    HNSW_EF_CONSTRUCTION,
    HNSW_EF_SEARCH,
    HNSW_EF_SEARCH_LARGE,
    HNSW_EF_SEARCH_MID,
    HNSW_LARGE_GRAPH,
    HNSW_MID_GRAPH,
    IVF_LEAST_PROBED_SHARE,
    IVF_NPROBE_FRACTION,
    IVF_SCANNED_CODES,
    VectorIndex,
    default_factory,
    hnsw_ef_search,
    ivf_nprobe,
)

DIMENSION = 16
OFFSET = 1000
IVF_PQ = "IVF4,PQ4np"
"""IVF4,PQ4 without polysemous training ("np"): plain "IVF4,PQ4" spends ~10 s in FAISS's polysemous training
(a search-time option this project never uses), too slow for a unit test; the index is otherwise the same."""


def _unit_vectors(n: int, dimension: int = DIMENSION, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((n, dimension)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _built(factory: str, vectors: np.ndarray, ids: np.ndarray) -> VectorIndex:
    index = VectorIndex.create(factory, vectors.shape[1])
    if index.needs_training:
        index.train(vectors)
    index.add(vectors, ids)
    return index


@pytest.fixture(scope="module")
def vectors() -> np.ndarray:
    return _unit_vectors(1000)


@pytest.fixture(scope="module")
def ids(vectors: np.ndarray) -> np.ndarray:
    return np.arange(len(vectors), dtype=np.int64) + OFFSET


@pytest.fixture(scope="module")
def built(vectors: np.ndarray, ids: np.ndarray):
    """`built(factory)`: an index of `vectors` under `ids`, made once per module (tests only read it)."""
    cache: dict[str, VectorIndex] = {}

    def get(factory: str) -> VectorIndex:
        if factory not in cache:
            cache[factory] = _built(factory, vectors, ids)
        return cache[factory]

    return get


@pytest.mark.parametrize("factory", ["Flat", "HNSW32", "IVF4,Flat"])
def test_exact_enough_types_find_each_vector_itself(factory: str, built, vectors: np.ndarray, ids: np.ndarray) -> None:
    """Flat is exact; HNSW32 (the default efSearch) and IVF4 on 1000 points find a stored vector as its own top hit."""
    index = built(factory)
    assert index.count == len(vectors)
    assert index.dimension == DIMENSION
    assert index.factory == factory
    scores, found = index.search(vectors[:200], 5)
    assert scores.shape == found.shape == (200, 5)
    np.testing.assert_array_equal(found[:, 0], ids[:200])
    np.testing.assert_allclose(scores[:, 0], 1.0, atol=1e-5)
    # Scores are inner products, sorted best first.
    assert np.all(np.diff(scores, axis=1) <= 1e-6)


def test_flat_scores_are_exact_inner_products(built, vectors: np.ndarray, ids: np.ndarray) -> None:
    index = built("Flat")
    query = _unit_vectors(3, seed=9)
    scores, found = index.search(query, 10)
    expected = query @ vectors.T
    for row in range(3):
        best = np.argsort(-expected[row])[:10]
        np.testing.assert_array_equal(found[row], ids[best])
        np.testing.assert_allclose(scores[row], expected[row, best], atol=1e-5)


def test_ivf_pq_is_trained_and_finds_most_vectors_near_the_top(built, vectors: np.ndarray, ids: np.ndarray) -> None:
    """PQ is lossy: ask only that a stored vector appears in its own top 10 for most queries."""
    index = built(IVF_PQ)
    assert not index.needs_training
    assert index.count == len(vectors)
    _, found = index.search(vectors[:200], 10)
    assert set(np.unique(found)) <= set(ids.tolist())
    recall = np.mean([ids[row] in found[row] for row in range(200)])
    assert recall >= 0.8


@pytest.mark.parametrize("factory", ["Flat", "HNSW32"])
def test_untrained_types_need_no_training(factory: str) -> None:
    assert not VectorIndex.create(factory, DIMENSION).needs_training


@pytest.mark.parametrize("factory", ["IVF4,Flat", "IVF4,PQ4", IVF_PQ])
def test_ivf_types_need_training(factory: str) -> None:
    assert VectorIndex.create(factory, DIMENSION).needs_training


def test_ids_are_the_ids_given_not_positions() -> None:
    """Ids need not be contiguous or start at 0: they are the store's row ids."""
    vectors = _unit_vectors(50)
    ids = np.array([10_000 + 7 * i for i in range(50)], dtype=np.int64)
    index = _built("Flat", vectors, ids)
    _, found = index.search(vectors[[0, 17, 49]], 1)
    np.testing.assert_array_equal(found[:, 0], [10_000, 10_000 + 7 * 17, 10_000 + 7 * 49])


def test_adding_in_batches_keeps_every_id(vectors: np.ndarray, ids: np.ndarray) -> None:
    index = VectorIndex.create("Flat", DIMENSION)
    index.add(vectors[:300], ids[:300])
    index.add(vectors[300:], ids[300:])
    assert index.count == len(vectors)
    _, found = index.search(vectors[[0, 299, 300, 999]], 1)
    np.testing.assert_array_equal(found[:, 0], ids[[0, 299, 300, 999]])


@pytest.mark.parametrize("factory", ["Flat", "HNSW32", "IVF4,Flat", IVF_PQ])
def test_save_load_round_trip_gives_the_same_results(tmp_path, factory: str, built, vectors: np.ndarray) -> None:
    index = built(factory)
    queries = _unit_vectors(20, seed=5)
    before_scores, before_ids = index.search(queries, 8)
    path = tmp_path / "vectors.faiss"
    index.save(path)
    loaded = VectorIndex.load(path, factory)
    assert loaded.factory == factory
    assert loaded.count == len(vectors)
    assert loaded.dimension == DIMENSION
    assert not loaded.needs_training
    after_scores, after_ids = loaded.search(queries, 8)
    np.testing.assert_array_equal(after_ids, before_ids)
    np.testing.assert_allclose(after_scores, before_scores, atol=1e-6)


def _hnsw(index: VectorIndex) -> faiss.IndexHNSW:
    return faiss.downcast_index(faiss.downcast_index(index.index).index)


def test_hnsw_search_settings_survive_save_and_load(tmp_path, built) -> None:
    index = built("HNSW32")
    assert _hnsw(index).hnsw.efSearch == HNSW_EF_SEARCH
    assert _hnsw(index).hnsw.efConstruction == HNSW_EF_CONSTRUCTION
    # FAISS's own defaults differ, so this checks that _tune's values are the ones stored in the file.
    assert HNSW_EF_SEARCH != faiss.IndexHNSWFlat(4, 32).hnsw.efSearch
    path = tmp_path / "hnsw.faiss"
    index.save(path)
    loaded = _hnsw(VectorIndex.load(path, "HNSW32"))
    assert loaded.hnsw.efSearch == HNSW_EF_SEARCH
    assert loaded.hnsw.efConstruction == HNSW_EF_CONSTRUCTION


def test_a_larger_graph_is_stored_with_a_deeper_search(monkeypatch, vectors, ids) -> None:
    assert (
        hnsw_ef_search(HNSW_MID_GRAPH)
        == HNSW_EF_SEARCH
        < HNSW_EF_SEARCH_MID
        == hnsw_ef_search(HNSW_MID_GRAPH + 1)
        == hnsw_ef_search(HNSW_LARGE_GRAPH)
        < HNSW_EF_SEARCH_LARGE
        == hnsw_ef_search(HNSW_LARGE_GRAPH + 1)
    )
    monkeypatch.setattr(vector_index, "HNSW_MID_GRAPH", 300)  # the same rule at sizes a test can build
    monkeypatch.setattr(vector_index, "HNSW_LARGE_GRAPH", 600)
    for factory in ("HNSW32", "HNSW32,SQ8"):
        index = VectorIndex.create(factory, DIMENSION)
        if index.needs_training:
            index.train(vectors)
        index.add(vectors[:300], ids[:300])
        assert _hnsw(index).hnsw.efSearch == HNSW_EF_SEARCH
        index.add(vectors[300:600], ids[300:600])
        assert _hnsw(index).hnsw.efSearch == HNSW_EF_SEARCH_MID
        index.add(vectors[600:], ids[600:])
        assert _hnsw(index).hnsw.efSearch == HNSW_EF_SEARCH_LARGE
        _, found = index.search(vectors[590:610], 1)
        np.testing.assert_array_equal(found[:, 0], ids[590:610])


def test_an_hnsw_file_written_with_older_settings_keeps_them_and_answers(tmp_path, vectors, ids) -> None:
    """A segment written before the HNSW defaults changed (efSearch 512, efConstruction 80, as main wrote it) keeps
    the settings it was written with: its graph was built for them, so it answers as it did."""
    older = faiss.index_factory(DIMENSION, "IDMap2,HNSW32", faiss.METRIC_INNER_PRODUCT)
    _hnsw(VectorIndex(older, "HNSW32")).hnsw.efSearch = 512
    _hnsw(VectorIndex(older, "HNSW32")).hnsw.efConstruction = 80
    older.add_with_ids(vectors, ids)
    path = tmp_path / "older.faiss"
    faiss.write_index(older, str(path))
    loaded = VectorIndex.load(path, "HNSW32", mapped=True)
    assert (_hnsw(loaded).hnsw.efSearch, _hnsw(loaded).hnsw.efConstruction) == (512, 80)
    assert (HNSW_EF_SEARCH, HNSW_EF_CONSTRUCTION) != (512, 80)
    _, found = loaded.search(vectors[:50], 1)
    np.testing.assert_array_equal(found[:, 0], ids[:50])


def test_ivf_nprobe_survives_save_and_load(tmp_path) -> None:
    """IVF64 gets nprobe 64 / IVF_NPROBE_FRACTION (FAISS's default is 1)."""
    vectors = _unit_vectors(2000, seed=2)
    index = _built("IVF64,Flat", vectors, np.arange(2000))
    expected = 64 // IVF_NPROBE_FRACTION
    assert expected > 1
    assert faiss.extract_index_ivf(index.index).nprobe == expected
    path = tmp_path / "ivf.faiss"
    index.save(path)
    loaded = VectorIndex.load(path, "IVF64,Flat")
    assert faiss.extract_index_ivf(loaded.index).nprobe == expected


def test_ivf_nprobe_probes_half_the_lists_up_to_a_bound_on_the_codes_scanned() -> None:
    assert ivf_nprobe(2048, 1_000_000) == 1024  # the 1M check's half: 500,000 codes, under the bound
    assert ivf_nprobe(2048, 2_000_000) == 1024  # the 2M check's half: 1M codes, under the bound
    # at 10M half the lists would be 5M codes: the bound probes a fifth of them
    assert ivf_nprobe(8192, 10_000_000) == math.ceil(IVF_SCANNED_CODES * 8192 / 10_000_000) == 1639 < 8192 // 2
    # past 10M the bound alone would probe less than a fifth; at least IVF_LEAST_PROBED_SHARE are probed
    assert math.ceil(IVF_SCANNED_CODES * 8192 / 20_000_000) == 820
    assert ivf_nprobe(8192, 20_000_000) == math.ceil(IVF_LEAST_PROBED_SHARE * 8192) == 1639
    assert ivf_nprobe(64, 0) == ivf_nprobe(64, 10) == 64 // IVF_NPROBE_FRACTION
    vectors = _unit_vectors(2000, seed=3)
    index = _built("IVF64,Flat", vectors, np.arange(2000))
    assert faiss.extract_index_ivf(index.index).nprobe == ivf_nprobe(64, 2000)


def test_a_trained_empty_index_shipped_as_bytes_adds_and_removes_as_the_original() -> None:
    """What a Ray build sends its workers: the trained quantiser, nprobe and the id map travel with the bytes."""
    vectors = _unit_vectors(2000, seed=3)
    trained = VectorIndex.create("IVF64,Flat", DIMENSION)
    trained.train(vectors)
    copies = [VectorIndex.from_bytes(trained.to_bytes(), "IVF64,Flat") for _ in range(2)]
    for copy, part in zip(copies, (slice(0, 1000), slice(1000, 2000))):
        copy.add(vectors[part], np.arange(2000)[part])
    trained.add(vectors, np.arange(2000))
    for copy in copies:
        assert faiss.extract_index_ivf(copy.index).nprobe == 64 // IVF_NPROBE_FRACTION
    np.testing.assert_array_equal(
        copies[1].reconstruct(np.arange(1000, 1010)), trained.reconstruct(np.arange(1000, 1010))
    )
    assert (copies[0].search(vectors[:5], 1)[1][:, 0] == np.arange(5)).all()  # each finds itself
    assert copies[0].remove(np.array([3])) and 3 not in copies[0].ids()


def test_fast_scan_ivf_searches_with_the_per_query_kernel_after_save_load_and_bytes(tmp_path) -> None:
    """The kernel is set on every index created, and again on every one read or shipped as bytes, so that a segment
    written before it was chosen (FAISS's automatic choice, 0) searches the same way."""
    vectors = _unit_vectors(2000, seed=4)
    index = _built("IVF16,PQ8x4fs", vectors, np.arange(2000))

    def kernel(made: VectorIndex) -> int:
        return faiss.downcast_index(faiss.extract_index_ivf(made.index)).implem

    path = tmp_path / "fast.faiss"
    index.save(path)
    loaded = VectorIndex.load(path, "IVF16,PQ8x4fs", mapped=True)
    shipped = VectorIndex.from_bytes(index.to_bytes(), "IVF16,PQ8x4fs")
    assert kernel(index) == kernel(loaded) == kernel(shipped) == FAST_SCAN_KERNEL
    older = tmp_path / "older.faiss"
    fast = faiss.downcast_index(faiss.extract_index_ivf(index.index))
    fast.implem = 0  # as written before the kernel was chosen
    index.save(older)
    assert kernel(VectorIndex.load(older, "IVF16,PQ8x4fs", mapped=True)) == FAST_SCAN_KERNEL
    np.testing.assert_array_equal(loaded.search(vectors[:5], 3)[1], index.search(vectors[:5], 3)[1])


def test_small_ivf_probes_at_least_one_list() -> None:
    assert faiss.extract_index_ivf(VectorIndex.create("IVF1,Flat", DIMENSION).index).nprobe == 1


@pytest.mark.parametrize("factory", ["NotAnIndex", "IVF,Flat", "HNSWxyz", "PQ5"])
def test_invalid_factory_string_raises_indexer_error_naming_it(factory: str) -> None:
    """PQ5 is a valid string but cannot split dimension 16 into 5 sub-vectors."""
    with pytest.raises(IndexerError) as error:
        VectorIndex.create(factory, DIMENSION)
    assert repr(factory) in str(error.value)


def test_a_type_faiss_cannot_add_to_is_an_indexer_error_naming_it() -> None:
    """An NSG graph needs more than 100 vectors to build."""
    with pytest.raises(IndexerError, match=r"FAISS cannot add 50 vectors to index type 'NSG32': .*smaller than 100"):
        VectorIndex.create("NSG32", DIMENSION).add(_unit_vectors(50), np.arange(50))


def test_training_ivf_with_fewer_points_than_lists_raises_indexer_error() -> None:
    index = VectorIndex.create("IVF4,Flat", DIMENSION)
    with pytest.raises(IndexerError) as error:
        index.train(_unit_vectors(2))
    assert str(error.value) == (
        "IVF4 needs at least 39×4 training vectors (and never fewer than 4); this corpus has 2: use Flat or IVF1"
    )
    assert index.needs_training


@pytest.mark.parametrize(
    "damage",
    [
        lambda good: good[: len(good) // 2],
        lambda good: good[:10],
        lambda good: b"",
        lambda good: b"\x00garbage\xff" * 100,
    ],
    ids=["half", "header-only", "empty", "garbage"],
)
def test_load_of_a_damaged_file_raises_indexer_error(tmp_path, damage, built) -> None:
    path = tmp_path / "vectors.faiss"
    built("Flat").save(path)
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(IndexerError, match="corrupt or truncated"):
        VectorIndex.load(path, "Flat")


def test_load_of_a_missing_file_raises_indexer_error(tmp_path) -> None:
    with pytest.raises(IndexerError):
        VectorIndex.load(tmp_path / "absent.faiss", "Flat")


@pytest.mark.parametrize(
    ("count", "expected"),
    [
        (None, "Flat"),
        (0, "Flat"),
        (1, "Flat"),
        (10_000, "Flat"),
        (EXACT_SEARCH_LIMIT, "Flat"),
        (EXACT_SEARCH_LIMIT + 1, "HNSW32,SQ8"),
        (10 * EXACT_SEARCH_LIMIT, "HNSW32,SQ8"),
    ],
)
def test_default_factory(count: int | None, expected: str) -> None:
    assert default_factory(count) == expected


@pytest.mark.parametrize("factory", ["Flat", "HNSW32"])
def test_search_for_more_results_than_vectors_pads_with_minus_one(factory: str) -> None:
    vectors = _unit_vectors(3)
    index = _built(factory, vectors, np.array([7, 8, 9]))
    scores, found = index.search(vectors[:1], 6)
    assert found.shape == (1, 6)
    assert found[0, 0] == 7
    assert sorted(found[0, :3].tolist()) == [7, 8, 9]
    np.testing.assert_array_equal(found[0, 3:], [-1, -1, -1])


def test_search_of_an_empty_index_returns_only_minus_one() -> None:
    index = VectorIndex.create("Flat", DIMENSION)
    assert index.count == 0
    _, found = index.search(_unit_vectors(2), 3)
    np.testing.assert_array_equal(found, -np.ones((2, 3), dtype=np.int64))


def _brute_force(vectors: np.ndarray, ids: np.ndarray, query: np.ndarray, keep: np.ndarray, k: int) -> list[int]:
    """The k best ids among `keep` by inner product, computed by numpy."""
    scores = np.where(keep, vectors @ query, -np.inf)
    return [int(ids[i]) for i in np.argsort(-scores, kind="stable")[:k]]


@pytest.mark.parametrize("spacing", [1, 10**9], ids=["dense ids (a bitmap)", "sparse ids (a hash set)"])
def test_filtered_search_returns_exactly_the_best_allowed_and_never_an_excluded_id(spacing: int) -> None:
    vectors = _unit_vectors(300, seed=3)
    ids = np.arange(len(vectors), dtype=np.int64) * spacing
    index = _built("Flat", vectors, ids)
    query = vectors[150]
    # Allowed: two ids near the start, so a selector that read past its bitmap would let later ids through.
    allowed, excluded = ids[[3, 9, 40, 41, 42, 200]], ids[[41, 150]]
    for allow, exclude in ((allowed, None), (None, excluded), (allowed, excluded)):
        keep = np.ones(len(ids), dtype=bool) if allow is None else np.isin(ids, allow)
        keep &= True if exclude is None else ~np.isin(ids, exclude)
        _, found = index.search(query[None, :], 4, allow, exclude)
        assert found[0].tolist() == _brute_force(vectors, ids, query, keep, 4)
