"""The passages table: vector ids of split documents, their spans, and what deletes, upserts and filters do to them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from searchengine.indexer.query.filter_sql import Condition
from searchengine.indexer.tables.store import Document, DocumentStore


@pytest.fixture
def store(tmp_path: Path):
    store = DocumentStore(tmp_path / "documents.db", writable=True)
    yield store
    store.close()


def _split(store: DocumentStore, documents: list[Document], passages: dict[int, int]) -> dict[int, list[int]]:
    """Add `documents` and split the ones at positions in `passages` into that many 10-character passages."""
    change = store.add(documents)
    return store.add_passages(
        {change.ids[p]: [(10 * i, 10 * i + 10) for i in range(count)] for p, count in passages.items()}
    )


def test_a_split_document_keeps_its_id_for_its_first_passage_and_takes_new_ones_after_every_id(
    store: DocumentStore,
) -> None:
    vector_ids = _split(store, [Document("a" * 30), Document("short"), Document("b" * 20)], {0: 3, 2: 2})
    assert vector_ids == {0: [0, 3, 4], 2: [2, 5]}
    assert store.count() == 3 and store.vector_count() == 6
    assert store.passages.of_vectors([0, 1, 3, 5]) == {0: (0, 0, 10), 3: (0, 10, 20), 5: (2, 10, 20)}
    assert store.add([Document("next")]).ids == [6]  # document ids come after every passage's
    assert list(store.passages.extra_ids()) == [3, 4, 5] and list(store.other_vector_ids()) == [3, 4, 5]


def test_deleting_a_document_returns_and_removes_all_its_passages(store: DocumentStore) -> None:
    _split(store, [Document("a" * 30), Document("short")], {0: 3})
    assert sorted(store.delete([0])) == [0, 2, 3]
    assert store.vector_count() == 1 and store.passages.of_vectors([0, 2, 3]) == {}
    assert store.delete([1]) == [1]


def test_an_upsert_with_a_new_text_removes_the_old_passages(store: DocumentStore) -> None:
    _split(store, [Document("a" * 30, external_id="x")], {0: 3})
    change = store.add([Document("now short", external_id="x")])
    assert change.removed == [0] and sorted(change.removed_vectors) == [0, 1, 2]
    assert change.ids == [3] and store.vector_count() == 1
    same = store.add([Document("now short", external_id="x", metadata={"k": 1})])
    assert same.removed_vectors == [] and same.updated == 1


def test_tombstoned_passages_keep_their_ids_from_new_documents(store: DocumentStore) -> None:
    _split(store, [Document("a" * 30)], {0: 3})
    store.tombstones.add(store.delete([0]))
    assert store.add([Document("new")]).ids == [3]


def test_filters_reach_the_further_passages_of_matching_documents(store: DocumentStore) -> None:
    _split(
        store, [Document("a" * 30, metadata={"lang": "en"}), Document("b" * 30, metadata={"lang": "fr"})], {0: 2, 1: 3}
    )
    assert list(store.filters.matching_ids([Condition("lang", "=", "fr")])) == [1]
    assert list(store.filters.passage_ids_matching([Condition("lang", "=", "fr")])) == [3, 4]
    assert list(store.filters.passage_ids_matching([Condition("lang", "=", "de")])) == []


def test_a_store_without_a_passages_table_reads_as_holding_none(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    writer = DocumentStore(path, writable=True)
    writer.add([Document("one"), Document("two")])
    writer.close()
    connection = sqlite3.connect(path)
    connection.execute("DROP TABLE passages")
    connection.commit()
    connection.close()
    reader = DocumentStore(path)
    assert not reader.passages.exists() and not reader.passages.any()
    assert reader.vector_count() == 2 and reader.passages.of_vectors([0, 1]) == {}
    assert (
        list(reader.other_vector_ids()) == []
        and list(reader.filters.passage_ids_matching([Condition("id", ">=", 0)])) == []
    )
    reader.close()
    writer = DocumentStore(path, writable=True)  # a write adds the table
    assert writer.passages.exists() and writer.add_passages({1: [(0, 1), (1, 3)]}) == {1: [1, 2]}
    writer.close()
