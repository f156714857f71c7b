"""Larger "realistic" vector sets made from real embeddings, shared by the scale benchmarks.

The first rows are the real vectors themselves; every later row is a copy of a real vector (cycling through
them in order) plus independent Gaussian noise of standard deviation `noise` in every dimension, L2-normalised
again. The copies are synthetic: they keep the real vectors' layout (topics, anisotropy) but are no one's text.
"""

from __future__ import annotations

import numpy as np

DEFAULT_NOISE = 0.02
"""Per-dimension sigma of the copies' noise (absolute, on unit vectors; about 0.4 of the per-dimension spread
of the 384-d MiniLM vectors, and a copy's cosine to its original is about 0.93 at 384 dimensions)."""


def noisy_copies(real: np.ndarray, n: int, noise: float = DEFAULT_NOISE, seed: int = 0) -> np.ndarray:
    """n float32 rows: the real vectors, then noisy re-normalised copies of them until there are n."""
    real = np.asarray(real, dtype=np.float32)
    if n <= len(real):
        return np.ascontiguousarray(real[:n])
    out = np.empty((n, real.shape[1]), dtype=np.float32)
    out[: len(real)] = real
    rng = np.random.default_rng(seed)
    for start in range(len(real), n, len(real)):
        stop = min(start + len(real), n)
        block = real[: stop - start] + rng.normal(scale=noise, size=(stop - start, real.shape[1])).astype(np.float32)
        out[start:stop] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out
