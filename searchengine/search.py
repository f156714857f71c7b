"""The query path: nearest neighbours in the vector index, joined with their documents."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from indexer.store import DocumentStore
from indexer.vector_index import VectorIndex


@dataclass(frozen=True)
class Hit:
    """One search result: `score` is the cosine similarity in the index's vector space."""

    id: int
    score: float
    text: str
    source: str | None = None
    line: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    count: int = 1
    """How many times this exact text was indexed."""
    cluster: int | None = None
    """The document's cluster in the clustering stored with the index (`searchengine cluster`), if any."""


def nearest_documents(
    vectors: VectorIndex,
    store: DocumentStore,
    queries: np.ndarray,
    k: int,
    allowed: np.ndarray | None = None,
    excluded: np.ndarray | None = None,
) -> list[list[Hit]]:
    """The k best hits per query row (fewer when fewer qualify), best first, among `allowed` ids (all when
    None) and never `excluded` ones (tombstones)."""
    scores, ids = vectors.search(queries, k, allowed, excluded)
    documents = store.get([int(i) for i in ids.ravel() if i >= 0])
    clusters = store.clusters_of(list(documents))
    results = []
    for row_scores, row_ids in zip(scores, ids):
        hits = []
        for score, doc_id in zip(row_scores, row_ids):
            document = documents.get(int(doc_id))
            if document is None:
                continue
            hits.append(
                Hit(
                    id=document.id,
                    score=float(score),
                    text=document.text,
                    source=document.source,
                    line=document.line,
                    metadata=document.metadata,
                    count=document.count,
                    cluster=clusters.get(document.id),
                )
            )
        results.append(hits)
    return results
