"""The keyword index of the document store: an SQLite FTS5 table over the documents' text (Porter stemming) that
triggers keep in step with every insert, update and delete, so it is always the documents as stored and is
committed with them. Stores written before it gain it when they are next opened for writing."""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from searchengine.indexer.errors import MissingKeywordIndexError
from searchengine.indexer.query.global_bm25 import TermStatistics, bm25_arrays, term_statistics
from searchengine.indexer.query.keyword_query import bm25_bound, match_expression
from searchengine.indexer.tables.sql_chunks import in_chunks
from searchengine.indexer.tables.store_table import StoreTable

if TYPE_CHECKING:
    import sqlite_utils

DOCUMENTS = "documents"
TABLE = f"{DOCUMENTS}_fts"
"""The keyword index: FTS5 over the documents' text, its content read from the documents table itself."""
TOKENIZER = "porter"
"""Porter stemming over FTS5's unicode61 tokenizer (case and diacritics folded)."""


def enable_keyword_index(db: sqlite_utils.Database, documents: str = DOCUMENTS) -> None:
    """The keyword index of table `documents`: FTS5 over its text, filled from its rows and kept in step by
    triggers."""
    db[documents].enable_fts(["text"], fts_version="FTS5", tokenize=TOKENIZER, create_triggers=True)


class KeywordTable(StoreTable):
    """BM25 search over one store's documents. `count` gives the number of documents (BM25's statistics);
    `cached` keeps how many documents hold each word stem looked up, for a store whose snapshot only
    `new_snapshot` changes."""

    name = TABLE

    def __init__(
        self,
        db: sqlite_utils.Database,
        guard: Callable[[], AbstractContextManager[None]],
        path: Path,
        count: Callable[[], int],
        cached: bool,
    ) -> None:
        super().__init__(db, guard)
        self.path = path
        self._count = count
        self._cached = cached
        self._stem_counts: dict[str, int] | None = {} if cached else None
        """How many documents hold each word stem a keyword search looked up: kept by a read-only store, whose
        snapshot changes only at `new_snapshot`, so a word common to many queries is counted once."""

    def new_snapshot(self) -> None:
        """Forget what was counted in the previous read snapshot."""
        self._stem_counts = {} if self._cached else None

    def search(self, text: str, k: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The k documents that best match the words of `text` by BM25, as (id, BM25 score) best first, among
        `allowed` ids (all when None). A document matches when it holds any of the words; none match a text without
        words. The score is FTS5's bm25() with its sign turned, so higher is better (k1 1.2, b 0.75); words most
        documents hold are left out (searchengine.indexer.query.keyword_query).

        Filters come as `allowed` ids (DocumentFilters.matching_ids), applied here rather than by a join with the
        documents table, which made a search several times slower when tried; so did a full ORDER BY on bm25(), so
        the best k are picked here whenever every match's score is read anyway. A filter that keeps a large enough
        share of the documents first takes the best matches by bm25() in SQLite, deep enough that k of them likely
        pass it (`_depth`), as an unfiltered search does: reading every match's score into Python made a filtered
        search at 1,000,000 documents four times the unfiltered one (docs/benchmarks.md#the-store-at-10-million-rows).
        Only where fewer than k of those pass are all the matches read."""
        self._require()
        with self._guard():
            expression = self._match_expression(text)
            if expression is None:
                return []
            select = f"SELECT rowid, -bm25({TABLE}) FROM {TABLE} WHERE {TABLE} MATCH ?"
            if allowed is None:
                rows = self.db.execute(f"{select} ORDER BY bm25({TABLE}), rowid LIMIT ?", [expression, k])
                return [(int(row_id), float(score)) for row_id, score in rows]
            depth = _depth(k, len(allowed), self._count())
            if depth is not None:
                found = self.db.execute(
                    f"{select} ORDER BY bm25({TABLE}), rowid LIMIT ?", [expression, depth]
                ).fetchall()
                best = _passing(found, np.asarray(allowed, dtype=np.int64))
                if len(best) >= k or len(found) < depth:  # k passed, or every match was read
                    return best[:k]
            scores = {int(row_id): float(score) for row_id, score in self.db.execute(select, [expression])}
        candidates = ((i, scores[i]) for i in set(allowed.tolist()) & scores.keys())
        return heapq.nsmallest(k, candidates, key=lambda item: (-item[1], item[0]))

    def scores(self, text: str, ids: Sequence[int]) -> dict[int, float]:
        """The BM25 score of each of `ids` for the words of `text`, as `search` scores it (0.0 for a document
        holding none of them). Only those rows are scored: BM25's statistics are the whole index's, so a score
        does not depend on which other documents are asked for."""
        self._require()
        scores = dict.fromkeys((int(i) for i in ids), 0.0)
        with self._guard():
            expression = self._match_expression(text)
            if expression is None or not scores:
                return scores
            select = f"SELECT rowid, -bm25({TABLE}) FROM {TABLE} WHERE {TABLE} MATCH ? AND rowid IN"
            rows = in_chunks(self.db, select, list(scores), first=[expression])
        scores.update((int(row_id), float(score)) for row_id, score in rows)
        return scores

    def bound(self, text: str) -> float:
        """The most BM25 score `search` can give any document for `text` (0.0 for a text without words), from the
        query's words and how many documents hold each (searchengine.indexer.query.keyword_query.bm25_bound)."""
        self._require()
        with self._guard():
            return bm25_bound(self.db.conn, text, TABLE, TOKENIZER, self._count(), self._stem_counts)

    def statistics(self, words: Sequence[str]) -> TermStatistics:
        """This store's term statistics for `words`, to be summed with other shards' (global_bm25)."""
        self._require()
        with self._guard():
            return term_statistics(self.db.conn, words, TABLE, TOKENIZER, self._count())

    def scores_with(
        self,
        phrases: Sequence[tuple[tuple[str, ...], float]],
        average_length: float,
        ids: Sequence[int] | np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """BM25 of the rows holding any of `phrases`, among `ids` (all when None), with IDFs and the average length
        given from outside, as bm25() would give them in one index of every shard: the rows, ascending, and their
        scores (global_bm25.bm25_arrays)."""
        self._require()
        with self._guard():
            return bm25_arrays(self.db.conn, TABLE, phrases, average_length, ids)

    def _match_expression(self, text: str) -> str | None:
        return match_expression(self.db.conn, text, TABLE, TOKENIZER, self._count(), self._stem_counts)

    def _require(self) -> None:
        if not self.exists():
            raise MissingKeywordIndexError(
                f"document store {self.path} has no keyword index (it was written before keyword search)"
            )


FILTER_DEPTH_MARGIN = 4
"""How many times the matches a filter is expected to leave k of are taken from SQLite's best first (`_depth`)."""
MAX_FILTER_DEPTH = 10_000
"""The most matches taken best first for a filtered search; a filter that keeps fewer documents reads all of them."""


def _depth(k: int, allowed: int, documents: int) -> int | None:
    """How many of the best matches to take for k of them to pass a filter that keeps `allowed` of `documents`
    (if matches pass it at that rate, FILTER_DEPTH_MARGIN times enough); None when that is past MAX_FILTER_DEPTH."""
    if allowed <= 0 or documents <= 0:
        return None
    depth = math.ceil(FILTER_DEPTH_MARGIN * k * max(documents, allowed) / allowed)
    return depth if depth <= MAX_FILTER_DEPTH else None


def _passing(rows: list[tuple[int, float]], allowed: np.ndarray) -> list[tuple[int, float]]:
    """Of `rows` (rowid, score), best first, those whose id is in `allowed` (ascending, as filters give them, or
    sorted here)."""
    if len(allowed) > 1 and not bool(np.all(allowed[1:] >= allowed[:-1])):
        allowed = np.sort(allowed)
    ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
    places = np.minimum(np.searchsorted(allowed, ids), len(allowed) - 1)
    keep = allowed[places] == ids
    return [(int(row_id), float(score)) for (row_id, score), kept in zip(rows, keep) if kept]
