"""Paraphrase mining: the most similar pairs among vectors already in an index (never re-encodes the corpus).

Two ways to find them:
- exact: blocks of rows against every later row, one float32 matrix product per block (only the upper triangle,
  so each pair is scored once), candidates merged into a global top-N or collected above a threshold. Memory
  holds one block of scores, never n x n.
- ann: each stored vector asks the index's own FAISS search for its k nearest neighbours, in batches. With an
  HNSW or IVF index this is approximate; with a Flat index the neighbours are exact but every pair is scored twice.
`choose_method` (searchengine.analysis.mining_request) picks exact up to EXACT_MINING_LIMIT vectors and ann above.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from searchengine.analysis.mining_request import MiningMethod, check_request, choose_method, score_floor
from searchengine.errors import SearchEngineError
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.live_write import writing_in_place
from searchengine.indexer.tables.store import DocumentStore
from searchengine.indexer.vectors.vector_index import VectorIndex

ANN_NEIGHBOURS = 10
"""Neighbours per vector asked of the index in ann mode (at least `top` in top-N mode)."""
BLOCK_BYTES = 256 * 1024 * 1024
"""Exact mode scores at most this many bytes of the similarity matrix at a time."""
BLOCK_ROWS = 512
"""Rows per block in exact mode, fewer when n is so large that BLOCK_BYTES would be exceeded."""
SEARCH_BATCH = 4096
"""Stored vectors searched per FAISS call in ann mode."""
LOWEST = float(np.finfo(np.float32).min)
"""Below every real score, above the -inf that masks the lower triangle."""


@dataclass(frozen=True)
class ScoredPair:
    """Two rows (or ids) and their cosine similarity; always first < second."""

    first: int
    second: int
    score: float


@dataclass(frozen=True)
class Pair:
    """A mined pair of documents: ids (first < second), their texts and cosine similarity."""

    first_id: int
    second_id: int
    score: float
    first_text: str
    second_text: str


def mine_vectors(
    vectors: np.ndarray,
    top: int | None = None,
    threshold: float | None = None,
    ids: np.ndarray | None = None,
    block_rows: int = BLOCK_ROWS,
) -> list[ScoredPair]:
    """The most similar pairs of rows of `vectors` by inner product (cosine for L2-normalised rows), exactly.

    top: keep the `top` best pairs; threshold: keep pairs scoring at least this; both: the best `top` of those.
    ids: names for the rows (default: row numbers). Best first, ties by (first, second).
    """
    top = check_request(top, threshold)
    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    n = len(matrix)
    names = np.arange(n, dtype=np.int64) if ids is None else np.asarray(ids, dtype=np.int64)
    rows_per_block = max(1, min(block_rows, BLOCK_BYTES // (4 * max(n, 1))))
    found = _Candidates(top)
    for start in range(0, n - 1, rows_per_block):
        stop = min(start + rows_per_block, n)
        scores = matrix[start:stop] @ matrix[start:].T
        square = stop - start
        np.copyto(scores[:, :square], -np.inf, where=np.tri(square, dtype=bool))  # column > row only: no self pairs
        floor = found.floor() if threshold is None else max(score_floor(threshold), found.floor())
        rows, columns = _selected(scores, top, floor)
        first, second = names[rows + start], names[columns + start]
        found.add(scores[rows, columns], np.minimum(first, second), np.maximum(first, second))
    return found.pairs()


def mine_index(
    index: VectorIndex,
    top: int | None = None,
    threshold: float | None = None,
    method: MiningMethod = "auto",
    neighbours: int | None = None,
    excluded: np.ndarray | None = None,
) -> list[ScoredPair]:
    """`mine_vectors` over the vectors stored in `index`, by document id, with the method `choose_method` picks.

    neighbours: in ann mode, neighbours asked per vector (default: ANN_NEIGHBOURS, or `top` when larger).
    excluded: ids whose vectors are still stored but must not pair (deleted documents awaiting compaction).
    """
    top = check_request(top, threshold)
    excluded = np.zeros(0, dtype=np.int64) if excluded is None else np.asarray(excluded, dtype=np.int64)
    count = index.count - len(excluded)
    if count <= 0:
        raise SearchEngineError("the index is empty: there are no pairs to mine; add documents first")
    if choose_method(count, method) == "exact":
        ids, vectors = index.stored_matrix()
        live = ~np.isin(ids, excluded)
        return mine_vectors(vectors[live], top, threshold, ids[live])
    k = min(count - 1, neighbours or max(ANN_NEIGHBOURS, top or 0))
    found = _Candidates(top, repeats=True)
    for batch_ids, batch in index.stored_vectors(SEARCH_BATCH):
        live = ~np.isin(batch_ids, excluded)
        batch_ids, batch = batch_ids[live], batch[live]
        if k < 1 or not len(batch_ids):
            continue
        scores, neighbour_ids = index.search(batch, k + 1, excluded=excluded)  # +1: each vector finds itself
        queries = np.repeat(batch_ids, k + 1)
        keep = (neighbour_ids.ravel() >= 0) & (neighbour_ids.ravel() != queries)
        if threshold is not None:
            keep &= scores.ravel() >= score_floor(threshold)
        first = np.minimum(queries, neighbour_ids.ravel())[keep]
        second = np.maximum(queries, neighbour_ids.ravel())[keep]
        found.add(scores.ravel()[keep], first, second)
    return found.pairs()


def mine_documents(
    index: VectorIndex,
    store: DocumentStore,
    top: int | None = None,
    threshold: float | None = None,
    method: MiningMethod = "auto",
    neighbours: int | None = None,
) -> list[Pair]:
    """`mine_index` over one vector per document (a split document's first passage; see
    DocumentStore.other_vector_ids), with each pair's texts fetched from the document store (deleted documents never
    pair)."""
    return with_texts(mine_index(index, top, threshold, method, neighbours, store.other_vector_ids()), store)


def with_texts(scored: list[ScoredPair], store: DocumentStore) -> list[Pair]:
    """Pairs of document ids joined with their texts."""
    documents = store.get([i for pair in scored for i in (pair.first, pair.second)])
    return [Pair(p.first, p.second, p.score, documents[p.first].text, documents[p.second].text) for p in scored]


def duplicate_marks(pairs: list[ScoredPair]) -> list[ScoredPair]:
    """One pair per duplicate, by duplicate id: in each pair the later id (`second`) duplicates the earlier; a
    text in several pairs is marked a duplicate of the earliest of its partners."""
    marks: dict[int, ScoredPair] = {}
    for pair in pairs:
        if pair.second not in marks or pair.first < marks[pair.second].first:
            marks[pair.second] = pair
    return [marks[i] for i in sorted(marks)]


def dedupe_index(
    directory: IndexDirectory, threshold: float, method: MiningMethod = "auto", neighbours: int | None = None
) -> list[ScoredPair]:
    """Mark the later document of every pair scoring >= `threshold` as a duplicate of the earlier one, replacing
    earlier marks, and commit it as a new generation of the index. Returns the marks (see `duplicate_marks`).
    """
    check_request(None, threshold)
    with writing_in_place(directory) as rewrite:
        pairs = mine_index(rewrite.segments(), None, threshold, method, neighbours, rewrite.store.other_vector_ids())
        marks = duplicate_marks(pairs)
        rewrite.store.duplicates.replace([(pair.second, pair.first, pair.score) for pair in marks])
    return marks


def _selected(scores: np.ndarray, top: int | None, floor: float) -> tuple[np.ndarray, np.ndarray]:
    """(rows, columns) of the block's candidates: scores >= floor, at most the `top` best of them.

    In top-N mode the `top`-th largest row maximum bounds the block's `top`-th best pair from below (the row
    maxima are `top` distinct pairs), so one comparison pass leaves few candidates to sort.
    """
    if top is not None and top <= len(scores):
        row_best = scores.max(axis=1)
        floor = max(floor, float(np.partition(row_best, len(row_best) - top)[len(row_best) - top]))
    rows, columns = np.nonzero(scores >= max(floor, LOWEST))  # never the masked -inf cells
    if top is not None and len(rows) > top:
        best = np.argpartition(-scores[rows, columns], top - 1)[:top]
        rows, columns = rows[best], columns[best]
    return rows, columns


class _Candidates:
    """Pairs found so far; trimmed to the `top` best when a count is asked for.

    `repeats`: the same pair may be added twice (ann mode finds it from both ends) and is kept once.
    """

    def __init__(self, top: int | None, repeats: bool = False) -> None:
        self.top = top
        self.repeats = repeats
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def floor(self) -> float:
        """The score a pair must reach to enter a full top-N (-inf until `top` pairs are held)."""
        if self.top is None or not self.parts or len(self.parts[0][0]) < self.top:
            return -np.inf
        return float(self.parts[0][0].min())

    def add(self, scores: np.ndarray, first: np.ndarray, second: np.ndarray) -> None:
        self.parts.append((scores.astype(np.float32), first.astype(np.int64), second.astype(np.int64)))
        if self.top is not None:
            scores, first, second = self._merged()
            if len(scores) > self.top:
                best = np.argpartition(-scores, self.top - 1)[: self.top]
                scores, first, second = scores[best], first[best], second[best]
            self.parts = [(scores, first, second)]

    def _merged(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not self.parts:
            return np.zeros(0, np.float32), np.zeros(0, np.int64), np.zeros(0, np.int64)
        scores, first, second = (np.concatenate(column) for column in zip(*self.parts))
        if self.repeats and len(scores) > 1:
            order = np.lexsort((second, first))
            fresh = np.ones(len(order), dtype=bool)
            fresh[1:] = (np.diff(first[order]) != 0) | (np.diff(second[order]) != 0)
            keep = order[fresh]
            scores, first, second = scores[keep], first[keep], second[keep]
        return scores, first, second

    def pairs(self) -> list[ScoredPair]:
        """Best first; equal scores by (first, second)."""
        scores, first, second = self._merged()
        order = np.lexsort((second, first, -scores))
        return [ScoredPair(int(first[i]), int(second[i]), float(scores[i])) for i in order]
