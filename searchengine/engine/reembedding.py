"""Re-embedding an index with another model (`searchengine adapt`): the store kept, every document embedded again
into a new vector index of the same type, in one commit."""

from __future__ import annotations

import hashlib
import time
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from searchengine.engine.indexing import CHUNK, add_spooled
from searchengine.engine.indexing_report import IndexingReport
from searchengine.engine.manifest_record import library_versions, model_identity
from searchengine.engine.progress_bar import progress_bar
from searchengine.errors import SearchEngineError
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.manifest import Manifest, spec_inside
from searchengine.indexer.commit.rewrite import rewriting
from searchengine.indexer.vectors.build_parts import create_vectors
from searchengine.indexer.vectors.whitening import CovarianceAccumulator, Whitening

if TYPE_CHECKING:  # the encoder (torch, transformers) is imported only by what encodes
    from searchengine.encoding.encoder import Encoder


def refuse_passages(directory: IndexDirectory, manifest: Manifest) -> None:
    """Refuse an index that splits long documents into passages, which re-embedding does not do yet: `adapt` asks
    before it trains (a refusal after minutes of training wasted them), and reembed_index again under its lock."""
    if manifest.passages is not None:
        raise SearchEngineError(
            f"index {directory.path} splits long documents into passages, which re-embedding does not do yet: "
            "train with `searchengine train pseudo-queries --data CORPUS --base MODEL --out DIR` and build a new "
            "index with the model (`searchengine index ... --model DIR`)"
        )


def reembed_index(directory: IndexDirectory, encoder: Encoder, progress: bool = False) -> IndexingReport:
    """Embed every stored document again with `encoder` (another model, e.g. one adapted to this corpus) into a
    new vector index of the same type, refitting whitening-k when the index has it. The store is kept as it is:
    ids, external ids, metadata, origins. One commit: until it, the index keeps its old model and vectors, so an
    interrupted or killed run leaves the old index whole. (A stored clustering or near-duplicate marks, made
    from the old vectors, are kept too; make them again with the new model if they matter.)"""
    report = IndexingReport()
    started = time.perf_counter()
    truncated_before = encoder.truncated
    with rewriting(directory, library_versions()) as rewrite:
        previous = rewrite.manifest
        fit_k = previous.whitening.k if previous.whitening else None
        if fit_k is not None and fit_k > encoder.dimension:
            raise SearchEngineError(
                f"the index keeps {fit_k} whitened dimensions, more than the new model's {encoder.dimension}"
            )
        store = rewrite.store
        ids = store.documents.ids()
        report.index_type = previous.index.type
        report.documents = report.added = len(ids)
        refuse_passages(directory, previous)
        vectors = create_vectors(previous.index.type, fit_k or encoder.dimension, previous.index.shards)
        statistics = CovarianceAccumulator(encoder.dimension) if fit_k is not None else None
        spool_path = rewrite.generation.path("spool")
        seen: set[bytes] = set()
        try:
            with spool_path.open("wb") as spool, progress_bar(len(ids), progress, "Embedding") as bar:
                for start in range(0, len(ids), CHUNK):
                    chunk = store.get(ids[start : start + CHUNK])
                    texts = [chunk[int(i)].text for i in ids[start : start + CHUNK]]
                    distinct = list(dict.fromkeys(texts))
                    embedded = encoder.encode(distinct)
                    if statistics is not None:
                        digests = [hashlib.sha256(text.encode("utf-8")).digest() for text in distinct]
                        fresh = [row for row, digest in enumerate(digests) if digest not in seen]
                        seen.update(digests)
                        statistics.update(embedded[fresh])
                    row_of = {text: row for row, text in enumerate(distinct)}
                    embeddings = embedded[[row_of[text] for text in texts]]
                    spool.write(np.ascontiguousarray(embeddings, dtype=np.float32).tobytes())
                    bar.update(len(texts))
            whitening = Whitening.fit(statistics, fit_k) if statistics is not None else None
            if len(ids):
                add_spooled(spool_path, encoder.dimension, ids, set(), vectors, whitening, progress)
        finally:
            spool_path.unlink(missing_ok=True)
        if len(store.tombstones.ids()):
            store.tombstones.clear()
        identity = model_identity(encoder)  # an adapted model inside the index is recorded relative to it
        identity = replace(identity, spec=spec_inside(identity.spec, directory.path))
        rewrite.replace_model(identity, vectors, whitening)
        report.truncated = encoder.truncated - truncated_before
    report.seconds = time.perf_counter() - started
    return report
