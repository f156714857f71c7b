"""BERT-whitening (Su et al., 2021): x -> (x - mu) W[:, :k] with W = U diag(1/sqrt(lambda)), fitted in one
streaming pass so a corpus larger than memory works."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file
from searchengine.indexer.errors import IndexerError

RANK_TOLERANCE = 1e-12
"""A direction whose variance is below this fraction of the largest one counts as absent (whitening would divide
by ~0 there). Encoders have such directions: all-MiniLM-L6-v2's pooled vectors keep 3 of 384 dimensions constant."""


class CovarianceAccumulator:
    """Running mean and covariance in float64, merged chunk by chunk (Chan et al.'s pairwise update)."""

    def __init__(self, dimension: int) -> None:
        self.count = 0
        self.mean = np.zeros(dimension, dtype=np.float64)
        self._scatter = np.zeros((dimension, dimension), dtype=np.float64)

    def update(self, vectors: np.ndarray) -> None:
        """Fold a chunk of row vectors into the running statistics."""
        chunk = np.asarray(vectors, dtype=np.float64)
        if len(chunk) == 0:
            return
        chunk_mean = chunk.mean(axis=0)
        centred = chunk - chunk_mean
        total = self.count + len(chunk)
        delta = chunk_mean - self.mean
        self._scatter += centred.T @ centred + np.outer(delta, delta) * (self.count * len(chunk) / total)
        self.mean += delta * (len(chunk) / total)
        self.count = total

    def covariance(self) -> np.ndarray:
        """The population covariance of everything seen so far."""
        return self._scatter / max(self.count, 1)


class Whitening:
    """A fitted whitening-k transform, applied identically to documents and queries."""

    def __init__(self, mean: np.ndarray, matrix: np.ndarray, fit_count: int) -> None:
        self.mean = mean.astype(np.float32)
        self.matrix = matrix.astype(np.float32)
        self.fit_count = fit_count

    @property
    def k(self) -> int:
        return int(self.matrix.shape[1])

    @staticmethod
    def max_k(statistics: CovarianceAccumulator) -> int:
        """The largest k that fit() accepts: how many directions the embeddings span."""
        s = np.linalg.svd(statistics.covariance(), compute_uv=False)
        return int(np.count_nonzero(s > s[0] * RANK_TOLERANCE)) if s[0] > 0 else 0

    @classmethod
    def fit(cls, statistics: CovarianceAccumulator, k: int) -> Whitening:
        """SVD of the covariance; keep the k directions of largest variance, each scaled to unit variance."""
        dimension = statistics.mean.shape[0]
        if not 1 <= k <= dimension:
            raise IndexerError(f"whitening k must be between 1 and the embedding dimension {dimension}, not {k}")
        if statistics.count <= k:
            raise IndexerError(
                f"whitening-k {k} needs more than {k} distinct texts to fit, but got {statistics.count}; "
                "use a smaller k or fit on a larger file"
            )
        u, s, _ = np.linalg.svd(statistics.covariance())
        if s[k - 1] <= s[0] * RANK_TOLERANCE:
            raise IndexerError(
                f"the embeddings span fewer than {k} directions, so whitening-k {k} would divide by zero; "
                f"use a smaller k (at most {cls.max_k(statistics)})"
            )
        return cls(statistics.mean, u[:, :k] / np.sqrt(s[:k]), statistics.count)

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        """Whiten and reduce (n, d) vectors to (n, k) float32."""
        return ((np.asarray(vectors, dtype=np.float32) - self.mean) @ self.matrix).astype(np.float32)

    def save(self, path: Path) -> None:
        save_file({"mean": self.mean, "matrix": self.matrix}, str(path), metadata={"fit_count": str(self.fit_count)})

    @classmethod
    def load(cls, path: Path) -> Whitening:
        try:
            from safetensors import safe_open

            tensors = load_file(str(path))
            with safe_open(str(path), framework="numpy") as handle:
                fit_count = int((handle.metadata() or {}).get("fit_count", 0))
            return cls(tensors["mean"], tensors["matrix"], fit_count)
        except Exception as exc:  # noqa: BLE001 (safetensors raises its own error types for truncated or foreign files)
            raise IndexerError(f"whitening file {path} is unreadable ({exc}); rebuild the index") from None
