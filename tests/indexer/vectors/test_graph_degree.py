"""Graphs too sparse for FAISS are refused before FAISS can crash or hang the process
(indexer/vectors/graph_degree.py)."""

from __future__ import annotations

import numpy as np
import pytest
from searchengine.indexer.errors import IndexerError
from searchengine.indexer.vectors.graph_degree import check_graph_degree
from searchengine.indexer.vectors.vector_index import VectorIndex, check_trainable

DIMENSION = 16


@pytest.mark.parametrize("factory", ["HNSW0", "HNSW1", "HNSW1,SQ8", "IVF4_HNSW1,Flat", "NSG1", "NSG3"])
def test_a_graph_too_sparse_for_faiss_is_refused_when_made_and_before_embedding(factory: str) -> None:
    """FAISS aborts, crashes or hangs adding vectors to these."""
    with pytest.raises(IndexerError, match=r"neighbours, which FAISS cannot build: use at least (HNSW2|NSG4)"):
        VectorIndex.create(factory, DIMENSION)
    with pytest.raises(IndexerError, match=repr(factory)):
        check_trainable(factory, 1_000)


@pytest.mark.parametrize("factory", ["HNSW2", "NSG4", "HNSW32,SQ8", "IVF4_HNSW32,Flat", "Flat"])
def test_graphs_faiss_builds_pass(factory: str) -> None:
    check_graph_degree(factory)


@pytest.mark.parametrize("factory", ["HNSW2", "NSG4"])
def test_the_sparsest_graphs_allowed_build_and_search(factory: str) -> None:
    vectors = np.random.default_rng(0).standard_normal((300, DIMENSION)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = VectorIndex.create(factory, DIMENSION)
    index.add(vectors, np.arange(300))
    assert index.search(vectors[:1], 1)[1][0, 0] == 0
