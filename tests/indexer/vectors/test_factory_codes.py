"""What a FAISS factory string stores (indexer/vectors/factory_codes.py), checked against what FAISS itself builds
from it: the vectors a trained index of that type gives back, on real MiniLM vectors (STS-B test sentences,
tests/fixtures/make_stsb_vectors.py) cut to 32 dimensions so that OPQ trains in a fraction of a second."""

from __future__ import annotations

from pathlib import Path

import faiss
import numpy as np
import pytest
from searchengine.indexer.vectors.factory_codes import is_product_quantized, stores_approximate_vectors

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "stsb_vectors.npy"
DIMENSION = 32
EXACT = 1e-8
"""Mean squared error below which an index gave back the vectors added (an OPQ rotation's is about 1e-12)."""


@pytest.fixture(scope="module")
def vectors() -> np.ndarray:
    loaded = np.load(FIXTURE).astype(np.float32)[:1_000, :DIMENSION]
    return loaded / np.linalg.norm(loaded, axis=1, keepdims=True)


@pytest.mark.parametrize(
    "factory",
    ["Flat", "HNSW32", "IVF16,Flat", "OPQ8,Flat", "OPQ8,HNSW32", "OPQ8,HNSW32,Flat", "OPQ8,IVF16,Flat",
     "OPQ8,IVF16_HNSW32,Flat", "OPQ8_32,Flat", "OPQ8_16,Flat", "OPQ8_16,IVF16,Flat", "PCA16,Flat", "SQ8",
     "HNSW32,SQ8", "IVF16,SQ8", "PQ8x4", "PQ8x4fs", "HNSW32_PQ8x4", "IVF16,PQ8x4", "OPQ8,IVF16,PQ8x4"],
)  # fmt: skip
def test_stored_vectors_are_approximate_exactly_where_faiss_gives_back_other_vectors(
    vectors: np.ndarray, factory: str
) -> None:
    index = faiss.index_factory(DIMENSION, factory, faiss.METRIC_INNER_PRODUCT)
    index.train(vectors)
    index.add(vectors)
    error = float(((index.reconstruct_n(0, len(vectors)) - vectors) ** 2).sum(axis=1).mean())
    approximate = error > EXACT
    # a projection onto as many dimensions as the vectors have loses nothing, but the string cannot tell
    assert stores_approximate_vectors(factory) == (approximate or factory == "OPQ8_32,Flat"), error


def test_an_opq_rotation_is_not_a_compression_but_opq_before_product_quantization_is() -> None:
    for exact in ("Flat", "HNSW32", "OPQ16,Flat", "OPQ16,HNSW32", "OPQ16,IVF256,Flat", "OPQ32,IVF1024_HNSW32,Flat"):
        assert not stores_approximate_vectors(exact) and not is_product_quantized(exact), exact
    for product in ("IVF1024,PQ32", "OPQ16,IVF256,PQ16", "OPQ16_64,PQ16", "PQ16x4fs", "HNSW32_PQ16",
                    "IVF8192,PQ96x4fs", "IVF1024,PQ48np", "OPQ48,IVF4096,PQ48x4fsr"):
        assert stores_approximate_vectors(product) and is_product_quantized(product), product
    for other in ("SQ8", "HNSW32,SQ8", "IVF1024,SQ8", "LSH", "ITQ64,LSH", "RQ4x8", "IVF256,RaBitQ", "OPQ16,RaBitQ",
                  "OPQ16_64,Flat", "OPQ16_64,IVF256,Flat", "PCA64,Flat", "RR64,HNSW32"):
        assert stores_approximate_vectors(other) and not is_product_quantized(other), other
