"""The LlamaIndex store through a VectorStoreIndex built over it and queried, all local: the tiny test model
embeds (through the store's own embed_model, or LlamaIndex's MockEmbedding), no network and no OpenAI key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from llama_index.core import Document, MockEmbedding, StorageContext, VectorStoreIndex
from llama_index.core.schema import MetadataMode
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
)

from searchengine.encoding.encoder import Encoder
from searchengine.errors import SearchEngineError
from searchengine.integrations.llamaindex import SearchEngineVectorStore
from tests.conftest import SENTENCES


@pytest.fixture
def store(tmp_path: Path, tiny_encoder: Encoder) -> Iterator[SearchEngineVectorStore]:
    store = SearchEngineVectorStore(tmp_path / "index", encoder=tiny_encoder)
    yield store
    store.close()


def _documents() -> list[Document]:
    return [
        Document(text=text, doc_id=f"doc-{n}", metadata={"lang": "en" if n % 2 else "de", "year": 2000 + n})
        for n, text in enumerate(SENTENCES)
    ]


def _index(store: SearchEngineVectorStore, embed_model: object) -> VectorStoreIndex:
    context = StorageContext.from_defaults(vector_store=store)
    return VectorStoreIndex.from_documents(_documents(), storage_context=context, embed_model=embed_model)


def test_a_vector_store_index_over_it_retrieves_by_meaning(store: SearchEngineVectorStore) -> None:
    index = _index(store, store.embed_model)
    found = index.as_retriever(similarity_top_k=3).retrieve("the cat sat on the mat")
    assert [hit.node.get_content() for hit in found][0] == "the cat sat on the mat" and len(found) == 3
    assert found[0].node.ref_doc_id == "doc-1"
    # the node's vector as LlamaIndex embedded it (its text after its metadata) is the one stored and searched
    embedded = store.embed_model.get_text_embedding(found[0].node.get_content(metadata_mode=MetadataMode.EMBED))
    query = store.embed_model.get_query_embedding("the cat sat on the mat")
    assert found[0].score == pytest.approx(float(np.dot(embedded, query)), abs=1e-5)
    assert found[0].node.metadata == {"lang": "en", "year": 2001}


def test_a_query_engine_answers_from_the_store(store: SearchEngineVectorStore) -> None:
    from llama_index.core.llms import MockLLM

    index = _index(store, MockEmbedding(embed_dim=8))  # LlamaIndex's own local embedding: the store ignores it
    engine = index.as_query_engine(similarity_top_k=1, llm=MockLLM())  # a local stand-in LLM: no key, no network
    response = engine.query("she played a song on the piano")
    assert [node.node.get_content() for node in response.source_nodes] == ["she played a song on the piano"]


def test_filters_modes_and_deleting_a_source_document(store: SearchEngineVectorStore) -> None:
    index = _index(store, store.embed_model)
    english_after = MetadataFilters(
        filters=[
            MetadataFilter(key="lang", value="en"),
            MetadataFilter(key="year", value=2005, operator=FilterOperator.GTE),
        ]
    )
    found = index.as_retriever(similarity_top_k=12, filters=english_after).retrieve("game")
    assert found and all(h.node.metadata["lang"] == "en" and h.node.metadata["year"] >= 2005 for h in found)
    either = MetadataFilters(
        filters=[MetadataFilter(key="year", value=2000), MetadataFilter(key="year", value=2011)],
        condition=FilterCondition.OR,
    )
    assert {h.node.metadata["year"] for h in index.as_retriever(similarity_top_k=12, filters=either).retrieve("x")} == {
        2000,
        2011,
    }
    keyword = store.query(
        VectorStoreQuery(query_str="piano song", similarity_top_k=1, mode=VectorStoreQueryMode.TEXT_SEARCH)
    )
    assert keyword.nodes[0].get_content() == SENTENCES[9]
    index.delete_ref_doc("doc-9")
    assert all(h.node.ref_doc_id != "doc-9" for h in index.as_retriever(similarity_top_k=12).retrieve("piano song"))
    store.delete("never-added")  # nothing stored under it: nothing happens


def test_what_it_cannot_do_is_refused_in_one_line(store: SearchEngineVectorStore) -> None:
    _index(store, store.embed_model)
    with pytest.raises(SearchEngineError, match="give query_str"):
        store.query(VectorStoreQuery(similarity_top_k=1))
    with pytest.raises(SearchEngineError, match="the vector is all zeros"):
        store.query(VectorStoreQuery(query_embedding=[0.0] * 32, similarity_top_k=1))
    with pytest.raises(SearchEngineError, match="filter operator text_match_insensitive is not offered"):
        store.query(
            VectorStoreQuery(
                query_str="x",
                filters=MetadataFilters(
                    filters=[MetadataFilter(key="lang", value="e", operator="text_match_insensitive")]
                ),
            )
        )
    with pytest.raises(SearchEngineError, match="query mode svm is not offered"):
        store.query(VectorStoreQuery(query_str="x", mode=VectorStoreQueryMode.SVM))
    vector = store.embed_model.get_query_embedding("x")
    for mode in (VectorStoreQueryMode.TEXT_SEARCH, VectorStoreQueryMode.HYBRID, VectorStoreQueryMode.MMR):
        with pytest.raises(SearchEngineError, match=f"query mode {mode.value} ranks by the query's text, and this"):
            store.query(VectorStoreQuery(query_embedding=vector, similarity_top_k=1, mode=mode))  # ran dense silently


def test_an_empty_store_answers_nothing_and_nodes_read_back(store: SearchEngineVectorStore) -> None:
    assert store.query(VectorStoreQuery(query_str="anything", similarity_top_k=3)).nodes == []
    _index(store, store.embed_model)
    nodes = store.get_nodes(filters=MetadataFilters(filters=[MetadataFilter(key="year", value=2003)]))
    assert [node.get_content() for node in nodes] == [SENTENCES[3]]


def test_an_index_built_by_searchengine_is_queried_as_it_is(tmp_path: Path, tiny_encoder: Encoder) -> None:
    from searchengine.engine.search_engine import SearchEngine
    from tests.searchengine.server.conftest import documents

    SearchEngine.build(documents(), tmp_path / "built", encoder=tiny_encoder).close()  # no LlamaIndex nodes in it
    store = SearchEngineVectorStore(tmp_path / "built", encoder=tiny_encoder)
    try:
        index = VectorStoreIndex.from_vector_store(store, embed_model=store.embed_model)
        found = index.as_retriever(similarity_top_k=2).retrieve(SENTENCES[4])
        assert found[0].node.get_content() == SENTENCES[4] and found[0].node.node_id == "doc-4"
        assert found[0].node.metadata == {"lang": "de", "year": 2004}
        store.delete("doc-4")  # no LlamaIndex source document of that id (no ref_doc_id field at all): nothing
        assert index.as_retriever(similarity_top_k=1).retrieve(SENTENCES[4])[0].node.node_id == "doc-4"
    finally:
        store.close()


def test_node_ids_given_as_one_string_are_refused_not_read_letter_by_letter(store: SearchEngineVectorStore) -> None:
    """delete_nodes(node_ids="abc") deleted the nodes a, b and c, and kept abc."""
    from llama_index.core.schema import TextNode

    store.add([TextNode(text=text, id_=name) for text, name in [("one", "a"), ("two", "b"), ("three", "abc")]])
    for call in (
        lambda: store.delete_nodes(node_ids="abc"),
        lambda: store.get_nodes(node_ids="abc"),
        lambda: store.query(VectorStoreQuery(query_str="one", node_ids="abc")),
        lambda: store.query(VectorStoreQuery(query_str="one", doc_ids="abc")),
    ):
        with pytest.raises(SearchEngineError, match=r"give a list of ids, not the string 'abc'; write \['abc'\]"):
            call()
    assert [node.node_id for node in store.get_nodes(node_ids=["a", "b", "abc"])] == ["a", "b", "abc"]


def _last_add(store: SearchEngineVectorStore) -> object:
    """The report of the store's last add (the writer thread's engine keeps it)."""
    return store.client.writer.submit(lambda engine: engine.last_report).result()


def test_nodes_embedded_by_its_embed_model_are_not_embedded_again(store: SearchEngineVectorStore) -> None:
    index = _index(store, store.embed_model)
    report = _last_add(store)
    assert report.vectors == len(SENTENCES) and "encoding" not in report.stages  # stored as they came
    found = index.as_retriever(similarity_top_k=1).retrieve("the cat sat on the mat")
    assert found[0].node.get_content() == "the cat sat on the mat"
    vector = store.embed_model.get_query_embedding("the cat sat on the mat")
    by_vector = store.query(VectorStoreQuery(query_embedding=vector, similarity_top_k=2))
    assert by_vector.nodes[0].get_content() == "the cat sat on the mat" and len(by_vector.nodes) == 2


def test_nodes_embedded_by_another_model_are_embedded_with_the_index_model(store: SearchEngineVectorStore) -> None:
    index = _index(store, MockEmbedding(embed_dim=32))  # the index's size, another space: its vectors are not kept
    report = _last_add(store)
    assert report.vectors == len(SENTENCES) and "encoding" in report.stages
    found = store.query(VectorStoreQuery(query_str="the cat sat on the mat", similarity_top_k=1))
    assert found.nodes[0].get_content() == "the cat sat on the mat" and found.similarities[0] == pytest.approx(1, abs=1e-5)
    assert index is not None


def test_nin_filters_and_clear(store: SearchEngineVectorStore) -> None:
    """nin raised 'not offered', and clear() (LlamaIndex's: an empty store) was not implemented."""
    index = _index(store, store.embed_model)
    outside = MetadataFilters(
        filters=[MetadataFilter(key="year", value=[2000, 2001, 2002], operator=FilterOperator.NIN)]
    )
    found = index.as_retriever(similarity_top_k=len(SENTENCES), filters=outside).retrieve("x")
    assert sorted(h.node.metadata["year"] for h in found) == [2000 + n for n in range(3, len(SENTENCES))]
    either = MetadataFilters(
        filters=[
            MetadataFilter(key="year", value=[2003], operator=FilterOperator.NIN),
            MetadataFilter(key="lang", value="de"),
        ],
        condition=FilterCondition.OR,
    )
    found = index.as_retriever(similarity_top_k=len(SENTENCES), filters=either).retrieve("x")
    assert sorted(h.node.metadata["year"] for h in found) == [2000 + n for n in range(len(SENTENCES)) if n != 3]
    store.clear()
    assert store.query(VectorStoreQuery(query_str="the cat sat on the mat", similarity_top_k=3)).nodes == []
    assert store.client.reader.run(len).result() == 0
    index.insert(Document(text="a new start", doc_id="fresh"))
    assert [hit.node.get_content() for hit in index.as_retriever(similarity_top_k=3).retrieve("a new start")] == [
        "a new start"
    ]


def test_the_mmr_query_mode_diversifies(store: SearchEngineVectorStore) -> None:
    _index(store, store.embed_model)
    plain = store.query(VectorStoreQuery(query_str="the cat sat on the mat", similarity_top_k=3))
    query = VectorStoreQuery(query_str="the cat sat on the mat", similarity_top_k=3, mode=VectorStoreQueryMode.MMR)
    alike = store.query(query, mmr_prefetch_k=3)  # the three nearest: the same documents, relevance first
    assert alike.ids[0] == plain.ids[0] and set(alike.ids) == set(plain.ids)
    query.mmr_threshold = 1.0  # relevance alone: the plain order
    assert store.query(query, mmr_prefetch_factor=4).ids == plain.ids


def test_text_match_and_is_empty_filters_match_as_llamaindex_reads_them(store: SearchEngineVectorStore) -> None:
    """text_match (a piece of a text field, case-sensitive) and is_empty (missing, null, "" or []) keep exactly the
    nodes LlamaIndex's own filter function (SimpleVectorStore's) keeps."""
    from llama_index.core.vector_stores.utils import build_metadata_filter_fn

    notes: list[dict] = [
        {"note": "a Cat on a mat", "tags": ["x"]},
        {"note": "cats", "tags": []},
        {"note": "", "tags": ["y"]},
        {"note": None},
        {"tags": ["Cat"]},
    ]
    documents = [Document(text=SENTENCES[n], doc_id=f"n{n}", metadata=metadata) for n, metadata in enumerate(notes)]
    context = StorageContext.from_defaults(vector_store=store)
    index = VectorStoreIndex.from_documents(documents, storage_context=context, embed_model=store.embed_model)
    metadata_of = {f"n{n}": metadata for n, metadata in enumerate(notes)}
    for key, operator, value in (
        ("note", FilterOperator.TEXT_MATCH, "Cat"),
        ("note", FilterOperator.TEXT_MATCH, "at"),
        ("note", FilterOperator.IS_EMPTY, None),
        ("tags", FilterOperator.IS_EMPTY, None),
        ("missing", FilterOperator.IS_EMPTY, None),
    ):
        filters = MetadataFilters(filters=[MetadataFilter(key=key, value=value, operator=operator)])
        found = index.as_retriever(similarity_top_k=len(notes), filters=filters).retrieve("a cat")
        expected = build_metadata_filter_fn(lambda node_id: metadata_of[node_id], filters)
        assert sorted(hit.node.ref_doc_id for hit in found) == sorted(n for n in metadata_of if expected(n)), (key, value)
    with pytest.raises(SearchEngineError, match="'includes' matches text, but 'tags' holds list"):
        filters = MetadataFilters(filters=[MetadataFilter(key="tags", value="x", operator=FilterOperator.TEXT_MATCH)])
        index.as_retriever(filters=filters).retrieve("a cat")
