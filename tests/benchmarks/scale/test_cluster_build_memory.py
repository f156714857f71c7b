"""benchmarks/scale/cluster_build_memory.py's inputs, made block by block: the real vectors, then noisy unit copies
(the same for the same seed), and one document per vector with its own id."""

from __future__ import annotations

import numpy as np

from benchmarks.scale.cluster_build_memory import BLOCK, documents, vector_blocks


def test_the_blocks_are_the_real_vectors_then_noisy_unit_copies() -> None:
    rng = np.random.default_rng(1)
    real = rng.normal(size=(BLOCK + 300, 8)).astype(np.float32)
    real /= np.linalg.norm(real, axis=1, keepdims=True)
    blocks = list(vector_blocks(real, 2 * BLOCK + 50, noise=0.02))
    assert [len(block) for block in blocks] == [BLOCK, BLOCK, 50]
    rows = np.concatenate(blocks)
    assert np.array_equal(rows[: len(real)], real)  # the real ones untouched (and `real` itself not changed)
    copies = rows[len(real) :]
    assert np.allclose(np.linalg.norm(copies, axis=1), 1.0, atol=1e-5)
    originals = real[np.arange(len(real), len(rows)) % len(real)]
    cosines = np.sum(copies * originals, axis=1)
    assert cosines.min() > 0.99 and not np.array_equal(copies, originals)  # near their originals, not equal
    again = np.concatenate(list(vector_blocks(real, 2 * BLOCK + 50, noise=0.02)))
    assert np.array_equal(rows, again)


def test_one_document_per_vector_each_with_its_own_id() -> None:
    made = list(documents(["alpha", "beta"], 5))
    assert [document.external_id for document in made] == ["d0", "d1", "d2", "d3", "d4"]
    assert [document.text for document in made] == ["alpha", "beta", "alpha [copy 1]", "beta [copy 1]", "alpha [copy 2]"]
