"""A user's query text as an SQLite FTS5 match expression: its words, each quoted as an FTS5 string, OR-ed.

Quoting makes every word a plain term, so nothing the user types is FTS5 syntax: quotes, `*`, `^`, `:`, `-`,
parentheses and the words AND, OR, NOT and NEAR are searched for (or dropped, for punctuation), never obeyed.
OR-ing the words lets BM25 rank documents by how many of them they hold, as a keyword search engine does.

A word the query holds several times is OR-ed that many times, up to MAX_WORD_REPEATS: FTS5's bm25() adds up
every phrase of the expression, so this weighs each word by its count in the query, as Lucene's and Anserini's
BM25 do. It raised keyword and hybrid nDCG@10 on ArguAna (paragraph-long queries) and left NFCorpus, whose short
queries rarely repeat a word, level (docs/retrieval.md#a-word-the-query-repeats-counts-each-time). Words are
counted as spelled (lower-cased), so "cat" and "cats" count apart, as they did when each counted once.

Both caps bound the cost, which grows faster than the number of phrases. So past MAX_REPEATED_PHRASES phrases each
word counts fewer times, down to once, as a query pasted from a whole document does; no ArguAna query reaches it,
and on ArguAna a per-word cap of 4, 8 or none gave the same keyword nDCG@10 (both measured in the same section).

Words that more than half of the documents hold are left out (unless every word is one): FTS5's BM25 gives them an
IDF of 1e-6 (its formula turns negative there and is clamped), so they move no score beyond the sixth decimal,
while scoring the many documents that hold them is most of a query's cost. Every other word is searched for, also
in a query as long as a paragraph (but see long queries and stop words below): keeping only the 32 rarest words of
each query cost ArguAna (paragraph-long queries) several points of keyword nDCG@10
(docs/retrieval.md#every-word-of-a-long-query-counts). MAX_QUERY_WORDS keeps the 1,024 rarest, Lucene's default
limit on the clauses of a query, which no ArguAna query reaches but a whole document pasted as a query can, at a
cost measured in the same section.

A long query (more than LONG_QUERY_WORDS distinct words, e.g. a paragraph) also leaves out the words more than a
tenth of the documents hold. Each is one of dozens of words there, and scoring the many documents that hold them
is most of such a query's time: on ArguAna (paragraph queries) this brought hybrid search much nearer the dense
query time at the same keyword nDCG@10. Short queries keep them: on NFCorpus (a few words a query) the same cut
cost keyword nDCG@10 (both measured in docs/retrieval.md#query-time-cost).

English function words (STOP_WORDS: Lucene's English stop set, "a", "the", "of", "that", "was", ...) are left
out of every query that has other words. On many short documents they are what makes a query expensive: in
98,000 Wikipedia sentences "a" or "that" is in fewer than half of them, so the half rule keeps it, and a median
query matched half the sentences, every one scored. Leaving them out made the keyword side and hybrid search
much faster there, for a few hundredths of a point of nDCG@10 on NFCorpus and no change on ArguAna
(docs/retrieval.md#english-stop-words-and-a-corpus-of-many-short-documents). The list is Lucene's as it is, not
tuned on those sets; it touches English words only, and a query of nothing else ("to be or not to be") still
searches them all.

How many documents hold a word is read from the index itself, for the word's stem as the index's tokenizer makes
it: the words go through a scratch FTS5 table with that tokenizer in the connection's temp schema, which a
read-only connection may write too."""

from __future__ import annotations

import math
import re
import sqlite3
from collections import Counter
from dataclasses import dataclass

BM25_K1 = 1.2
"""FTS5 bm25()'s k1 (b is 0.75): a phrase adds at most IDF * (k1 + 1) to a document's score."""
MAX_QUERY_WORDS: int | None = 1024
"""The most distinct words a keyword query searches for, its rarest ones; None for all (see the module's
docstring)."""
COMMON_WORD_SHARE = 0.5
"""A word held by more than this share of the documents is left out of a query (see the module's docstring)."""
LONG_QUERY_WORDS = 32
"""A query of more distinct words than this is a long one (a paragraph pasted as a query)."""
LONG_QUERY_COMMON_WORD_SHARE = 0.1
"""In a long query, a word held by more than this share of the documents is left out (see the module's
docstring)."""
MAX_WORD_REPEATS = 8
"""A word is OR-ed into the expression as many times as the query holds it, up to this many (see the module's
docstring)."""
MAX_REPEATED_PHRASES = 512
"""Repeats are OR-ed only while the expression stays within this many phrases; past it each word counts fewer
times, down to once (see the module's docstring)."""
STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these they "
    "this to was will with".split()
)
"""English function words left out of a query that has other words: Lucene's English stop set (EnglishAnalyzer's
default), taken as it is (see the module's docstring)."""
_WORD = re.compile(r"\w+")
"""A run of letters, digits and underscores (any script); the FTS5 tokenizer splits it further where it differs."""
_WORDS = "keyword_query_words"
_STEMS = "keyword_query_stems"
_VOCABULARY = "keyword_index_vocabulary"


def keyword_terms(text: str) -> Counter[str]:
    """The words of `text`, lower-cased, each with how many times `text` holds it, in the order they first
    appear."""
    return Counter(word.lower() for word in _WORD.findall(text))


def match_expression(
    connection: sqlite3.Connection,
    text: str,
    index_table: str,
    tokenizer: str,
    documents: int,
    holding: dict[str, int] | None = None,
    *,
    max_phrases: int = MAX_REPEATED_PHRASES,
) -> str | None:
    """The FTS5 MATCH expression over `index_table` (of `documents` rows, made with `tokenizer`) that finds the
    documents holding any of the words of `text` it searches for (see the module's docstring); None when `text`
    has no words. `holding` keeps how many documents hold each stem looked up, for later calls on an index that
    does not change; `max_phrases` is the phrase budget of the repeats (MAX_REPEATED_PHRASES)."""
    terms = searched_terms(connection, text, index_table, tokenizer, documents, holding, max_phrases=max_phrases)
    if not terms:
        return None
    return " OR ".join(f'"{term.word}"' for term in terms for _ in range(term.repeats))  # \w+: no quote


def bm25_bound(
    connection: sqlite3.Connection,
    text: str,
    index_table: str,
    tokenizer: str,
    documents: int,
    holding: dict[str, int] | None = None,
) -> float:
    """The most BM25 score any document can reach for `text` (0.0 for a text without words): each phrase of its
    match expression adds IDF * tf * (k1 + 1) / (tf + k1 * length_norm), which tends to IDF * (k1 + 1) as tf grows,
    so the sum of IDF * (k1 + 1) over the phrases bounds every document's score. It depends only on the query's
    words and how many documents hold each, so a score divided by it means the same from one query to the next
    (hybrid search's bounded fusion, searchengine.engine.fusion). IDF is FTS5's: log((N - n + 0.5) / (n + 0.5)),
    1e-6 where that is not positive."""
    terms = searched_terms(connection, text, index_table, tokenizer, documents, holding)
    return sum(term.repeats * fts5_idf(documents, term.held) * (BM25_K1 + 1.0) for term in terms)


def fts5_idf(documents: int, held: int) -> float:
    """FTS5 bm25()'s IDF of a phrase that `held` of `documents` rows hold."""
    idf = math.log((documents - held + 0.5) / (held + 0.5))
    return idf if idf > 0 else 1e-6


@dataclass(frozen=True)
class SearchedTerm:
    """A word of a query as the keyword search looks for it."""

    word: str
    repeats: int
    """How many times it is OR-ed into the match expression (its count in the query, capped)."""
    held: int
    """How many documents hold it (its rarest stem's count)."""


def searched_terms(
    connection: sqlite3.Connection,
    text: str,
    index_table: str,
    tokenizer: str,
    documents: int,
    holding: dict[str, int] | None = None,
    *,
    max_phrases: int = MAX_REPEATED_PHRASES,
) -> list[SearchedTerm]:
    """The words of `text` the keyword search looks for, in the order they first appear, after the cuts of the
    module's docstring (repeats within `max_phrases` phrases); empty when `text` has no words."""
    counts = keyword_terms(text)
    words = list(counts)
    if not words:
        return []
    held = _documents_holding(connection, words, index_table, tokenizer, {} if holding is None else holding)
    return select_terms(counts, held, documents, max_phrases=max_phrases)


def select_terms(
    counts: Counter[str], held: list[int], documents: int, *, max_phrases: int = MAX_REPEATED_PHRASES
) -> list[SearchedTerm]:
    """The cuts of the module's docstring over a query's words (`counts`, from keyword_terms) given how many of the
    index's `documents` hold each (`held`, in the same order): what `searched_terms` looks up in one store, and a
    cluster sums over its shards first (searchengine.cluster)."""
    words = list(counts)
    share = LONG_QUERY_COMMON_WORD_SHARE if len(words) > LONG_QUERY_WORDS else COMMON_WORD_SHARE
    kept_words = [
        (count, position)
        for position, count in enumerate(held)
        if count <= documents * share and words[position] not in STOP_WORDS
    ]
    kept = sorted(position for _, position in sorted(kept_words)[:MAX_QUERY_WORDS]) or range(len(words))
    cap = MAX_WORD_REPEATS
    while cap > 1 and sum(min(counts[words[position]], cap) for position in kept) > max_phrases:
        cap -= 1
    return [SearchedTerm(words[position], min(counts[words[position]], cap), held[position]) for position in kept]


def _documents_holding(
    connection: sqlite3.Connection, words: list[str], index_table: str, tokenizer: str, holding: dict[str, int]
) -> list[int]:
    """For each word, how many documents of the index hold its rarest stem (0 for a word the tokenizer drops)."""
    connection.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_WORDS} USING fts5(word, tokenize='{tokenizer}')")
    connection.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_STEMS} USING fts5vocab(temp, {_WORDS}, instance)")
    connection.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_VOCABULARY} USING fts5vocab(main, {index_table}, row)"
    )
    connection.execute(f"DELETE FROM temp.{_WORDS}")
    connection.executemany(f"INSERT INTO temp.{_WORDS} (rowid, word) VALUES (?, ?)", enumerate(words))
    stems: dict[int, set[str]] = {}
    for position, stem in connection.execute(f"SELECT doc, term FROM temp.{_STEMS}"):
        stems.setdefault(position, set()).add(stem)
    for stem in set().union(*stems.values()) - holding.keys():
        row = connection.execute(f"SELECT doc FROM temp.{_VOCABULARY} WHERE term = ?", [stem]).fetchone()
        holding[stem] = row[0] if row else 0
    return [min((holding[stem] for stem in stems.get(position, ())), default=0) for position in range(len(words))]
