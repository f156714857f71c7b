"""A LangChain VectorStore over an index directory (and so a retriever: `.as_retriever()`).

The index embeds with its own model: the one it was built with, whose vectors (whitened when the index was) its
FAISS segments hold. So the store takes no outside `Embeddings` to embed with; a vector from another model would be
compared with the index's in two different spaces. `store.embeddings` is the index's own encoder as a LangChain
`Embeddings`, for code that asks a store for its embeddings; its vectors are what `similarity_search_by_vector`
takes. LangChain document ids are the index's own ids (external ids): adding an id again replaces that document, as
`searchengine add --id-field` does. A document stored without one (a line of a file `searchengine index` read) has
the index's own id, as text, and its source and line in its metadata.

Reads and writes go through the server's reader and writer threads (ServedIndex), so the store is safe to use from
several threads and from LangChain's async methods, and sees writes by other processes without reopening."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchengine.engine.filters import Filters
from searchengine.engine.index_writer import ensure_index
from searchengine.engine.modes import SearchMode
from searchengine.engine.search_engine import SearchEngine
from searchengine.errors import SearchEngineError
from searchengine.indexer.query.filter_sql import Condition
from searchengine.indexer.tables.store import Document as StoredDocument
from searchengine.integrations import MissingExtra, id_list
from searchengine.integrations.operator_filters import operator_filters
from searchengine.server.served_index import ServedIndex

try:
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import VectorStore
except ImportError as exc:
    raise MissingExtra.of("searchengine.integrations.langchain", "langchain") from exc

if TYPE_CHECKING:
    from collections.abc import Callable

    from searchengine.encoding.encoder import Encoder, EncoderSpeed

LOOKUP_CHUNK = 500
"""Ids looked up (or deleted) per filter: well under SQLite's limit on the values of one statement."""


class SearchEngineEmbeddings(Embeddings):
    """The index's own encoder as LangChain Embeddings: the vectors the index stores and searches with."""

    def __init__(self, index: ServedIndex) -> None:
        self._index = index

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Each text's vector, as `add_texts` would store it."""
        return self._index.reader.run(lambda engine: engine.encode(texts).tolist()).result()

    def embed_query(self, text: str) -> list[float]:
        """The query's vector, as a search compares it with the stored ones."""
        return self.embed_documents([text])[0]


class SearchEngineVectorStore(VectorStore):
    """LangChain's VectorStore over the index at `index_dir`, made empty there when there is none.

    model: the model of a new index (None: the bundled all-MiniLM-L6-v2); an existing index keeps its own.
    encoder: an already loaded Encoder (of the index's model) to share. speed: how a model loaded here runs.
    mode: how `similarity_search` ranks: "dense" (by the cosine of the vectors, the default: scores are cosines,
    and relevance scores (cosine + 1) / 2), "keyword" (BM25) or "hybrid" (both, fused; often the best ranking).
    A call may pass `mode=` to override it, and `filter=` (or `where=`): metadata filters as the engine takes them
    (`["year>=2020"]`), or a dict as chroma, PGVector and Pinecone take one: `{"lang": "en"}`, with the operators
    $eq $ne $gt $gte $lt $lte $in $nin $and $or (`{"n": {"$in": [1, 2]}}`: searchengine.integrations.operator_filters).
    Call `close()` (or use it as a context manager) when done.
    """

    def __init__(
        self,
        index_dir: str | Path,
        *,
        model: str | Path | None = None,
        encoder: Encoder | None = None,
        speed: EncoderSpeed | None = None,
        mode: SearchMode = "dense",
    ) -> None:
        path = Path(index_dir)
        encoder = ensure_index(path, model=model, speed=speed, encoder=encoder)
        self._index = ServedIndex(path, encoder=encoder, speed=speed)
        self.mode = mode

    @property
    def embeddings(self) -> Embeddings:
        return SearchEngineEmbeddings(self._index)

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str | None] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Embed and add `texts`; returns their ids (new UUIDs where `ids` gives none). An id already stored is
        replaced. The documents are searchable when this returns."""
        _no_other_options(kwargs)
        if isinstance(texts, (str, bytes)):  # list() would add each character as a text
            raise SearchEngineError(f"texts is a list of str, not one {type(texts).__name__}: write [text]")
        texts = list(texts)
        if texts and all(isinstance(text, str) and not text.strip() for text in texts):
            raise SearchEngineError(  # a blank one among others is left out, as the index leaves it (a blank PDF page)
                "every text given is blank, and the index stores no blank text: give texts with words in them"
            )
        metadatas = metadatas or [{} for _ in texts]
        given = id_list(ids) if ids is not None else [None] * len(texts)
        if not len(texts) == len(metadatas) == len(given):
            raise SearchEngineError(
                f"{len(texts)} texts, {len(metadatas)} metadatas and {len(given)} ids: give one of each per text"
            )
        chosen = [str(name) if name is not None else str(uuid.uuid4()) for name in given]
        documents = [
            StoredDocument(text, metadata=dict(metadata or {}), external_id=name)
            for text, metadata, name in zip(texts, metadatas, chosen)
        ]
        if documents:
            self._write(lambda engine: engine.add(documents, merge=False))
        return chosen

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool:
        """Delete the documents with these ids; ids that are not stored are passed over. Deleting everything
        (ids None) is refused: delete the index directory for that."""
        _no_other_options(kwargs)
        if ids is None:
            raise SearchEngineError("say which ids to delete; to delete everything, remove the index directory")
        wanted = [str(name) for name in id_list(ids)]

        def delete_present(engine: SearchEngine) -> None:
            found = _lookup(engine, wanted)
            present = [document.external_id for _name, document in found if document.external_id is not None]
            numbers = [int(name) for name, document in found if document.external_id is None]
            if present or numbers:
                engine.delete(numbers, present, merge=False)

        if wanted:
            self._write(delete_present)
        return True

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The stored documents with these ids, in index order (then those found by the index's own id); unknown ids
        are left out."""
        wanted = [str(name) for name in id_list(ids)]
        stored = self._index.reader.run(lambda engine: _lookup(engine, wanted)).result() if wanted else []
        return [_document(document, name) for name, document in stored]

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return [document for document, _score in self.similarity_search_with_score(query, k, **kwargs)]

    def similarity_search_with_score(
        self, query: str, k: int = 4, *, mode: SearchMode | None = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """The k best documents for `query` with their scores (cosines in dense mode), best first."""
        where = _filters(kwargs)
        options = {"mode": mode or self.mode}

        def search(engine: SearchEngine) -> list:
            return engine.search(query, k, where, **options) if len(engine) else []

        hits = self._index.reader.run(search).result()
        return [(_document(hit, hit.external_id or str(hit.id)), hit.score) for hit in hits]

    def similarity_search_by_vector(self, embedding: list[float], k: int = 4, **kwargs: Any) -> list[Document]:
        """The k documents nearest to `embedding` by cosine, best first: a vector in the index's space, as
        `store.embeddings` gives it (searchengine.engine.given_vectors); `filter=` as in `similarity_search`."""
        where = _filters(kwargs)

        def search(engine: SearchEngine) -> list:
            return engine.search_by_vector(embedding, k, where) if len(engine) else []

        hits = self._index.reader.run(search).result()
        return [_document(hit, hit.external_id or str(hit.id)) for hit in hits]

    def max_marginal_relevance_search(
        self, query: str, k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5, **kwargs: Any
    ) -> list[Document]:
        """The k documents among the `fetch_k` nearest to `query` that are near it and unlike each other (maximal
        marginal relevance over the stored vectors, the engine's "mmr" mode); `filter=` as in similarity_search."""
        where = _filters(kwargs)
        options = {"mode": "mmr", "mode_options": {"fetch_k": fetch_k, "lambda_mult": lambda_mult}}

        def search(engine: SearchEngine) -> list:
            return engine.search(query, k, where, **options) if len(engine) else []

        hits = self._index.reader.run(search).result()
        return [_document(hit, hit.external_id or str(hit.id)) for hit in hits]

    def max_marginal_relevance_search_by_vector(
        self, embedding: list[float], k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5, **kwargs: Any
    ) -> list[Document]:
        """`max_marginal_relevance_search` for a vector in the index's space (as `store.embeddings` gives it): the
        same picks as for the query whose vector it is."""
        where = _filters(kwargs)
        mmr = {"fetch_k": fetch_k, "lambda_mult": lambda_mult}

        def search(engine: SearchEngine) -> list:
            return engine.search_by_vector(embedding, k, where, mmr=mmr) if len(engine) else []

        hits = self._index.reader.run(search).result()
        return [_document(hit, hit.external_id or str(hit.id)) for hit in hits]

    def _similarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """LangChain's relevance scores, from cosines: refused for a call that asks for another mode, as for a store
        made with one (_select_relevance_score_fn)."""
        _refuse_relevance_in_another_mode(kwargs)
        return super()._similarity_search_with_relevance_scores(query, k, **kwargs)

    async def _asimilarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """The async twin of `_similarity_search_with_relevance_scores`."""
        _refuse_relevance_in_another_mode(kwargs)
        return await super()._asimilarity_search_with_relevance_scores(query, k, **kwargs)

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        if self.mode != "dense":
            raise SearchEngineError(
                f"relevance scores are cosines, given in dense mode; this store ranks in {self.mode} mode: "
                "make it with mode='dense' to use a score threshold"
            )
        return lambda cosine: (cosine + 1) / 2

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings | None = None,
        metadatas: list[dict] | None = None,
        *,
        ids: list[str] | None = None,
        index_dir: str | Path | None = None,
        **kwargs: Any,
    ) -> SearchEngineVectorStore:
        """A store at `index_dir` holding `texts`. `embedding` must be None (or this store's own embeddings):
        the index embeds with its model (`model=`, among the constructor's options in `kwargs`)."""
        if embedding is not None and not isinstance(embedding, SearchEngineEmbeddings):
            raise SearchEngineError(
                f"the index embeds with its own model, not {type(embedding).__name__}: pass embedding=None and "
                "model='NAME' for another model"
            )
        if index_dir is None:
            raise SearchEngineError("say where the index goes: index_dir='my-index'")
        store = cls(index_dir, **kwargs)
        store.add_texts(texts, metadatas, ids=ids)
        return store

    def close(self) -> None:
        """Stop the reader and writer threads and close the index."""
        self._index.close()

    def __enter__(self) -> SearchEngineVectorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self, function: Callable[[SearchEngine], object]) -> None:
        self._index.writer.submit(function).result()
        self._index.writer.submit_background(
            lambda engine: engine.merge()
        )  # the reader sees the write at its next turn


def _lookup(engine: SearchEngine, ids: list[str]) -> list[tuple[str, StoredDocument]]:
    """The stored documents with these LangChain ids, each with its id: its external id, or for a document stored
    without one (as `searchengine index` stores the lines of a file) the index's own id as text."""
    found = []
    for start in range(0, len(ids), LOOKUP_CHUNK):
        chunk = tuple(dict.fromkeys(ids[start : start + LOOKUP_CHUNK]))
        found += [
            (document.external_id, document) for document in engine.documents([Condition("external_id", "in", chunk)])
        ]
    known = {name for name, _document in found}
    for name in dict.fromkeys(ids):
        if name not in known and name.isdecimal() and len(name) < OWN_ID_DIGITS:
            own = engine.documents([Condition("id", "=", int(name))])
            found += [(name, document) for document in own if document.external_id is None]
    return found


OWN_ID_DIGITS = 19
"""An id of fewer digits may be the index's own (a 64-bit integer); a longer one is only ever an external id."""


def _document(stored: Any, name: str) -> Document:
    """A stored document or a hit as LangChain's Document with id `name`: its metadata, and where it came from
    (`source` and `line`, for a document read from a file) unless its metadata has fields of those names."""
    origin = {field: value for field, value in (("source", stored.source), ("line", stored.line)) if value is not None}
    return Document(page_content=stored.text, metadata={**origin, **stored.metadata}, id=name)


def _filters(options: dict[str, Any]) -> Filters:
    """The `filter=` (LangChain's name) or `where=` (the engine's) of a search call, a dict read with Mongo-style
    operators; other options are refused."""
    where = options.pop("filter", None)
    where = options.pop("where", None) if where is None else where
    _no_other_options(options)
    return operator_filters(where) if isinstance(where, Mapping) else where


def _refuse_relevance_in_another_mode(options: dict[str, Any]) -> None:
    """Refuse relevance scores for a call whose `mode=` is not dense: its fused or BM25 scores were mapped to relevance
    as if they were cosines."""
    mode = options.get("mode")
    if mode is not None and mode != "dense":
        raise SearchEngineError(
            f"relevance scores are cosines, given in dense mode; this call asks for {mode} mode: leave mode out (or "
            "pass mode='dense') to use relevance scores or a score threshold"
        )


def _no_other_options(options: dict[str, Any]) -> None:
    if options:
        raise SearchEngineError(f"unknown option {', '.join(sorted(options))}; see SearchEngineVectorStore's help")
