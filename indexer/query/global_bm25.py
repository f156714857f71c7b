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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
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
            phrase_documents[word] = len(_phrase_frequencies(connection, index_table, phrase, False)[0])
    return TermStatistics(documents, rows, tokens, tokens_of, token_documents, phrase_documents)


def bm25_scores(
    connection: sqlite3.Connection,
    index_table: str,
    phrases: Sequence[tuple[tuple[str, ...], float]],
    average_length: float,
    ids: Sequence[int] | np.ndarray | None = None,
) -> dict[int, float]:
    """The BM25 score of every row holding any of `phrases` ((tokens, IDF) each, in the MATCH expression's order,
    a repeated word once per repeat), as bm25() gives it with the sign turned, computed with the given IDFs and
    `average_length`; among `ids` only (every row when None)."""
    rows, scores = bm25_arrays(connection, index_table, phrases, average_length, ids)
    return dict(zip(rows.tolist(), scores.tolist()))


def bm25_arrays(
    connection: sqlite3.Connection,
    index_table: str,
    phrases: Sequence[tuple[tuple[str, ...], float]],
    average_length: float,
    ids: Sequence[int] | np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """`bm25_scores` as two arrays: the rows scored (ascending) and their scores.

    SQLite reads each phrase's instances with their rows' lengths, and numpy counts and scores them (a Python loop
    over every matching row took most of a cluster shard's keyword search). A row's score adds each phrase's part in
    the phrases' order, the same floating-point operations in the same order as bm25()'s loop (fts5_aux.c); a
    phrase a row does not hold adds nothing, where bm25() adds 0.0, which changes no sum."""
    _ensure_vocabulary(connection, index_table)
    wanted = None if ids is None else _ascending(np.asarray(ids, dtype=np.int64))
    joined = wanted is None  # within `ids`, only the lengths of the rows kept are read, afterwards
    found = {}
    for phrase, _ in phrases:
        if phrase not in found:
            rows, frequencies, lengths = _phrase_frequencies(connection, index_table, phrase, joined)
            if wanted is not None:
                kept = _among(rows, wanted)
                rows, frequencies, lengths = rows[kept], frequencies[kept], lengths[kept]
            found[phrase] = rows, frequencies, lengths
    if not found:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
    every = np.concatenate([rows for rows, _, _ in found.values()])
    matched, first = np.unique(every, return_index=True)
    if joined:
        lengths = np.concatenate([lengths for _, _, lengths in found.values()])[first].astype(np.float64)
    else:
        lengths = _lengths(connection, index_table, matched).astype(np.float64)
    if average_length:
        norms = BM25_K1 * (1.0 - BM25_B + BM25_B * lengths / average_length)
    else:
        norms = np.zeros(len(matched))
    scores = np.zeros(len(matched))
    for phrase, idf in phrases:
        rows, frequencies, _ = found[phrase]
        at = np.searchsorted(matched, rows)
        tf = frequencies.astype(np.float64)
        scores[at] += idf * (tf * (BM25_K1 + 1.0)) / (tf + norms[at])
    return matched, scores


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


def _phrase_frequencies(
    connection: sqlite3.Connection, index_table: str, phrase: tuple[str, ...], lengths: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows holding `phrase` (its tokens at consecutive offsets), ascending, how many times each holds it, and
    with `lengths` each one's tokens (else zeros)."""
    if not phrase:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty
    several = len(phrase) > 1
    rows, offsets, sizes = _instances(connection, index_table, phrase[0], offsets=several, lengths=lengths)
    if several:
        later = [_instances(connection, index_table, token, offsets=True, lengths=False)[:2] for token in phrase[1:]]
        # (row, offset) as one number: the row's place among every row any token is in, times more than any offset
        universe = _distinct(np.concatenate([rows, *(found for found, _ in later)]))
        span = max(int(places.max(initial=0)) for places in [offsets, *(places for _, places in later)])
        span += len(phrase) + 1
        first = np.searchsorted(universe, rows) * span + offsets
        held = np.ones(len(rows), dtype=bool)
        for step, (found, places) in enumerate(later, 1):
            held &= _among(first + step, np.sort(np.searchsorted(universe, found) * span + places))
        rows, sizes = rows[held], sizes[held]
    matched, first_of, counts = _counted(rows)
    return matched, counts, sizes[first_of]


def _instances(
    connection: sqlite3.Connection, index_table: str, token: str, offsets: bool, lengths: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every instance of `token` in the index: its row, its offset (with `offsets`) and its row's tokens (with
    `lengths`), each as an array (zeros for what was not asked).

    SQLite reads the token's fts5vocab `instance` rows, joined to the rows' docsize records for `lengths`, and joins
    them into one text a column (group_concat: a row's aggregates step over the same rows in the same order, so the
    columns line up), which numpy parses: no Python object per instance. A docsize record is one varint (the
    keyword index has one column), written in hex and decoded here (`_varints`); a row without one counts 0."""
    places = "group_concat(i.offset)" if offsets else "NULL"
    sizes = "group_concat(ifnull(hex(d.sz), '00'), '')" if lengths else "NULL"
    joined = f"LEFT JOIN {index_table}_docsize AS d ON d.id = i.doc " if lengths else ""
    sql = f"SELECT group_concat(i.doc), {places}, {sizes} FROM temp.{_INSTANCES} AS i {joined}WHERE i.term = ?"
    found, at, size = connection.execute(sql, [token]).fetchone()
    rows = _integers(found)
    return (
        rows,
        _integers(at) if offsets else np.zeros(len(rows), dtype=np.int64),
        _varints(size or "") if lengths else np.zeros(len(rows), dtype=np.int64),
    )


def _lengths(connection: sqlite3.Connection, index_table: str, rows: np.ndarray) -> np.ndarray:
    """Each of `rows`' tokens (`rows` ascending), from the index's docsize records, read _ID_CHUNK at a time (0 for
    a row without one)."""
    lengths = np.zeros(len(rows), dtype=np.int64)
    for start in range(0, len(rows), _ID_CHUNK):
        chunk = rows[start : start + _ID_CHUNK]
        placeholders = ",".join("?" * len(chunk))
        sql = (
            f"SELECT group_concat(id), group_concat(ifnull(hex(sz), '00'), '') FROM {index_table}_docsize "
            f"WHERE id IN ({placeholders})"
        )
        found, sizes = connection.execute(sql, chunk.tolist()).fetchone()
        lengths[start + np.searchsorted(chunk, _integers(found))] = _varints(sizes or "")
    return lengths


def _counted(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct `rows`, ascending, where each first stands and how many times each comes (np.unique's, without
    its sort where the rows come ascending, as fts5vocab gives them)."""
    if not bool(np.all(rows[1:] >= rows[:-1])):
        return np.unique(rows, return_index=True, return_counts=True)
    starts = np.flatnonzero(np.concatenate([[True], rows[1:] != rows[:-1]])) if len(rows) else np.empty(0, np.int64)
    return rows[starts], starts, np.diff(np.append(starts, len(rows)))


def _among(values: np.ndarray, ascending: np.ndarray) -> np.ndarray:
    """Whether each of `values` is one of `ascending` (sorted): a binary search each, where np.isin would first
    make both distinct (by hashing, several times slower here)."""
    if not len(ascending):
        return np.zeros(len(values), dtype=bool)
    return ascending[np.minimum(np.searchsorted(ascending, values), len(ascending) - 1)] == values


def _ascending(values: np.ndarray) -> np.ndarray:
    """`values` sorted (as they are, where they already are: a filter's ids come so)."""
    return values if bool(np.all(values[1:] >= values[:-1])) else np.sort(values)


def _distinct(values: np.ndarray) -> np.ndarray:
    """The distinct `values`, ascending."""
    ordered = np.sort(values)
    if not len(ordered):
        return ordered
    return ordered[np.concatenate([[True], ordered[1:] != ordered[:-1]])]


def _integers(text: str | None) -> np.ndarray:
    """The integers of a group_concat (comma-separated; None for no row)."""
    return np.fromstring(text, dtype=np.int64, sep=",") if text else np.empty(0, dtype=np.int64)


def _varints(hexadecimal: str) -> np.ndarray:
    """The SQLite varints written one after the other in `hexadecimal`: each is big-endian groups of 7 bits, every
    byte but its last with the high bit set. (A value of 2**56 or more takes a ninth byte of 8 bits, which this does
    not read: no row holds that many tokens.)"""
    data = np.frombuffer(bytes.fromhex(hexadecimal), dtype=np.uint8)
    if not bool(np.any(data >= 0x80)):  # every value under 128: a byte each
        return data.astype(np.int64)
    data = data.astype(np.int64)
    ends = np.flatnonzero(data < 0x80)
    starts = np.concatenate([[0], ends[:-1] + 1]).astype(np.int64)
    sizes = ends - starts + 1
    values = np.zeros(len(ends), dtype=np.int64)
    for place in range(int(sizes.max(initial=0))):
        longer = sizes > place
        values[longer] = (values[longer] << 7) | (data[starts[longer] + place] & 0x7F)
    return values


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
