"""Fusion of the dense and keyword candidate lists: reciprocal rank fusion and min-max normalised scores."""

from __future__ import annotations

import pytest

from searchengine import SearchEngineError
from searchengine.engine.fusion import Fusion, fuse, min_max

DENSE = [(1, 0.9), (2, 0.8), (4, 0.1)]
KEYWORD = [(2, 14.0), (3, 9.0)]


def test_rrf_adds_each_lists_weighted_reciprocal_rank() -> None:
    fused = dict(fuse(DENSE, KEYWORD, Fusion("rrf", dense_weight=0.5, rrf_k=60)))
    assert fused == pytest.approx({1: 0.5 / 61, 2: 0.5 / 62 + 0.5 / 61, 3: 0.5 / 62, 4: 0.5 / 63})


def test_rrf_ranks_a_document_both_lists_hold_first_and_reads_only_ranks() -> None:
    fusion = Fusion("rrf", rrf_k=60)
    assert [doc for doc, _ in fuse(DENSE, KEYWORD, fusion)] == [2, 1, 3, 4]
    rescaled = [(doc, score * 1000 - 5) for doc, score in KEYWORD]
    assert fuse(DENSE, rescaled, fusion) == fuse(DENSE, KEYWORD, fusion)


def test_rrf_k_sets_how_much_the_first_rank_outweighs_later_ones() -> None:
    dense, keyword = [(1, 0.9), (5, 0.8), (6, 0.7), (2, 0.6)], [(3, 7.0), (7, 6.0), (8, 5.0), (2, 4.0)]
    assert [doc for doc, _ in fuse(dense, keyword, Fusion("rrf", rrf_k=1))][:2] == [1, 3]  # first ranks dominate
    assert [doc for doc, _ in fuse(dense, keyword, Fusion("rrf", rrf_k=100))][0] == 2  # agreement dominates


def test_minmax_scales_each_list_to_0_1_and_weighs_the_sides() -> None:
    fused = dict(fuse(DENSE, KEYWORD, Fusion("minmax", dense_weight=0.25)))
    dense_part = {1: 1.0, 2: 0.7 / 0.8, 4: 0.0}
    keyword_part = {2: 1.0, 3: 0.0}
    expected = {doc: 0.25 * dense_part.get(doc, 0.0) + 0.75 * keyword_part.get(doc, 0.0) for doc in (1, 2, 3, 4)}
    assert fused == pytest.approx(expected)


def test_min_max_of_equal_scores_a_single_hit_and_no_hit() -> None:
    assert min_max([(5, 0.3), (6, 0.3)]) == {5: 1.0, 6: 1.0}
    assert min_max([(7, -2.0)]) == {7: 1.0}
    assert min_max([]) == {}


def test_one_empty_side_leaves_the_other_sides_order() -> None:
    for fusion in (Fusion("rrf"), Fusion("minmax")):
        assert [doc for doc, _ in fuse(DENSE, [], fusion)] == [1, 2, 4]
        assert [doc for doc, _ in fuse([], KEYWORD, fusion)] == [2, 3]
    assert fuse([], [], Fusion()) == []


def test_a_side_of_weight_zero_only_breaks_ties() -> None:
    fused = fuse(DENSE, KEYWORD, Fusion("minmax", dense_weight=1.0))
    assert [doc for doc, _ in fused] == [1, 2, 3, 4]  # 3 and 4 score 0; 3 is 2nd on its side, 4 only 3rd
    assert [score for _, score in fused][2:] == [0.0, 0.0]


def test_ties_go_to_the_better_rank_on_either_side_then_the_smaller_id() -> None:
    fused = fuse([(8, 0.5), (9, 0.4)], [(9, 3.0), (8, 2.0)], Fusion("rrf"))
    assert [doc for doc, _ in fused] == [8, 9] and fused[0][1] == fused[1][1]


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"method": "sum"}, "unknown fusion 'sum'"),
        ({"dense_weight": 1.5}, "between 0 and 1"),
        ({"rrf_k": -1}, "0 or more"),
        ({"depth": 0}, "at least 1"),
    ],
)
def test_bad_settings_are_refused(settings: dict, message: str) -> None:
    with pytest.raises(SearchEngineError, match=message):
        Fusion(**settings)


def test_describe_names_the_settings() -> None:
    assert Fusion("rrf", 0.5, 60, 100).describe() == "rrf k=60, dense weight 0.5, depth 100"
    assert Fusion("minmax", 0.3, depth=50).describe() == "minmax, dense weight 0.3, depth 50"


def test_bounded_keeps_each_side_on_its_fixed_scale_whatever_the_lists_hold() -> None:
    fused = dict(fuse(DENSE, KEYWORD, Fusion("bounded", dense_weight=0.25), keyword_bound=28.0))
    dense_part = {1: 0.9, 2: 0.8, 4: 0.1}  # the cosine itself: the best of the list is not raised to 1
    keyword_part = {2: 14.0 / 28.0, 3: 9.0 / 28.0}  # BM25 over the query's bound, not over the list's best
    expected = {doc: 0.25 * dense_part.get(doc, 0.0) + 0.75 * keyword_part.get(doc, 0.0) for doc in (1, 2, 3, 4)}
    assert fused == pytest.approx(expected)


def test_bounded_scores_stay_in_0_1_and_a_poor_list_stays_poor() -> None:
    weak_dense, weak_keyword = [(1, 0.21), (2, -0.3)], [(3, 0.4)]
    fused = dict(fuse(weak_dense, weak_keyword, Fusion("bounded"), keyword_bound=20.0))
    assert fused == pytest.approx({1: 0.105, 2: 0.0, 3: 0.01})  # a negative cosine counts 0
    assert max(fused.values()) < 0.5 <= max(score for _, score in fuse(weak_dense, weak_keyword, Fusion("minmax")))
    assert dict(fuse([], [(3, 4.0)], Fusion("bounded"), keyword_bound=0.0)) == {3: 0.0}  # no searchable word
    perfect = dict(fuse([(1, 1.0)], [(1, 30.0)], Fusion("bounded"), keyword_bound=30.0))
    assert perfect == pytest.approx({1: 1.0})
