"""A keyword search within a filter: the k best matches among the allowed ids, exactly as the unfiltered ranking
filtered afterwards, whether SQLite's best matches are enough (a filter that keeps a large share, read best first)
or every match must be read (a small share, or matches that mostly fail the filter)."""

from __future__ import annotations

import numpy as np
import pytest
from searchengine.indexer.tables import keyword_table
from searchengine.indexer.tables.store import Document, DocumentStore

WORDS = ["river", "stone", "music", "garden", "winter", "paper", "engine", "violin"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    store = DocumentStore(tmp_path_factory.mktemp("keyword") / "documents.db", writable=True)
    texts = [
        " ".join(WORDS[(n * step) % len(WORDS)] for step in (1, 3, 5)[: 1 + n % 3]) + f" note{n % 7}"
        for n in range(600)
    ]
    store.add([Document(text, "c.txt", n) for n, text in enumerate(texts)])
    yield store
    store.close()


def _expected(store: DocumentStore, text: str, k: int, allowed: np.ndarray) -> list[tuple[int, float]]:
    every = store.keyword.search(text, 10**6)  # the whole ranking, unfiltered
    kept = set(allowed.tolist())
    return [(row_id, score) for row_id, score in every if row_id in kept][:k]


def _statements(store: DocumentStore, text: str, k: int, allowed: np.ndarray) -> tuple[list, list[str]]:
    statements: list[str] = []
    store.db.conn.set_trace_callback(statements.append)
    try:
        found = store.keyword.search(text, k, allowed)
    finally:
        store.db.conn.set_trace_callback(None)
    return found, [s for s in statements if "bm25" in s]


@pytest.mark.parametrize("text", ["river music", "violin note3", "stone garden winter paper"])
def test_a_filter_keeping_a_large_share_reads_the_best_matches_only(store: DocumentStore, text: str) -> None:
    allowed = np.arange(0, 600, 2)
    found, statements = _statements(store, text, 10, allowed)
    assert found == _expected(store, text, 10, allowed)
    assert len(found) == 10
    assert len(statements) == 1 and "LIMIT" in statements[0]


@pytest.mark.parametrize(
    "allowed",
    [
        np.arange(3, 600, 97),  # a small share: every match is read
        np.array([599, 5, 311, 2, 2, 47]),  # not sorted, repeated
        np.array([], dtype=np.int64),
    ],
    ids=["small share", "unsorted", "none"],
)
def test_a_small_or_unsorted_filter_gives_the_same_hits(store: DocumentStore, allowed: np.ndarray) -> None:
    for text in ("river music", "violin note3", "engine"):
        assert store.keyword.search(text, 10, allowed) == _expected(store, text, 10, allowed)


def test_when_the_best_matches_mostly_fail_the_filter_every_match_is_read(store: DocumentStore) -> None:
    text = "river music"
    ranking = [row_id for row_id, _ in store.keyword.search(text, 10**6)]
    allowed = np.array(sorted(set(range(600)) - set(ranking[:400])))  # the best 400 matches all fail it
    found, statements = _statements(store, text, 10, allowed)
    assert found == _expected(store, text, 10, allowed)
    assert len(statements) == 2 and "LIMIT" in statements[0] and "LIMIT" not in statements[1]


def test_past_the_deepest_read_every_match_is_read_at_once(store: DocumentStore, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(keyword_table, "MAX_FILTER_DEPTH", 10)
    allowed = np.arange(0, 600, 2)
    found, statements = _statements(store, "river music", 10, allowed)
    assert found == _expected(store, "river music", 10, allowed)
    assert len(statements) == 1 and "LIMIT" not in statements[0]
