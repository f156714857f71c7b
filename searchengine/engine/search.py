"""The query path: ranked document ids (nearest neighbours in the vector index, in dense search) joined with their
documents, and reranking by a cross-encoder."""

from __future__ import annotations

import bisect
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import faiss
import numpy as np

from searchengine.engine.passage_search import best_passages
from searchengine.engine.snippets import DEFAULT_SNIPPET_CHARS, Highlight, snippet
from searchengine.indexer.tables.store import DocumentStore
from searchengine.indexer.vectors.vector_index import VectorIndex

if TYPE_CHECKING:
    from searchengine.encoding.cross_encoder import CrossEncoder


@contextmanager
def one_thread() -> Iterator[None]:
    """torch and faiss on one thread each, restored afterwards: how a single query runs fastest here.

    One thread is faster end to end than their default two, whose OpenMP workers keep spinning after each call and
    compete with the encoder (measured at 1M vectors in docs/benchmarks.md#1000000-vectors). Both libraries
    keep the setting per thread (OpenMP's), so blocks in several threads at once (the server's readers) each
    set and restore their own. torch is left alone where nothing has imported it (a query encoded
    without torch, searchengine.encoding.onnx_query_encoder): importing it here would cost seconds."""
    torch = sys.modules.get("torch")
    torch_threads, faiss_threads = torch.get_num_threads() if torch else None, faiss.omp_get_max_threads()
    if torch:
        torch.set_num_threads(1)
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        if torch:
            torch.set_num_threads(torch_threads)
        faiss.omp_set_num_threads(faiss_threads)


@dataclass(frozen=True)
class Hit:
    """One search result: `score` is what ranked it (the cosine similarity in the index's vector space in dense
    mode, the BM25 score in keyword mode, the fused score in hybrid mode, or, when the results were reranked, the
    cross-encoder's score, with `retrieval_score` keeping the one it was retrieved by)."""

    id: int
    score: float
    text: str
    source: str | None = None
    line: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    count: int = 1
    """How many documents in the index hold this exact text (1 when no other does)."""
    external_id: str | None = None
    """The document's own id as the user gave it (`--id-field`, Document.external_id); `id` is the index's."""
    cluster: int | None = None
    """The document's cluster in the clustering stored with the index (`searchengine cluster`), if any."""
    retrieval_score: float | None = None
    """When reranked: the score that retrieved the hit (None when not reranked)."""
    found_by: tuple[str, ...] = ()
    """The sides whose candidates held the document: ("dense",), ("keyword",) or both, in hybrid mode."""
    dense_score: float | None = None
    """The cosine similarity to the query (given in dense and hybrid modes)."""
    keyword_score: float | None = None
    """The BM25 score of the query's words, 0 when it holds none of them (given in keyword and hybrid modes)."""
    span: tuple[int, int] | None = None
    """Characters [start, end) of `text` that matched: the document's best passage, when it was split into
    passages (None: the document is one vector, embedded from its beginning)."""

    highlight: Highlight | None = None
    """The sentence(s) nearest to the query and its words there, when the search was asked for them
    (`search(..., highlight=True)`); None otherwise."""

    @property
    def passage(self) -> str:
        """The text of the passage that matched (the whole text when the document is one vector)."""
        return self.text if self.span is None else self.text[self.span[0] : self.span[1]]

    @property
    def location(self) -> str | None:
        """Where in its file the hit matched, for a document read from a file: the heading path ("Guide ›
        Install") or page ("page 3") of the section that holds its highlighted sentence, else its best passage's
        start, else its only section (a PDF page); None for other documents, or where nothing says where."""
        sections = self.metadata.get("sections")
        where = self.highlight.span if self.highlight is not None else self.span
        if not isinstance(sections, list) or not sections:
            return None
        starts = [section[0] for section in sections if isinstance(section, list) and len(section) == 2]
        if len(starts) != len(sections) or (where is None and len(sections) > 1):
            return None
        found = 0 if where is None else bisect.bisect_right(starts, where[0]) - 1
        return str(sections[found][1]) if found >= 0 else None

    def snippet(self, max_chars: int = DEFAULT_SNIPPET_CHARS) -> str:
        """One line to show for the hit: its highlighted sentences if it has them, else the passage that matched
        (or the document's start), whitespace and control characters collapsed, cut to `max_chars` at a word
        boundary with an ellipsis."""
        return snippet(self.text, self.highlight.span if self.highlight else self.span, max_chars)


@dataclass(frozen=True)
class Scored:
    """A document id as a search ranked it, before its document is read: the Hit fields a search decides."""

    id: int
    score: float
    found_by: tuple[str, ...]
    dense_score: float | None = None
    keyword_score: float | None = None
    span: tuple[int, int] | None = None
    """The best passage's characters, for a document split into passages that the dense side found."""


def dense_rankings(
    vectors: VectorIndex,
    store: DocumentStore,
    queries: np.ndarray,
    k: int,
    allowed: np.ndarray | None = None,
    excluded: np.ndarray | None = None,
) -> list[list[Scored]]:
    """The k nearest documents per query row by cosine (fewer when fewer qualify), best first, among `allowed`
    vector ids (all when None) and never `excluded` ones (tombstones). A document split into passages scores by
    its best passage, which `span` names."""
    return [
        [Scored(doc, score, ("dense",), dense_score=score, span=span) for doc, (score, span) in row.items()]
        for row in best_passages(vectors, store, queries, k, allowed, excluded)
    ]


def hits_of(store: DocumentStore, rankings: list[list[Scored]]) -> list[list[Hit]]:
    """Each ranking's documents read from the store, in order (an id no longer stored is left out)."""
    documents = store.get([scored.id for ranking in rankings for scored in ranking])
    clusters = store.clustering.clusters_of(list(documents))
    results = []
    for ranking in rankings:
        hits = []
        for scored in ranking:
            document = documents.get(scored.id)
            if document is None:
                continue
            hits.append(
                Hit(
                    id=document.id,
                    score=scored.score,
                    text=document.text,
                    source=document.source,
                    line=document.line,
                    metadata=document.metadata,
                    count=document.count,
                    external_id=document.external_id,
                    cluster=clusters.get(document.id),
                    found_by=scored.found_by,
                    dense_score=scored.dense_score,
                    keyword_score=scored.keyword_score,
                    span=scored.span,
                )
            )
        results.append(hits)
    return results


def rerank_hits(cross_encoder: CrossEncoder, queries: list[str], results: list[list[Hit]], k: int) -> list[list[Hit]]:
    """Rescore every query's candidates with the cross-encoder (all pairs in one smart-batched call) and keep the
    k best per query by that score, best first (ties keep the retrieval order). Each hit's `score` becomes the
    cross-encoder's and `retrieval_score` keeps the score it was retrieved by. The cross-encoder reads the passage
    that matched, which fits its limit where the document may not."""
    pairs = [(query, hit.passage) for query, hits in zip(queries, results) for hit in hits]
    scores = cross_encoder.score(pairs) if pairs else np.zeros(0, dtype=np.float32)
    reranked, start = [], 0
    for hits in results:
        own = scores[start : start + len(hits)]
        start += len(hits)
        order = np.argsort(-own, kind="stable")[:k]
        reranked.append([replace(hits[i], score=float(own[i]), retrieval_score=hits[i].score) for i in order])
    return reranked
