"""scored_together: a batch of queries scored as one matrix product gets what each query gets alone, and FAISS's
setting is back to its default once the last batch (in any thread) ends."""

from __future__ import annotations

import threading

import faiss
import numpy as np
from searchengine.indexer.vectors.exact_batches import BATCH_FROM, scored_together
from searchengine.indexer.vectors.vector_index import VectorIndex


def test_a_batch_finds_what_each_query_finds_alone() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((5000, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = VectorIndex.create("Flat", 32)
    index.add(vectors, np.arange(5000, dtype=np.int64) * 3)
    queries = vectors[:8] + 0.1 * rng.standard_normal((8, 32)).astype(np.float32)
    scores, ids = index.search(queries, 10)
    for row, query in enumerate(queries):
        alone_scores, alone_ids = index.search(query[None], 10)
        np.testing.assert_array_equal(ids[row], alone_ids[0])
        np.testing.assert_allclose(scores[row], alone_scores[0], atol=1e-5)


def test_the_setting_is_switched_for_batches_and_restored_after_the_last() -> None:
    default = faiss.cvar.distance_compute_blas_threshold
    with scored_together(1):
        assert faiss.cvar.distance_compute_blas_threshold == default  # one query keeps the sequential scan
    inside, release = threading.Event(), threading.Event()

    def other_batch() -> None:
        with scored_together(BATCH_FROM):
            inside.set()
            release.wait(30)

    thread = threading.Thread(target=other_batch)
    with scored_together(BATCH_FROM):
        assert faiss.cvar.distance_compute_blas_threshold != default
        thread.start()
        assert inside.wait(30)
    assert faiss.cvar.distance_compute_blas_threshold != default  # the other batch still runs
    release.set()
    thread.join(30)
    assert faiss.cvar.distance_compute_blas_threshold == default
