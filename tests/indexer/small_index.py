"""A small segmented index of random unit vectors, built without any model: what the storage tests write to."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.manifest import ModelIdentity
from searchengine.indexer.commit.rewrite import commit_generation
from searchengine.indexer.tables.store import Document, DocumentStore
from searchengine.indexer.vectors.build_parts import create_vectors

DIMENSION = 8
MODEL = ModelIdentity("tiny", "default", "0123456789abcdef", "mean", True, DIMENSION, 64)


def unit_vectors(count: int, seed: int) -> np.ndarray:
    """`count` random vectors of DIMENSION, L2-normalised, the same for the same seed."""
    vectors = np.random.default_rng(seed).normal(size=(count, DIMENSION)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def build_small_index(
    path: Path, count: int, shards: int = 1, documents: Sequence[Document] = ()
) -> IndexDirectory:
    """An index at `path` of `count` documents ("document <i>", ids 0..count-1), then `documents`, in one Flat
    segment, or in `shards` of them (as `--shards` builds)."""
    directory = IndexDirectory(path)
    with directory.writing() as generation:
        store = DocumentStore(generation.path("documents"), writable=True)
        change = store.add([*(Document(f"document {i}") for i in range(count)), *documents])
        vectors = create_vectors("Flat", DIMENSION, shards)
        vectors.add(unit_vectors(len(change.ids), 0), np.asarray(change.ids))
        commit_generation(generation, directory, store, vectors, None, MODEL, {}, None, None)
    return directory
