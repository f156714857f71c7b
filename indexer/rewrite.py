"""Change an index as a whole: a writable copy of the current generation, committed with its manifest in one
swap, or discarded if anything fails. Every write path (build, add, delete, compact, cluster, dedupe) ends here."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from searchengine.indexer.index_directory import Generation, IndexDirectory
from searchengine.indexer.manifest import (
    Counts,
    Manifest,
    ModelIdentity,
    PassageSplitting,
    VectorIndexSpec,
    WhiteningFit,
    vector_roles,
)
from searchengine.indexer.shards import Vectors, load_vectors, save_vectors, shard_count
from searchengine.indexer.store import DocumentStore
from searchengine.indexer.whitening import Whitening


@dataclass
class IndexRewrite:
    """A writable copy of the current index, inside `rewriting()`: change it, and it is committed whole."""

    store: DocumentStore
    vectors: Vectors
    whitening: Whitening | None
    manifest: Manifest
    """The manifest of the index being rewritten."""
    generation: Generation
    """The generation being written (for scratch files such as a spool)."""
    upgraded: int = 0
    """Documents an older store had merged into another's row, made documents of their own by this rewrite."""
    model: ModelIdentity | None = None
    """The model of the rewritten index's vectors: the previous one unless `replace_model` was called."""
    new_whitening: bool = False
    """True when `whitening` was refitted (saved as a new file) rather than carried over."""

    def replace_model(self, model: ModelIdentity, vectors: Vectors, whitening: Whitening | None) -> None:
        """Commit vectors made by another model (and the whitening fitted on them, or none) in place of the old."""
        self.model, self.vectors, self.whitening, self.new_whitening = model, vectors, whitening, True


@contextmanager
def rewriting(directory: IndexDirectory, versions: dict[str, str] | None = None) -> Iterator[IndexRewrite]:
    """Hold the writer lock over a copy of the current index; commit it as a new generation if the block
    finishes, discard it if the block raises (the current index is never modified in place). `versions`
    replace the recorded library versions (a rewrite that encodes nothing keeps the previous ones)."""
    with directory.writing(existing=True) as generation:
        previous = directory.read_manifest()
        store_path = generation.path("documents")
        shutil.copyfile(directory.file(previous, "documents"), store_path)
        shutil.copymode(directory.file(previous, "documents"), store_path)
        whitening_path = directory.file(previous, "whitening")
        rewrite = IndexRewrite(
            store=DocumentStore(store_path, writable=True),
            vectors=load_vectors(directory, previous),
            whitening=Whitening.load(whitening_path) if whitening_path else None,
            manifest=previous,
            generation=generation,
        )
        try:
            rewrite.upgraded = upgrade_store(rewrite.store, rewrite.vectors)
            yield rewrite
        except BaseException:
            rewrite.store.close()
            raise
        commit_generation(
            generation,
            directory,
            rewrite.store,
            rewrite.vectors,
            rewrite.whitening,
            rewrite.model or previous.model,
            {**previous.versions, **(versions or {})},
            previous,
            previous.passages,
            keep_whitening=not rewrite.new_whitening,
        )


def upgrade_store(store: DocumentStore, vectors: Vectors) -> int:
    """Rewrite a store older versions wrote (identical texts merged into one row) into one row per document,
    adding each new row's vector (a copy of the row it was merged into). Returns how many rows were added."""
    copies = store.upgrade()
    if copies:
        new_ids, shared = (np.array(column, dtype=np.int64) for column in zip(*copies))
        vectors.add(vectors.reconstruct(shared), new_ids)
    return len(copies)


def commit_generation(
    generation: Generation,
    directory: IndexDirectory,
    store: DocumentStore,
    vectors: Vectors,
    whitening: Whitening | None,
    model: ModelIdentity,
    versions: dict[str, str],
    previous: Manifest | None,
    passages: PassageSplitting | None,
    keep_whitening: bool = True,
) -> None:
    """Save the vectors (and a new whitening) into `generation` and commit it with its manifest, which records
    how documents are split into `passages` (None: not split). A rewrite (`previous` given) keeps the previous
    whitening file unless `keep_whitening` is False."""
    vector_paths = save_vectors(vectors, generation)
    if previous is not None:  # a rewritten file keeps the permissions of the one it replaces
        for path in vector_paths.values():
            shutil.copymode(directory.file(previous, vector_roles(previous.index.shards)[0]), path)
    if previous is not None and keep_whitening:
        whitening_path = directory.file(previous, "whitening")
    elif whitening is not None:
        whitening_path = generation.path("whitening")
        whitening.save(whitening_path)
    else:
        whitening_path = None
    now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    manifest = Manifest(
        model=model,
        whitening=None if whitening is None else WhiteningFit(k=whitening.k, fit_count=whitening.fit_count),
        index=VectorIndexSpec(
            type=vectors.factory, metric="inner_product", dimension=vectors.dimension, shards=shard_count(vectors)
        ),
        count=Counts(vectors=store.vector_count(), documents=store.count(), tombstones=len(store.tombstones())),
        created_at=previous.created_at if previous else now,
        updated_at=now,
        versions=versions,
        passages=passages,
    )
    store.close()
    generation.commit(manifest, {**vector_paths, "documents": store.path, "whitening": whitening_path})
