"""A user's text as an FTS5 match expression: quoted words, OR-ed, never FTS5 syntax, without the words most
documents hold."""

from __future__ import annotations

from pathlib import Path

import pytest
from searchengine.indexer.query import keyword_query
from searchengine.indexer.query.keyword_query import MAX_WORD_REPEATS, keyword_terms, match_expression
from searchengine.indexer.tables.keyword_table import TABLE as KEYWORD_TABLE
from searchengine.indexer.tables.keyword_table import TOKENIZER as KEYWORD_TOKENIZER
from searchengine.indexer.tables.store import Document, DocumentStore


@pytest.fixture
def store(tmp_path: Path):
    """Six documents: 'the' in five, 'cat' (and 'cats') in three, 'dog' in two, 'naïve' in one."""
    store = DocumentStore(tmp_path / "documents.db", writable=True)
    texts = ["the cat sat", "the cats ran", "the dog and the cat", "the dog", "the naïve end", "stock fell"]
    store.add([Document(text) for text in texts])
    yield store
    store.close()


def _expression(store: DocumentStore, text: str, **caps: int) -> str | None:
    return match_expression(store.db.conn, text, KEYWORD_TABLE, KEYWORD_TOKENIZER, store.count(), **caps)


def test_terms_are_the_lower_cased_words_in_order_with_their_counts() -> None:
    terms = keyword_terms("Cats, cats and DOGS: 2 dogs!")
    assert list(terms.items()) == [("cats", 2), ("and", 1), ("dogs", 2), ("2", 1)]


def test_words_of_any_script_are_kept() -> None:
    assert list(keyword_terms("naïve café 東京 straße")) == ["naïve", "café", "東京", "straße"]


def test_a_repeated_word_is_or_ed_as_often_as_the_query_holds_it(store: DocumentStore) -> None:
    assert _expression(store, "Dog stock DOG dog") == '"dog" OR "dog" OR "dog" OR "stock"'
    many = _expression(store, "dog " * (MAX_WORD_REPEATS + 50) + "stock")
    assert many == " OR ".join(['"dog"'] * MAX_WORD_REPEATS + ['"stock"'])


def test_past_the_phrase_budget_each_word_counts_fewer_times_down_to_once(store: DocumentStore) -> None:
    query = "dog dog dog stock stock stock naive naive naive fell fell fell"
    expected = '"dog" OR "dog" OR "stock" OR "stock" OR "naive" OR "naive" OR "fell" OR "fell"'
    assert _expression(store, query, max_phrases=8) == expected  # 3 of each is 12 phrases; 2 of each is 8
    # even once each is 4 phrases: every word stays
    assert _expression(store, query, max_phrases=3) == '"dog" OR "stock" OR "naive" OR "fell"'


def test_a_query_searches_at_most_its_max_query_words_rarest_words(store: DocumentStore) -> None:
    assert keyword_query.MAX_QUERY_WORDS == 1024  # Lucene's default clause limit
    words = [f"w{i}" for i in range(1100)]  # held by no document: all equally rare, so the first 1,024 stay
    assert _expression(store, " ".join(words)) == " OR ".join(f'"{word}"' for word in words[:1024])


def test_bm25_weighs_a_word_by_its_count_in_the_query(tmp_path: Path) -> None:
    store = DocumentStore(tmp_path / "weights.db", writable=True)
    store.add([Document(text) for text in ["owl nest", "lark song", "filler one", "filler two"]])
    # 'owl' and 'lark' are equally rare; the query names the lark three times and the owl once
    (best, _), (second, _) = store.keyword.search("owl lark, lark, lark", 2)
    found = store.get([best, second])
    assert (found[best].text, found[second].text) == ("lark song", "owl nest")
    store.close()


def test_each_word_is_a_quoted_string_and_the_words_are_or_ed(store: DocumentStore) -> None:
    assert _expression(store, 'dog* NEAR("naive" -stock) AND fell') == (
        '"dog" OR "near" OR "naive" OR "stock" OR "fell"'  # 'and', an English stop word, is left out (below)
    )


def test_words_most_documents_hold_are_left_out_by_their_stem(store: DocumentStore) -> None:
    assert _expression(store, "The dog") == '"dog"'  # 'the' is in 5 of 6 documents
    assert _expression(store, "cats dog") == '"cats" OR "dog"'  # cat/cats: 3 of 6, not more than half
    store.add([Document("a cat nap")])
    assert _expression(store, "cats dog") == '"dog"'  # now 4 of 7 hold the stem 'cat'


def test_a_text_of_common_words_only_keeps_them_all(store: DocumentStore) -> None:
    assert _expression(store, "the THE") == '"the" OR "the"'


def test_a_text_without_words_has_no_expression(store: DocumentStore) -> None:
    assert _expression(store, ' "*" -- (^) ') is None


def test_a_read_only_store_stems_in_its_temp_schema(store: DocumentStore, tmp_path: Path) -> None:
    reader = DocumentStore(tmp_path / "documents.db")
    assert _expression(reader, "the dog") == '"dog"' and _expression(reader, "the dog") == '"dog"'
    reader.close()


def test_a_long_query_also_leaves_out_words_a_tenth_of_the_documents_hold(tmp_path: Path) -> None:
    store = DocumentStore(tmp_path / "long.db", writable=True)
    # 'cat' in 2 of 20 documents (10%, kept), 'dog' in 3 (15%, dropped from a long query only), 'owl' in one.
    texts = ["cat one", "cat two", "dog one", "dog two", "dog three", "owl"] + [f"filler {i}" for i in range(14)]
    store.add([Document(text) for text in texts])
    fillers = " ".join(f"word{i}" for i in range(31))  # held by no document
    assert _expression(store, f"cat dog owl {fillers[:20]}").startswith('"cat" OR "dog" OR "owl"')  # short: all
    long_query = _expression(store, f"cat dog owl {fillers}")
    assert '"dog"' not in long_query and long_query.startswith('"cat" OR "owl"')  # 34 distinct words
    store.close()


def test_english_stop_words_are_left_out_of_a_query_with_other_words(store: DocumentStore) -> None:
    # 'and' is in one document of six and 'a'/'of'/'was' in none: only the stop list leaves them out
    assert _expression(store, "a dog and a cat of what was") == '"dog" OR "cat" OR "what"'
    assert _expression(store, "Naïve AND Stock") == '"naïve" OR "stock"'


def test_a_query_of_stop_words_only_searches_them_all(store: DocumentStore) -> None:
    assert _expression(store, "to be or not to be") == '"to" OR "to" OR "be" OR "be" OR "or" OR "not"'
    assert _expression(store, "and") == '"and"'
    (found,) = store.keyword.search("AND", 10)  # a word here, never the FTS5 operator
    assert store.get([found[0]])[found[0]].text == "the dog and the cat"
