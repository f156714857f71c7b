"""A user's text as an FTS5 match expression: quoted words, OR-ed, never FTS5 syntax."""

from __future__ import annotations

from searchengine.indexer.keyword_query import keyword_terms, match_expression


def test_terms_are_the_distinct_lower_cased_words_in_order() -> None:
    assert keyword_terms("Cats, cats and DOGS: 2 dogs!") == ["cats", "and", "dogs", "2"]


def test_words_of_any_script_are_kept() -> None:
    assert keyword_terms("naïve café 東京 straße") == ["naïve", "café", "東京", "straße"]


def test_each_word_is_a_quoted_string_and_the_words_are_or_ed() -> None:
    assert (
        match_expression('cat* NEAR("dog" -bird) AND fish') == '"cat" OR "near" OR "dog" OR "bird" OR "and" OR "fish"'
    )


def test_a_text_without_words_has_no_expression() -> None:
    assert match_expression(' "*" -- (^) ') is None
