"""BM25 as FTS5's bm25() computes it, but over term statistics given from outside: what a shard of a cluster index
needs so that its keyword scores equal those of one index of every shard's documents (Elasticsearch's
dfs_query_then_fetch). A shard first reports its statistics for a query's words (`term_statistics`); the caller
sums them over the shards, and each shard then scores its own documents with the sums (`bm25_scores`).

FTS5's bm25() (fts5_aux.c) scores a row, for the phrases of the MATCH expression in order, as the sum of
IDF * tf * (k1 + 1) / (tf + k1 * (1 - b + b * D / avgdl)), with IDF = log((N - n + 0.5) / (n + 0.5)) (1e-6 where that
is not positive), N the rows of the table, n the rows holding the phrase, D the row's tokens and avgdl the table's
tokens over N. Every part is read here from the index itself: tf from an fts5vocab `instance` table (with the
offsets, so a phrase of several tokens counts where its tokens stand in a row), D from the table's `docsize`
records and N and the tokens from its `averages` record (both SQLite varints), n by counting the rows that MATCH
the phrase. The query's words are tokenized by a scratch FTS5 table with the index's tokenizer, as
keyword_query does."""

from __future__ import annotations

import math
import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from searchengine.indexer.query.keyword_query import BM25_K1

BM25_B = 0.75
"""FTS5 bm25()'s b."""
_WORDS = "global_bm25_words"
_TOKENS = "global_bm25_tokens"
_ROWS = "global_bm25_vocabulary"
_INSTANCES = "global_bm25_instances"
_ID_CHUNK = 500


@dataclass(frozen=True)
class TermStatistics:
    """One store's (or, summed with `+`, several stores') statistics for some words: what BM25 and the keyword
    query's word rules count."""

    documents: int = 0
    """Documents stored (the count keyword_query's word rules compare with)."""
    rows: int = 0
    """Rows of the keyword index (bm25()'s N)."""
    tokens: int = 0
    """Tokens in the keyword index (N times bm25()'s average length)."""
    tokens_of: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Each word's tokens as the index's tokenizer makes them, in order (the phrase the word is searched as)."""
    token_documents: dict[str, int] = field(default_factory=dict)
    """Documents holding each token."""
    phrase_documents: dict[str, int] = field(default_factory=dict)
    """Documents holding each word as its phrase (bm25()'s n)."""

    def __add__(self, other: TermStatistics) -> TermStatistics:
        """Both stores' statistics, as one store of both's documents would have them."""
        return TermStatistics(
            self.documents + other.documents,
            self.rows + other.rows,
            self.tokens + other.tokens,
            {**self.tokens_of, **other.tokens_of},
            _summed(self.token_documents, other.token_documents),
            _summed(self.phrase_documents, other.phrase_documents),
        )

    def held(self, words: Sequence[str]) -> list[int]:
        """For each word, the documents holding its rarest token (0 for a word without tokens): keyword_query's
        count for its word rules."""
        return [min((self.token_documents.get(t, 0) for t in self.tokens_of.get(w, ())), default=0) for w in words]

    def idf(self, word: str) -> float:
        """bm25()'s IDF of the phrase of `word`."""
        held = self.phrase_documents.get(word, 0)
        value = math.log((self.rows - held + 0.5) / (held + 0.5))
        return value if value > 0 else 1e-6

    @property
    def average_length(self) -> float:
        """bm25()'s avgdl: tokens per row."""
        return self.tokens / self.rows if self.rows else 0.0


def _summed(first: dict[str, int], second: dict[str, int]) -> dict[str, int]:
    """Each key's counts added (a key only one has keeps its count, zero included)."""
    return {key: first.get(key, 0) + second.get(key, 0) for key in first.keys() | second.keys()}


def term_statistics(
    connection: sqlite3.Connection, words: Iterable[str], index_table: str, tokenizer: str, documents: int
) -> TermStatistics:
    """This store's statistics for `words` (of a keyword index `index_table` made with `tokenizer`, over a store of
    `documents` documents)."""
    words = list(dict.fromkeys(words))
    rows, tokens = _averages(connection, index_table)
    tokens_of = _tokens(connection, words, tokenizer)
    _ensure_vocabulary(connection, index_table)
    token_documents: dict[str, int] = {}
    for token in {t for phrase in tokens_of.values() for t in phrase}:
        row = connection.execute(f"SELECT doc FROM temp.{_ROWS} WHERE term = ?", [token]).fetchone()
        token_documents[token] = row[0] if row else 0
    phrase_documents = {}
    for word, phrase in tokens_of.items():
        if len(phrase) == 1:
            phrase_documents[word] = token_documents[phrase[0]]
        else:
            phrase_documents[word] = len(_phrase_frequencies(connection, phrase)) if phrase else 0
    return TermStatistics(documents, rows, tokens, tokens_of, token_documents, phrase_documents)


def bm25_scores(
    connection: sqlite3.Connection,
    index_table: str,
    phrases: Sequence[tuple[tuple[str, ...], float]],
    average_length: float,
    ids: Sequence[int] | None = None,
) -> dict[int, float]:
    """The BM25 score of every row holding any of `phrases` ((tokens, IDF) each, in the MATCH expression's order,
    a repeated word once per repeat), as bm25() gives it with the sign turned, computed with the given IDFs and
    `average_length`; among `ids` only (every row when None)."""
    _ensure_vocabulary(connection, index_table)
    wanted = None if ids is None else {int(i) for i in ids}
    frequencies: dict[tuple[str, ...], dict[int, int]] = {}
    for phrase, _ in phrases:
        if phrase not in frequencies:
            found = _phrase_frequencies(connection, phrase) if phrase else {}
            frequencies[phrase] = found if wanted is None else {d: f for d, f in found.items() if d in wanted}
    matched = sorted({doc for found in frequencies.values() for doc in found})
    lengths = _lengths(connection, index_table, matched)
    scores: dict[int, float] = {}
    for doc in matched:
        norm = BM25_K1 * (1.0 - BM25_B + BM25_B * lengths.get(doc, 0) / average_length) if average_length else 0.0
        score = 0.0
        for phrase, idf in phrases:
            tf = frequencies[phrase].get(doc, 0)
            score += idf * (tf * (BM25_K1 + 1.0)) / (tf + norm)
        scores[doc] = score
    return scores


def _ensure_vocabulary(connection: sqlite3.Connection, index_table: str) -> None:
    connection.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_ROWS} USING fts5vocab(main, {index_table}, row)")
    connection.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_INSTANCES} USING fts5vocab(main, {index_table}, instance)"
    )


def _tokens(connection: sqlite3.Connection, words: list[str], tokenizer: str) -> dict[str, tuple[str, ...]]:
    """Each word's tokens in order, by a scratch FTS5 table with the index's tokenizer (in the temp schema, which
    a read-only connection may write)."""
    connection.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_WORDS} USING fts5(word, tokenize='{tokenizer}')")
    connection.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_TOKENS} USING fts5vocab(temp, {_WORDS}, instance)")
    connection.execute(f"DELETE FROM temp.{_WORDS}")
    connection.executemany(f"INSERT INTO temp.{_WORDS} (rowid, word) VALUES (?, ?)", enumerate(words))
    placed: dict[int, list[tuple[int, str]]] = {}
    for position, term, offset in connection.execute(f"SELECT doc, term, offset FROM temp.{_TOKENS}"):
        placed.setdefault(position, []).append((offset, term))
    return {word: tuple(term for _, term in sorted(placed.get(position, []))) for position, word in enumerate(words)}


def _phrase_frequencies(connection: sqlite3.Connection, phrase: tuple[str, ...]) -> dict[int, int]:
    """How many times each row holds `phrase` (its tokens at consecutive offsets), for rows holding it."""
    places = [
        connection.execute(f"SELECT doc, offset FROM temp.{_INSTANCES} WHERE term = ?", [token]).fetchall()
        for token in phrase
    ]
    if len(phrase) == 1:
        return dict(Counter(doc for doc, _ in places[0]))
    later = [set(found) for found in places[1:]]
    hits = Counter(
        doc for doc, offset in places[0] if all((doc, offset + i) in rest for i, rest in enumerate(later, 1))
    )
    return dict(hits)


def _lengths(connection: sqlite3.Connection, index_table: str, ids: list[int]) -> dict[int, int]:
    """Each row's tokens, from the index's docsize records (one varint per column; the keyword index has one)."""
    lengths: dict[int, int] = {}
    for start in range(0, len(ids), _ID_CHUNK):
        chunk = ids[start : start + _ID_CHUNK]
        placeholders = ",".join("?" * len(chunk))
        sql = f"SELECT id, sz FROM {index_table}_docsize WHERE id IN ({placeholders})"
        for doc, size in connection.execute(sql, chunk):
            lengths[int(doc)] = _varint(size, 0)[0]
    return lengths


def _averages(connection: sqlite3.Connection, index_table: str) -> tuple[int, int]:
    """The keyword index's rows and tokens, from its averages record (row 1 of its data table: varints)."""
    row = connection.execute(f"SELECT block FROM {index_table}_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return 0, 0
    rows, at = _varint(row[0], 0)
    tokens, _ = _varint(row[0], at)
    return rows, tokens


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """An SQLite varint in `data` from `at`: its value and where the next begins (big-endian groups of 7 bits, the
    high bit saying more follow; a ninth byte gives all 8 bits)."""
    value = 0
    for i in range(8):
        byte = data[at + i]
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            return value, at + i + 1
    return (value << 8) | data[at + 8], at + 9
