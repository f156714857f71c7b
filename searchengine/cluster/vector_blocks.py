"""Vectors a caller brings to a cluster build (`build_cluster(..., vectors=blocks)`): blocks of float32 rows, in
the documents' order, each checked as it arrives (engine/given_vectors.py: the dimension, NaN or infinity, a
vector of zeros) and put in the index's space, then handed out one row per document."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from searchengine.cluster.errors import ClusterError
from searchengine.engine.given_vectors import given_vectors
from searchengine.errors import SearchEngineError


class VectorRows:
    """The rows of `blocks` (2-D arrays, any number of rows each; together one row per document), read block by
    block so a build never holds more than the block it is at."""

    def __init__(self, blocks: Iterable[object], dimension: int) -> None:
        self._blocks = iter(blocks)
        self._dimension = dimension
        self._block = np.empty((0, dimension), dtype=np.float32)
        self._numbered = 0
        self._row = 0
        self._rows_before = 0

    def row(self, position: int) -> np.ndarray:
        """The vector of document `position` (the documents are asked for in order, from 0)."""
        while self._row >= len(self._block):
            self._rows_before += len(self._block)
            block = next(self._blocks, None)
            if block is None:
                raise ClusterError(
                    f"the vectors end after {self._rows_before} rows but there are more documents (document "
                    f"{position} has none): give one vector per document, in the documents' order"
                )
            self._numbered += 1
            try:
                self._block = given_vectors(block, self._dimension, what=self._name())
            except SearchEngineError as error:  # the cluster's own class, as its other build errors are
                raise ClusterError(str(error)) from None
            self._row = 0
        self._row += 1
        return self._block[self._row - 1]

    def finish(self, documents: int) -> None:
        """Check that no vector is left over once all `documents` have theirs."""
        left = len(self._block) - self._row + sum(len(block) for block in self._blocks)  # type: ignore[arg-type]
        if left:
            raise ClusterError(
                f"{documents + left} vectors for {documents} documents: give one vector per document, in the "
                "documents' order"
            )

    def _name(self) -> str:
        return f"the vectors of block {self._numbered} (from document {self._rows_before})"
