"""A query's words as the keyword index matches them, to mark them in a hit's text: lower-cased, diacritics
folded (FTS5's unicode61 tokenizer), Porter-stemmed (snowballstemmer's "porter", the algorithm of FTS5's porter
tokenizer), with English stop words left out where the query has other words
(searchengine.indexer.query.keyword_query.STOP_WORDS). Light to import: the CLI marks words without numpy or FAISS."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import snowballstemmer

from searchengine.indexer.query.keyword_query import STOP_WORDS

Span = tuple[int, int]
_WORD = re.compile(r"\w+")


@lru_cache(maxsize=1)
def _stemmer() -> snowballstemmer.stemmer:
    return snowballstemmer.stemmer("porter")


def _fold(word: str) -> str:
    """`word` lower-cased with its diacritics dropped, as FTS5's unicode61 tokenizer folds it."""
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return "".join(character for character in decomposed if not unicodedata.combining(character))


def query_stems(query: str) -> frozenset[str]:
    """The stems of the words a hit's text is searched for: the query's words, less the stop words unless the query
    holds nothing else."""
    words = [_fold(word) for word in _WORD.findall(query)]
    kept = [word for word in words if word not in STOP_WORDS] or words
    return frozenset(stem(word) for word in kept)


def word_spans(text: str, stems: frozenset[str], start: int = 0, end: int | None = None) -> list[Span]:
    """Characters [start, end) of each word of text[start:end] whose stem is one of `stems`, in order."""
    if not stems:
        return []
    found = _WORD.finditer(text, start, len(text) if end is None else end)
    return [match.span() for match in found if stem(match.group()) in stems]


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """`word` as `query_stems` stems it (kept: a text's words repeat, and the stemmer is pure Python)."""
    return _stemmer().stemWord(_fold(word))
