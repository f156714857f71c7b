"""A LlamaIndex vector store over an index directory, for a `VectorStoreIndex` and its query engines.

The store searches by the query's text (`is_embedding_query = False`): the index encodes it with its own model, the
one its vectors come from, and runs dense, keyword or hybrid search with the metadata filters translated to its own;
a query with only a `query_embedding` is searched by that vector (dense). It stores each node's text, its metadata
(filterable) and the node itself (LlamaIndex's `_node_content`), with the node id as the document's own id. A
VectorStoreIndex embeds nodes with its `embed_model` before it hands them over: give it `store.embed_model` (the
index's encoder) and the store keeps those vectors, embedding nothing twice; nodes embedded by another model (or not
at all) are embedded with the index's model, since their vectors are in another space.

Reads and writes go through the server's reader and writer threads (ServedIndex), as in the LangChain store."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from searchengine.engine.index_writer import ensure_index
from searchengine.engine.modes import SearchMode
from searchengine.engine.search_engine import SearchEngine
from searchengine.errors import SearchEngineError
from searchengine.indexer.errors import UnknownFieldError
from searchengine.indexer.query.filter_sql import AnyOf, Condition
from searchengine.indexer.tables.store import Document
from searchengine.integrations import MissingExtra, id_list
from searchengine.server.served_index import ServedIndex

try:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.bridge.pydantic import PrivateAttr
    from llama_index.core.schema import BaseNode, MetadataMode, TextNode
    from llama_index.core.vector_stores.types import (
        BasePydanticVectorStore,
        FilterCondition,
        FilterOperator,
        MetadataFilter,
        MetadataFilters,
        VectorStoreQuery,
        VectorStoreQueryMode,
        VectorStoreQueryResult,
    )
    from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict
except ImportError as exc:
    raise MissingExtra.of("searchengine.integrations.llamaindex", "llamaindex") from exc

if TYPE_CHECKING:
    from searchengine.encoding.encoder import Encoder, EncoderSpeed

OPERATORS = {
    FilterOperator.EQ: "=",
    FilterOperator.NE: "!=",
    FilterOperator.GT: ">",
    FilterOperator.GTE: ">=",
    FilterOperator.LT: "<",
    FilterOperator.LTE: "<=",
    FilterOperator.IN: "in",
    FilterOperator.CONTAINS: "contains",
    FilterOperator.TEXT_MATCH: "includes",
    FilterOperator.IS_EMPTY: "is empty",
}
"""LlamaIndex's filter operators that the engine's filters have (searchengine.indexer.query.filter_sql); nin is one
!= per value (_condition). text_match is a piece of text anywhere in the value (case-sensitive), is_empty a field
missing, null, "" or [], as LlamaIndex's own SimpleVectorStore reads them."""
SAME_MODEL_COSINE = 0.99
"""How close a node's vector must be to the index's own vector of its text for the store to take the node's vectors
as the index's (the same model gives about 1.0; another model's vectors, in another space, far less)."""
QUERY_MODES: dict[VectorStoreQueryMode, SearchMode] = {
    VectorStoreQueryMode.HYBRID: "hybrid",
    VectorStoreQueryMode.TEXT_SEARCH: "keyword",
    VectorStoreQueryMode.SPARSE: "keyword",
    VectorStoreQueryMode.MMR: "mmr",
}
"""LlamaIndex's query modes that map to one of the engine's; DEFAULT is the store's own `mode`."""


class SearchEngineEmbedding(BaseEmbedding):
    """The index's own encoder as a LlamaIndex embedding model: the vectors the index stores and searches with."""

    _index: ServedIndex = PrivateAttr()

    def __init__(self, index: ServedIndex, **kwargs: Any) -> None:
        super().__init__(model_name=str(index.path), **kwargs)
        self._index = index

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._index.reader.run(lambda engine: engine.encode(texts).tolist()).result()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._get_text_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)


class SearchEngineVectorStore(BasePydanticVectorStore):
    """LlamaIndex's vector store over the index at `index_dir`, made empty there when there is none.

    model, encoder, speed: as for the LangChain store (the model of a new index; a loaded Encoder to share; how a
    model loaded here runs). mode: how a DEFAULT query ranks, "dense" (cosine similarities), "keyword" or "hybrid";
    a query in HYBRID or TEXT_SEARCH mode asks for hybrid or keyword itself. Call `close()` when done.
    """

    stores_text: bool = True
    is_embedding_query: bool = False
    flat_metadata: bool = False
    mode: SearchMode = "dense"
    _index: ServedIndex = PrivateAttr()

    def __init__(
        self,
        index_dir: str | Path,
        *,
        model: str | Path | None = None,
        encoder: Encoder | None = None,
        speed: EncoderSpeed | None = None,
        mode: SearchMode = "dense",
    ) -> None:
        super().__init__(mode=mode)
        path = Path(index_dir)
        encoder = ensure_index(path, model=model, speed=speed, encoder=encoder)
        self._index = ServedIndex(path, encoder=encoder, speed=speed)

    @property
    def client(self) -> ServedIndex:
        """The served index: its `reader` and `writer` run functions of a SearchEngine on their threads."""
        return self._index

    @property
    def embed_model(self) -> SearchEngineEmbedding:
        """The index's encoder as a LlamaIndex embedding model, for VectorStoreIndex(embed_model=...)."""
        return SearchEngineEmbedding(self._index)

    def add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        """Store the nodes (a node id already stored is replaced), embedded with the index's model; returns their
        ids. They are searchable when this returns."""
        _no_other_options(kwargs)
        documents = [
            Document(
                node.get_content(metadata_mode=MetadataMode.NONE),
                metadata=node_to_metadata_dict(node, remove_text=True, flat_metadata=self.flat_metadata),
                external_id=node.node_id,
            )
            for node in nodes
        ]
        if documents:
            embeddings = self._own_embeddings(nodes)
            self._write(lambda engine: engine.add(documents, merge=False, embeddings=embeddings))
        return [node.node_id for node in nodes]

    def _own_embeddings(self, nodes: Sequence[BaseNode]) -> list[list[float]] | None:
        """The nodes' embeddings, to store as they are, when every node arrives with one from the index's own model
        (`embed_model`): checked on the first node, whose vector must be the one the index gives its text (cosine
        at least SAME_MODEL_COSINE). None otherwise (no embeddings, or another model's): the index embeds the texts."""
        embeddings = [node.embedding for node in nodes]
        if any(embedding is None for embedding in embeddings):
            return None
        text = nodes[0].get_content(metadata_mode=MetadataMode.EMBED)  # what LlamaIndex embedded
        own = self._index.reader.run(lambda engine: engine.encode([text])[0]).result()
        given = np.asarray(embeddings[0], dtype=np.float32)
        if given.shape != own.shape or not np.linalg.norm(given):
            return None
        return embeddings if float(given @ own) / float(np.linalg.norm(given)) >= SAME_MODEL_COSINE else None

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete the nodes of the source document `ref_doc_id` (none stored: nothing happens)."""
        _no_other_options(delete_kwargs)
        self._delete_where([Condition("ref_doc_id", "=", ref_doc_id)])

    def delete_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None, **delete_kwargs: Any
    ) -> None:
        """Delete the nodes with these ids and/or meeting these filters (unknown ids are passed over)."""
        _no_other_options(delete_kwargs)
        where = _node_conditions(node_ids) + _conditions(filters)
        if not where:
            raise SearchEngineError("say which nodes to delete: give node_ids or filters")
        self._delete_where(where)

    def get_nodes(self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None) -> list[BaseNode]:
        """The stored nodes with these ids and/or meeting these filters, in index order."""
        where = _node_conditions(node_ids) + _conditions(filters)
        if not where:
            raise SearchEngineError("say which nodes to read: give node_ids or filters")
        stored = self._index.reader.run(lambda engine: engine.documents(where)).result()
        return [_node(document.text, document.metadata, document.external_id) for document in stored]

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """The `similarity_top_k` best nodes for the query's text, best first, with their scores."""
        mode_options = _mmr_options(query, kwargs) if query.mode == VectorStoreQueryMode.MMR else None
        _no_other_options(kwargs)
        by_vector = (query.query_str is None or not query.query_str.strip()) and query.query_embedding is not None
        if not by_vector and (query.query_str is None or not query.query_str.strip()):
            raise SearchEngineError("give query_str (the query's text) or query_embedding (a vector of embed_model)")
        if query.mode != VectorStoreQueryMode.DEFAULT and query.mode not in QUERY_MODES:
            raise SearchEngineError(
                f"query mode {query.mode.value} is not offered; use default ({self.mode}), hybrid or text_search"
            )
        if by_vector and query.mode != VectorStoreQueryMode.DEFAULT:  # it ran dense, the mode asked for ignored
            raise SearchEngineError(
                f"query mode {query.mode.value} ranks by the query's text, and this query gives only query_embedding: "
                "give query_str too, or leave the mode at default to search by the vector"
            )
        mode = QUERY_MODES.get(query.mode, self.mode)
        where: list[Condition | AnyOf] = _conditions(query.filters)
        if query.doc_ids:
            where.append(Condition("ref_doc_id", "in", tuple(id_list(query.doc_ids))))
        where += _node_conditions(query.node_ids)

        def search(engine: SearchEngine) -> list:
            if not len(engine):
                return []
            if by_vector:
                return engine.search_by_vector(query.query_embedding, query.similarity_top_k, where or None)
            return engine.search(
                query.query_str, query.similarity_top_k, where or None, mode=mode, mode_options=mode_options
            )

        hits = self._index.reader.run(search).result()
        return VectorStoreQueryResult(
            nodes=[_node(hit.text, hit.metadata, hit.external_id or str(hit.id)) for hit in hits],
            similarities=[hit.score for hit in hits],
            ids=[hit.external_id or str(hit.id) for hit in hits],
        )

    def clear(self) -> None:
        """Delete every node, and every other document of the index: an empty store, as LlamaIndex's clear()."""

        def delete_all(engine: SearchEngine) -> None:
            ids = engine.reader.store.filters.matching_ids([Condition("id", ">=", 0)])
            if len(ids):
                engine.delete(ids.tolist(), merge=False)

        self._write(delete_all)

    def close(self) -> None:
        """Stop the reader and writer threads and close the index."""
        self._index.close()

    def _delete_where(self, where: list[Condition | AnyOf]) -> None:
        def delete(engine: SearchEngine) -> None:
            try:
                present = [document.external_id for document in engine.documents(where)]
            except UnknownFieldError:  # e.g. no node of LlamaIndex's stored yet, so no ref_doc_id: nothing to delete
                return
            if present:
                engine.delete(external_ids=present, merge=False)

        self._write(delete)

    def _write(self, function: Any) -> None:  # noqa: ANN401 (a function of a SearchEngine)
        self._index.writer.submit(function).result()
        self._index.writer.submit_background(
            lambda engine: engine.merge()
        )  # the reader sees the write at its next turn


def _node(text: str, metadata: dict[str, Any], node_id: str | None) -> BaseNode:
    """The node stored with a document, or, for one added otherwise (`searchengine index`, `add`), a TextNode of
    its text and metadata whose id is the document's own id (else its number in the index)."""
    if "_node_content" in metadata:
        return metadata_dict_to_node(metadata, text)
    return TextNode(text=text, metadata=metadata, **({"id_": node_id} if node_id else {}))


def _node_conditions(node_ids: list[str] | None) -> list[Condition | AnyOf]:
    return [Condition("external_id", "in", tuple(id_list(node_ids)))] if node_ids else []


def _conditions(filters: MetadataFilters | None) -> list[Condition | AnyOf]:
    """LlamaIndex's metadata filters as the engine's: AND of filters (nested ANDs too), or one OR of plain ones."""
    if filters is None or not filters.filters:
        return []
    if filters.condition == FilterCondition.OR:
        if not all(isinstance(item, MetadataFilter) for item in filters.filters):
            raise SearchEngineError("an OR of filters holds plain filters only here, not nested groups")
        either = [_condition(item) for item in filters.filters]
        if any(len(conditions) != 1 for conditions in either):
            raise SearchEngineError("an OR of filters holds single conditions here: nin of several values is not one")
        return [AnyOf(tuple(conditions[0] for conditions in either))]
    if filters.condition not in (None, FilterCondition.AND):
        raise SearchEngineError(f"filter condition {filters.condition.value} is not offered; use and or or")
    conditions: list[Condition | AnyOf] = []
    for item in filters.filters:
        conditions += _conditions(item) if isinstance(item, MetadataFilters) else _condition(item)
    return conditions


def _condition(item: MetadataFilter) -> list[Condition]:
    """The engine's conditions (all must hold) for one filter: one, or for nin one `!=` per value."""
    if FilterOperator(item.operator) == FilterOperator.NIN:
        values = item.value if isinstance(item.value, list) else [item.value]
        return [Condition(item.key, "!=", value) for value in values]
    operator = OPERATORS.get(FilterOperator(item.operator))
    if operator is None:
        offered = ", ".join(op.value for op in [*OPERATORS, FilterOperator.NIN])
        raise SearchEngineError(f"filter operator {item.operator.value} is not offered; use one of {offered}")
    value = tuple(item.value) if operator == "in" else None if operator == "is empty" else item.value
    return [Condition(item.key, operator, value)]


def _mmr_options(query: VectorStoreQuery, options: dict[str, Any]) -> dict[str, Any]:
    """The engine's mmr options for LlamaIndex's MMR query: `mmr_threshold` as lambda_mult (0.5 when None), and
    the candidates as `mmr_prefetch_k`, or `mmr_prefetch_factor` times k (LlamaIndex's names; 20 when neither)."""
    lambda_mult = 0.5 if query.mmr_threshold is None else query.mmr_threshold
    factor = options.pop("mmr_prefetch_factor", None)
    fetch_k = options.pop("mmr_prefetch_k", None)
    if fetch_k is None and factor is not None:
        fetch_k = int(factor * query.similarity_top_k)
    return {"lambda_mult": lambda_mult, "fetch_k": 20 if fetch_k is None else fetch_k}


def _no_other_options(options: dict[str, Any]) -> None:
    if options:
        raise SearchEngineError(f"unknown option {', '.join(sorted(options))}; see SearchEngineVectorStore's help")
