"""`--index auto` and `--memory-budget`: the size a budget is read from, the memory model of each candidate type, and
the type picked for a corpus size within a budget (indexer/vectors/index_choice.py)."""

from __future__ import annotations

import numpy as np
import pytest
from searchengine.indexer.errors import IndexerError
from searchengine.indexer.vectors.index_choice import (
    EXACT_SEARCH_LIMIT,
    MID_SIZE_DEFAULT,
    TRAINING_POINTS_PER_LIST,
    TRAINING_SAMPLE,
    candidates,
    choice_reason,
    choose_index_type,
    estimated_resident_bytes,
    ivf_lists,
    parse_memory_size,
    recorded_budget,
    training_sample_size,
    type_for_growth,
)
from searchengine.indexer.vectors.memory_parts import index_memory
from searchengine.indexer.vectors.originals import keeps_originals
from searchengine.indexer.vectors.vector_index import VectorIndex

D = 384


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("8GB", 8 * 10**9),
        ("300MB", 300 * 10**6),
        ("300 mb", 300 * 10**6),
        ("1.5GiB", int(1.5 * 2**30)),
        ("512MiB", 512 * 2**20),
        ("2TB", 2 * 10**12),
        ("5000000", 5_000_000),
        (5_000_000, 5_000_000),
        (".5GB", 500 * 10**6),
    ],
)
def test_sizes_are_read_in_decimal_and_binary_units(text: str | int, size: int) -> None:
    assert parse_memory_size(text) == size


@pytest.mark.parametrize("text", ["", "GB", "8XB", "-1GB", "eight GB", "8 G B", "1e9", "nan", "inf", "9" * 400 + "MB"])
def test_a_size_that_is_not_one_is_refused_naming_the_form(text: str) -> None:
    with pytest.raises(IndexerError, match=r"is not a size: write a number and a unit, such as 8GB"):
        parse_memory_size(text)


@pytest.mark.parametrize("text", ["300", "0", "0GB", "999KB"])
def test_a_budget_under_a_megabyte_asks_for_a_unit(text: str) -> None:
    with pytest.raises(IndexerError, match="under 1 MB: give a unit"):
        parse_memory_size(text)


def test_a_boolean_is_not_a_size() -> None:
    with pytest.raises(IndexerError, match="is not a size"):
        parse_memory_size(True)


@pytest.mark.parametrize(
    ("count", "expected"),
    [(None, "Flat"), (0, "Flat"), (EXACT_SEARCH_LIMIT, "Flat"), (EXACT_SEARCH_LIMIT + 1, "HNSW32,SQ8")],
)
def test_without_a_budget_the_choice_follows_the_size_alone(count: int | None, expected: str) -> None:
    assert choose_index_type(count, D) == expected


def test_a_generous_budget_keeps_what_no_budget_picks() -> None:
    """A budget large enough for float32 HNSW32 still picks the default HNSW32,SQ8: giving a budget never holds more
    memory than giving none."""
    assert choose_index_type(10_000, D, 10**12) == "Flat"
    for count in (EXACT_SEARCH_LIMIT + 1, 1_000_000):
        assert choose_index_type(count, D, 10**12) == choose_index_type(count, D) == MID_SIZE_DEFAULT
        model = {c.factory: c.resident_bytes(count) for c in candidates(count, D)}
        assert model[MID_SIZE_DEFAULT] < model["HNSW32"]


def test_a_tighter_budget_steps_down_to_compressed_types_in_order() -> None:
    million = 1_000_000
    model = {c.factory: c.resident_bytes(million) for c in candidates(million, D)}
    assert list(model)[:3] == ["Flat", "HNSW32", "HNSW32,SQ8"]
    hnsw, sq8 = model["HNSW32"], model["HNSW32,SQ8"]
    assert choose_index_type(million, D, hnsw) == "HNSW32,SQ8"
    assert choose_index_type(million, D, sq8) == "HNSW32,SQ8"
    assert choose_index_type(million, D, sq8 - 1) == f"IVF{ivf_lists(million)},PQ96x4fs"
    assert choose_index_type(million, D, 300 * 10**6) == "IVF2048,PQ96x4fs"  # the issue's quick check
    assert model["IVF2048,PQ96x4fs"] < 300 * 10**6 < sq8


def test_a_budget_nothing_fits_is_refused_naming_the_smallest_need() -> None:
    with pytest.raises(IndexerError, match=r"no index type fits 100,000,000 vectors .* raise --memory-budget"):
        choose_index_type(100_000_000, D, 10**9)


def test_the_model_matches_what_each_candidate_holds_once_filled() -> None:
    """The model's bytes a vector against the parts read from FAISS's own structures (codes, graph links, id
    maps) once 3,000 vectors are in, for each candidate type."""
    count, dimension = 3_000, 64
    vectors = np.random.default_rng(0).standard_normal((count, dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for candidate in candidates(count, dimension):
        index = VectorIndex.create(candidate.factory, dimension)
        if index.needs_training:
            index.train(vectors)
        index.add(vectors, np.arange(count))
        held = index_memory(index.index)
        per_vector = (held.codes + held.graph + held.ids) / count
        assert 0.9 * per_vector <= candidate.bytes_per_vector <= 1.1 * per_vector, (candidate.factory, held)
        assert held.fixed <= candidate.fixed_bytes + count, (candidate.factory, held)


def test_ivf_lists_leave_39_training_points_a_list_of_the_sample_they_are_trained_on() -> None:
    assert ivf_lists(5_000) * 39 <= 5_000 or ivf_lists(5_000) == 64
    assert ivf_lists(20_000) == 512  # 4·sqrt(20,000) is 566; 512 lists take 19,968 training points
    for count in (200_000, 1_000_000, 2_000_000):  # TRAINING_SAMPLE vectors train 2,048 lists
        assert ivf_lists(count) == 2048 and 2048 * TRAINING_POINTS_PER_LIST <= TRAINING_SAMPLE
    for count in (200_000, 1_000_000, 10_000_000, 100_000_000):
        lists = ivf_lists(count)
        assert lists * TRAINING_POINTS_PER_LIST <= training_sample_size(f"IVF{lists},PQ96x4fs") <= count


def test_past_the_sample_the_lists_grow_with_the_root_of_the_count() -> None:
    assert ivf_lists(10_000_000) == 8192  # 2·sqrt(10M) is 6,325
    assert ivf_lists(100_000_000) == 16384  # 2·sqrt(100M) is 20,000
    assert training_sample_size("IVF8192_HNSW32,PQ96x4fs") == 8192 * TRAINING_POINTS_PER_LIST
    assert training_sample_size("IVF1024,PQ96x4fs") == training_sample_size("HNSW32,SQ8") == TRAINING_SAMPLE


def test_the_issue_budgets_pick_product_quantization_with_lists_for_the_size() -> None:
    assert choose_index_type(1_000_000, D, 300 * 10**6) == "IVF2048,PQ96x4fs"  # unchanged at 1M
    assert choose_index_type(10_000_000, D, 2 * 10**9) == "IVF8192,PQ96x4fs"  # the issue's 10M within 2 GB


def test_the_default_at_100000_documents_is_hnsw_over_sq8_codes_and_exact_search_stays_for_small_ones() -> None:
    assert choose_index_type(100_000, D) == MID_SIZE_DEFAULT == "HNSW32,SQ8"
    assert keeps_originals(MID_SIZE_DEFAULT)  # its candidates are rescored from the originals
    assert choose_index_type(10_000, D) == "Flat"


def test_a_recorded_budget_makes_a_merge_pick_again_for_the_grown_size() -> None:
    budget = 700 * 10**6
    assert type_for_growth("HNSW32", 300_000, D, budget) == "HNSW32,SQ8"  # what auto picks at 300,000
    assert type_for_growth("HNSW32", 1_000_000, D, budget) == f"IVF{ivf_lists(1_000_000)},PQ96x4fs"
    assert type_for_growth("HNSW32", 10**9, D, budget).endswith("PQ48x4fs")  # nothing fits: the smallest
    assert type_for_growth("IVF64,Flat", 10**9, D, None) == "IVF64,Flat"


@pytest.mark.parametrize("setting", [None, "8GB", True, 12, -5, 1.5e9])
def test_a_setting_that_is_not_a_recorded_budget_changes_nothing(setting: object) -> None:
    assert recorded_budget(setting) is None
    assert type_for_growth("HNSW32", 10**9, D, setting) == "HNSW32"


def test_the_reason_names_the_budget_and_the_estimate() -> None:
    assert f"exact search up to {EXACT_SEARCH_LIMIT:,}" in choice_reason("Flat", 10, D, None)
    reason = choice_reason("IVF2048,PQ96x4fs", 1_000_000, D, 300 * 10**6)
    assert reason.startswith("chosen for 1,000,000 vectors within a memory budget of 300 MB, about ")
    estimate = estimated_resident_bytes("IVF2048,PQ96x4fs", 1_000_000, D)
    assert estimate is not None and f"{estimate / 10**6:.0f} MB resident" in reason
    assert estimated_resident_bytes("IVF64,Flat", 10, D) is None
