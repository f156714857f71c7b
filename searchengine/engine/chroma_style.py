"""The chroma-style calls of `SearchEngine` (upsert, get by id, search by a given vector), beside the `ids=`,
`documents=`, `metadatas=` and `embeddings=` that its `add` takes: a part of the facade of their own, so
engine/search_engine.py stays a short list of what the engine does."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from searchengine.engine.filters import Filters
from searchengine.errors import SearchEngineError

if TYPE_CHECKING:
    from searchengine.engine.index_reader import IndexReader
    from searchengine.engine.indexing_report import IndexingReport
    from searchengine.engine.search import Hit
    from searchengine.indexer.tables.documents import Document


class ChromaStyleCalls:
    """Calls named and shaped as chroma's collection methods; a SearchEngine has them (it is one of its parts)."""

    reader: IndexReader
    add: Callable[..., IndexingReport]
    """SearchEngine.add, which takes the same columns."""

    def upsert(
        self,
        ids: Sequence[str],
        documents: Sequence[str],
        metadatas: Sequence[dict[str, Any] | None] | None = None,
        embeddings: Any = None,  # noqa: ANN401 (an array, or lists of numbers)
    ) -> IndexingReport:
        """Add these documents, replacing the stored ones with the same ids (`add` with ids, which are required)."""
        if ids is None:
            raise SearchEngineError("upsert replaces documents by id: give ids=['a', ...], one per document")
        return self.add(ids=ids, documents=documents, metadatas=metadatas, embeddings=embeddings)

    def get(self, ids: Sequence[str] | None = None, where: Filters = None) -> list[Document]:
        """The stored documents with these ids (in their order; unknown ones left out) and/or meeting `where`."""
        return self.reader.get(ids, where)

    def search_by_vector(
        self,
        vector: Any,  # noqa: ANN401
        k: int = 10,
        where: Filters = None,
        *,
        mmr: Mapping[str, Any] | None = None,
    ) -> list[Hit]:
        """The k documents nearest to `vector` (in the index's space: engine/given_vectors.py), best first; with
        `mmr` ({"fetch_k": ..., "lambda_mult": ...}), picked by maximal marginal relevance among the fetch_k nearest."""
        return self.reader.search_by_vector(vector, k, where, mmr=mmr)
