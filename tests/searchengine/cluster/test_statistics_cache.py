"""StatisticsCache: a shard's term statistics kept under the sequence they were counted at, given back for a query
whose words were all counted at the shard's current sequence, and dropped when the shard's sequence moves on."""

from __future__ import annotations

from searchengine.indexer.query.global_bm25 import TermStatistics

from searchengine.cluster.statistics_cache import StatisticsCache


def counted(words: dict[str, int], documents: int = 10) -> TermStatistics:
    """A shard's statistics for single-token `words`, each held by the given number of documents."""
    return TermStatistics(
        documents=documents,
        rows=documents,
        tokens=5 * documents,
        tokens_of={word: (word,) for word in words},
        token_documents=dict(words),
        phrase_documents=dict(words),
    )


def test_kept_words_come_back_for_their_sequence_only() -> None:
    cache = StatisticsCache()
    cache.keep(0, 3, counted({"cat": 2, "mat": 1}))
    assert cache.known(0, 3, ["cat"]) == counted({"cat": 2})
    assert cache.known(0, 3, ["cat", "dog"]) is None, "a word not counted yet: the shard must be asked"
    assert cache.known(0, 4, ["cat"]) is None, "a write since: the shard must be asked"
    assert cache.known(1, 3, ["cat"]) is None, "another shard's"


def test_words_counted_at_one_sequence_add_up_and_a_new_sequence_starts_afresh() -> None:
    cache = StatisticsCache()
    cache.keep(0, 3, counted({"cat": 2}))
    cache.keep(0, 3, counted({"dog": 4}))
    assert cache.known(0, 3, ["dog", "cat"]) == counted({"dog": 4, "cat": 2})
    cache.keep(0, 4, counted({"dog": 5}, documents=11))
    assert cache.known(0, 4, ["cat"]) is None
    assert cache.known(0, 4, ["dog"]) == counted({"dog": 5}, documents=11)


def test_a_phrase_keeps_its_tokens_and_the_bound_on_words_starts_afresh() -> None:
    cache = StatisticsCache(max_words=2)
    phrase = TermStatistics(10, 10, 50, {"e-mail": ("e", "mail")}, {"e": 3, "mail": 2}, {"e-mail": 1})
    cache.keep(0, 1, phrase)
    assert cache.known(0, 1, ["e-mail"]) == phrase
    cache.keep(0, 1, counted({"cat": 2}))
    cache.keep(0, 1, counted({"dog": 4}))  # two words kept already: the third starts afresh
    assert cache.known(0, 1, ["e-mail"]) is None
    assert cache.known(0, 1, ["dog"]) == counted({"dog": 4})
