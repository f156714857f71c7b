"""The LangChain store against LangChain's own published standard tests (langchain-tests), and as a retriever."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_tests.integration_tests import VectorStoreIntegrationTests
from typer.testing import CliRunner

from searchengine.cli import app
from searchengine.encoding.encoder import Encoder
from searchengine.errors import SearchEngineError
from searchengine.integrations.langchain import SearchEngineVectorStore
from tests.conftest import SENTENCES


class TestSearchEngineVectorStore(VectorStoreIntegrationTests):
    """Every standard test, sync and async (run by pytest-asyncio in auto mode, as LangChain runs them); none is
    skipped. The store embeds with the index's model (here the
    tiny test model) rather than the suite's `get_embeddings()` fake: see the module's docstring for why."""

    @pytest.fixture
    def vectorstore(self, tmp_path: Path, tiny_encoder: Encoder) -> Iterator[SearchEngineVectorStore]:
        store = SearchEngineVectorStore(tmp_path / "index", encoder=tiny_encoder)
        yield store
        store.close()


@pytest.fixture
def store(tmp_path: Path, tiny_encoder: Encoder) -> Iterator[SearchEngineVectorStore]:
    with SearchEngineVectorStore(tmp_path / "index", encoder=tiny_encoder) as store:
        store.add_texts(SENTENCES, [{"lang": "en" if n % 2 else "de", "n": n} for n in range(len(SENTENCES))])
        yield store


def test_a_retriever_over_the_store_finds_by_meaning_and_filters(store: SearchEngineVectorStore) -> None:
    retriever = store.as_retriever(search_kwargs={"k": 2, "filter": {"lang": "en"}})
    found = retriever.invoke("the cat sat on the mat")
    assert found[0].page_content == "the cat sat on the mat" and all(d.metadata["lang"] == "en" for d in found)
    assert len(found) == 2


def test_hybrid_and_keyword_modes_and_relevance_scores(store: SearchEngineVectorStore) -> None:
    assert store.similarity_search("piano song", k=1, mode="keyword")[0].page_content == SENTENCES[9]
    assert store.similarity_search("piano song", k=1, mode="hybrid")[0].page_content == SENTENCES[9]
    scored = store.similarity_search_with_relevance_scores(SENTENCES[3], k=3)
    assert scored[0][0].page_content == SENTENCES[3] and scored[0][1] == pytest.approx(1.0, abs=1e-5)
    assert all(0 <= score <= 1 for _document, score in scored)


def test_embeddings_are_the_vectors_it_searches_with(store: SearchEngineVectorStore) -> None:
    vector = store.embeddings.embed_query(SENTENCES[5])
    same = store.similarity_search_with_score(SENTENCES[5], k=1)[0]
    stored = store.embeddings.embed_documents([same[0].page_content])[0]
    assert sum(a * b for a, b in zip(vector, stored)) == pytest.approx(same[1], abs=1e-5)


def test_an_outside_embedding_model_is_refused_with_the_reason(tmp_path: Path) -> None:
    from langchain_core.embeddings import DeterministicFakeEmbedding

    with pytest.raises(SearchEngineError, match="embeds with its own model"):
        SearchEngineVectorStore.from_texts(["x"], DeterministicFakeEmbedding(size=6), index_dir=tmp_path / "i")


def test_from_texts_and_documents_keep_ids_and_metadata(tmp_path: Path, tiny_encoder: Encoder) -> None:
    store = SearchEngineVectorStore.from_texts(
        ["alpha note", "beta note"],
        None,
        [{"a": 1}, {"b": [1, 2]}],
        ids=["x", "y"],
        index_dir=tmp_path / "i",
        encoder=tiny_encoder,
    )
    try:
        assert store.get_by_ids(["y", "nope", "x"]) == [
            Document(page_content="alpha note", metadata={"a": 1}, id="x"),
            Document(page_content="beta note", metadata={"b": [1, 2]}, id="y"),
        ]
    finally:
        store.close()


def test_searches_it_does_not_offer_are_refused_in_one_line(store: SearchEngineVectorStore) -> None:
    with pytest.raises(SearchEngineError, match="lambda_mult must be a number from 0 to 1"):
        store.max_marginal_relevance_search("cat", lambda_mult=2)
    with pytest.raises(SearchEngineError, match="the vector is all zeros"):
        store.similarity_search_by_vector([0.0] * 32)
    with pytest.raises(SearchEngineError, match="the vector has 8 numbers, but this index's vectors have 32"):
        store.similarity_search_by_vector([0.5] * 8)
    with pytest.raises(SearchEngineError, match="unknown option colour"):
        store.similarity_search("cat", colour="red")
    store.mode = "hybrid"
    assert store.similarity_search("piano song", k=1)[0].page_content == SENTENCES[9]
    with pytest.raises(SearchEngineError, match="relevance scores are cosines"):
        store.similarity_search_with_relevance_scores("cat")


def test_ids_given_as_one_string_are_refused_not_read_letter_by_letter(store: SearchEngineVectorStore) -> None:
    """delete("abc") deleted the documents a, b and c, and kept abc."""
    store.add_texts(["first", "second", "third", "fourth"], ids=["a", "b", "c", "abc"])
    for call in (lambda: store.delete("abc"), lambda: store.get_by_ids("abc"), lambda: store.add_texts(["x"], ids="a")):
        with pytest.raises(SearchEngineError, match=r"give a list of ids, not the string 'a(bc)?'; write \['a(bc)?'\]"):
            call()
    assert [document.id for document in store.get_by_ids(["a", "b", "c", "abc"])] == ["a", "b", "c", "abc"]


def test_a_text_that_is_not_a_str_is_refused_in_one_line_and_no_metadata_is_an_empty_one(
    store: SearchEngineVectorStore,
) -> None:
    """add_texts([5]) raised AttributeError from the tokenizer; metadatas=[None] raised TypeError."""
    before = len(store.get_by_ids(["kept"]))
    with pytest.raises(SearchEngineError, match="text number 1 is a int, not a str"):
        store.add_texts([5], ids=["kept"])  # type: ignore[list-item]
    assert len(store.get_by_ids(["kept"])) == before == 0
    store.add_texts(["a text without metadata"], [None], ids=["plain"])  # type: ignore[list-item]
    [document] = store.get_by_ids(["plain"])
    assert document.page_content == "a text without metadata" and document.metadata == {}


def _found(store: SearchEngineVectorStore, where: dict) -> list[int]:
    """The `n` of every document a filter lets through, in order."""
    return sorted(document.metadata["n"] for document in store.similarity_search("x", k=len(SENTENCES), filter=where))


def test_filters_take_the_operators_chroma_pgvector_and_pinecone_take(store: SearchEngineVectorStore) -> None:
    """{"n": {"$in": [1, 2]}} raised: a filter dict was read as equality only."""
    every = range(len(SENTENCES))
    assert _found(store, {"n": {"$in": [1, 2]}}) == [1, 2]
    assert _found(store, {"n": {"$nin": [1, 2]}}) == [n for n in every if n not in (1, 2)]
    assert _found(store, {"n": {"$gte": 3, "$lt": 5}}) == [3, 4]
    assert _found(store, {"n": {"$gt": 3, "$lte": 5}}) == [4, 5]
    assert _found(store, {"n": {"$eq": 6}}) == [6] and _found(store, {"n": 6}) == [6]
    assert _found(store, {"n": {"$ne": 0}}) == list(every)[1:]
    assert _found(store, {"$and": [{"lang": "en"}, {"n": {"$lt": 4}}]}) == [1, 3]
    assert _found(store, {"$or": [{"n": {"$lt": 2}}, {"n": 5}]}) == [0, 1, 5]
    assert _found(store, {"lang": "de", "$or": [{"n": 0}, {"$or": [{"n": 2}, {"n": {"$in": [4, 5]}}]}]}) == [0, 2, 4]
    retriever = store.as_retriever(search_kwargs={"k": 3, "filter": {"n": {"$in": [7, 8]}}})
    assert sorted(document.metadata["n"] for document in retriever.invoke("cat")) == [7, 8]


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ({"n": {"$regex": "1"}}, r"unknown filter operator '\$regex' on 'n'; use one of \$eq"),
        ({"$not": {"n": 1}}, r"unknown filter operator '\$not' outside a field"),
        ({"n": {"$in": 1}}, r"\$in on 'n' takes a list of values, not 1"),
        ({"$or": {"n": 1}}, r"\$or takes a non-empty list of filter dicts"),
        ({"$or": [{"n": 1, "lang": "en"}, {"n": 2}]}, r"each branch of \$or must be one condition, but .* holds 2"),
        ({"n": {}}, r"the filter on 'n' is an empty dict"),
        ({"n": {"$gt": "x"}}, r"compares text with the field 'n'"),
    ],
)
def test_a_filter_it_cannot_read_is_refused_in_one_line(
    store: SearchEngineVectorStore, where: dict, message: str
) -> None:
    with pytest.raises(SearchEngineError, match=message) as caught:
        store.similarity_search("x", filter=where)
    assert "\n" not in str(caught.value)


def indexed_by_the_cli(tmp_path: Path, tiny_model: Path) -> Path:
    """A corpus file of four sentences without ids, indexed by `searchengine index` into tmp_path/i; returns it."""
    corpus = tmp_path / "notes.txt"
    corpus.write_text("\n".join(SENTENCES[:4]) + "\n", encoding="utf-8")
    built = CliRunner().invoke(app, ["index", str(corpus), "-d", str(tmp_path / "i"), "--model", str(tiny_model), "-q"])
    assert built.exit_code == 0, built.output
    return corpus


def test_documents_indexed_by_the_cli_come_back_with_their_id_source_and_line(
    tmp_path: Path, tiny_model: Path, tiny_encoder: Encoder
) -> None:
    """They came back with id=None and empty metadata: no external id, and their origin left out."""
    corpus = indexed_by_the_cli(tmp_path, tiny_model)
    with SearchEngineVectorStore(tmp_path / "i", encoder=tiny_encoder) as store:
        [found] = store.similarity_search(SENTENCES[2], k=1)
        assert found.page_content == SENTENCES[2] and found.id is not None
        assert found.metadata == {"source": str(corpus), "line": 3}
        assert store.get_by_ids([found.id, "999"]) == [found]
        store.add_texts(["own metadata wins"], [{"source": "mine"}], ids=["x"])
        assert store.get_by_ids(["x"])[0].metadata == {"source": "mine"}
        store.delete([found.id])
        assert store.get_by_ids([found.id]) == []
        assert SENTENCES[2] not in [document.page_content for document in store.similarity_search("x", k=10)]


def test_similarity_search_by_vector_takes_the_vectors_of_its_embeddings(store: SearchEngineVectorStore) -> None:
    store.add_texts(SENTENCES, [{"n": n} for n in range(len(SENTENCES))], ids=[f"s{n}" for n in range(len(SENTENCES))])
    vector = store.embeddings.embed_query("the cat sat on the mat")
    by_vector = store.similarity_search_by_vector(vector, k=3)
    assert [d.id for d in by_vector] == [d.id for d in store.similarity_search("the cat sat on the mat", k=3)]
    assert by_vector[0].page_content == "the cat sat on the mat"
    filtered = store.similarity_search_by_vector(vector, k=2, filter=["n>=5"])
    assert len(filtered) == 2 and all(d.metadata["n"] >= 5 for d in filtered)


def test_max_marginal_relevance_picks_near_and_unlike_documents(tmp_path: Path, tiny_encoder: Encoder) -> None:
    from langchain_core.vectorstores.utils import maximal_marginal_relevance

    texts = [*SENTENCES, "the cat sat on the mat.", "the cat sat on a mat", "a cat sat on the mat"]
    with SearchEngineVectorStore(tmp_path / "mmr", encoder=tiny_encoder) as store:
        store.add_texts(texts, ids=[f"t{n}" for n in range(len(texts))])
        query = "the cat sat on the mat"
        plain = store.similarity_search(query, k=4)
        diverse = store.max_marginal_relevance_search(query, k=4, fetch_k=10, lambda_mult=0.3)
        # LangChain's own MMR over the same ten candidates and their vectors picks the same documents
        candidates = store.similarity_search(query, k=10)
        vectors = store.embeddings.embed_documents([d.page_content for d in candidates])
        picks = maximal_marginal_relevance(np.asarray(store.embeddings.embed_query(query)), vectors, 0.3, 4)
        assert [d.id for d in diverse] == [candidates[i].id for i in picks]
        by_vector = store.max_marginal_relevance_search_by_vector(
            store.embeddings.embed_query(query), k=4, fetch_k=10, lambda_mult=0.3
        )  # LangChain's own raised NotImplementedError
        assert by_vector == diverse
        with pytest.raises(SearchEngineError, match="lambda_mult"):
            store.max_marginal_relevance_search_by_vector(store.embeddings.embed_query(query), lambda_mult=2)
        assert [d.id for d in store.as_retriever(search_type="mmr", search_kwargs={"k": 2}).invoke(query)][:1] == [
            plain[0].id
        ]


def test_texts_given_as_one_string_or_only_blank_are_refused_and_a_blank_one_among_others_is_left_out(
    store: SearchEngineVectorStore,
) -> None:
    """add_texts("abc") added the documents a, b and c, and ["  "] stored a blank document. A blank text among
    others (a loader's blank PDF page) is left out, as the index leaves it, and the others are added; its id is
    returned with theirs, as LlamaIndex's store returns a textless node's."""
    before = len(store.similarity_search("x", k=100))
    with pytest.raises(SearchEngineError, match=r"texts is a list of str, not one str: write \[text\]"):
        store.add_texts("abc")  # type: ignore[arg-type]
    for texts in ([""], ["  ", "\n"]):
        with pytest.raises(SearchEngineError, match="every text given is blank, and the index stores no blank text"):
            store.add_texts(texts, ids=[f"blank-{n}" for n in range(len(texts))])
    assert len(store.similarity_search("x", k=100)) == before
    assert store.add_texts(["a fine text", " "], ids=["fine", "blank"]) == ["fine", "blank"]
    assert [document.id for document in store.get_by_ids(["fine", "blank"])] == ["fine"]


def test_relevance_scores_are_refused_for_a_call_in_another_mode(store: SearchEngineVectorStore) -> None:
    """mode="hybrid" on the call (not the store) gave fused scores mapped as if they were cosines."""
    for mode in ("hybrid", "keyword"):
        with pytest.raises(SearchEngineError, match=f"relevance scores are cosines, .* this call asks for {mode} mode"):
            store.similarity_search_with_relevance_scores("piano", k=2, mode=mode)
    assert store.similarity_search_with_relevance_scores("piano", k=2, mode="dense")


async def test_relevance_scores_are_refused_for_an_async_call_in_another_mode(store: SearchEngineVectorStore) -> None:
    with pytest.raises(SearchEngineError, match="this call asks for hybrid mode"):
        await store.asimilarity_search_with_relevance_scores("piano", k=2, mode="hybrid")


def test_mmr_gives_documents_indexed_without_an_id_their_id_and_origin(
    tmp_path: Path, tiny_model: Path, tiny_encoder: Encoder
) -> None:
    """max_marginal_relevance_search gave them id=None and no source or line, unlike similarity_search."""
    corpus = indexed_by_the_cli(tmp_path, tiny_model)
    with SearchEngineVectorStore(tmp_path / "i", encoder=tiny_encoder) as store:
        [plain] = store.similarity_search(SENTENCES[2], k=1)
        [diverse] = store.max_marginal_relevance_search(SENTENCES[2], k=1, fetch_k=4)
        assert diverse == plain and diverse.metadata == {"source": str(corpus), "line": 3}
