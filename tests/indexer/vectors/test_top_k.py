"""The k best of several searches' results: by score, ties by id, missing results last."""

from __future__ import annotations

import numpy as np
import pytest
from searchengine.indexer.vectors.top_k import merge_found, merge_top_k


def test_merge_orders_by_score_then_id_and_puts_missing_results_last() -> None:
    first = (np.array([[0.9, 0.5, -3.4e38]], dtype=np.float32), np.array([[7, 4, -1]]))
    second = (np.array([[0.5, 0.2, 0.1]], dtype=np.float32), np.array([[2, 9, 11]]))
    scores, ids = merge_top_k([first, second], 4)
    assert ids.tolist() == [[7, 2, 4, 9]]
    assert scores[0].tolist() == pytest.approx([0.9, 0.5, 0.5, 0.2])
    _, short = merge_top_k([(first[0][:, :1], first[1][:, :1]), (np.full((1, 1), -np.inf), np.array([[-1]]))], 2)
    assert short.tolist() == [[7, -1]]


def test_no_part_searched_is_no_hit_for_every_query() -> None:
    scores, ids = merge_found([None, None], 3, 2)
    assert ids.tolist() == [[-1, -1, -1]] * 2 and np.isneginf(scores).all()
