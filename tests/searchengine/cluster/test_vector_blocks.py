"""The vectors a caller gives a cluster build (cluster/vector_blocks.py): one row per document from blocks of any
size, each block checked as it comes, and one error when the counts differ."""

from __future__ import annotations

import numpy as np
import pytest

from searchengine.cluster import ClusterError
from searchengine.cluster.vector_blocks import VectorRows


def test_rows_come_in_order_across_blocks_of_any_size_normalised() -> None:
    given = np.arange(1, 1 + 7 * 3, dtype=np.float32).reshape(7, 3)
    rows = VectorRows([given[:2], given[2:2], given[2:7].tolist()], 3)
    got = np.stack([rows.row(position) for position in range(7)])
    np.testing.assert_allclose(got, given / np.linalg.norm(given, axis=1, keepdims=True), rtol=1e-6)
    rows.finish(7)


def test_fewer_vectors_than_documents_is_one_error() -> None:
    rows = VectorRows([np.ones((2, 3), dtype=np.float32)], 3)
    rows.row(0), rows.row(1)
    with pytest.raises(ClusterError, match="the vectors end after 2 rows but there are more documents"):
        rows.row(2)


def test_more_vectors_than_documents_is_one_error() -> None:
    rows = VectorRows([np.ones((2, 3), dtype=np.float32), np.ones((3, 3), dtype=np.float32)], 3)
    rows.row(0)
    with pytest.raises(ClusterError, match="5 vectors for 1 documents"):
        rows.finish(1)


@pytest.mark.parametrize(
    ("block", "problem"),
    [
        (np.ones((2, 4), dtype=np.float32), "have 4 numbers each, but this index's vectors have 3"),
        (np.array([[1.0, np.inf, 0.0]], dtype=np.float32), "hold a NaN or an infinity"),
        (np.zeros((1, 3), dtype=np.float32), "hold a vector of zeros"),
        (np.ones(3, dtype=np.float32), "must be a list of vectors"),
    ],
)
def test_a_bad_block_is_one_error_naming_it(block: np.ndarray, problem: str) -> None:
    rows = VectorRows([np.ones((1, 3), dtype=np.float32), block], 3)
    rows.row(0)
    with pytest.raises(ClusterError, match=r"the vectors of block 2 \(from document 1\) .*" + problem):
        rows.row(1)
