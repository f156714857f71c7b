"""The SQLite document store: ids, de-duplication with counts, metadata, read-only opens and damaged files."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from searchengine.indexer.errors import IndexerError
from searchengine.indexer.store import Document, DocumentStore, StoreChange


@pytest.fixture
def store(tmp_path: Path):
    store = DocumentStore(tmp_path / "documents.db", writable=True)
    yield store
    store.close()


def _docs(*texts: str) -> list[Document]:
    return [Document(text, "corpus.txt", number) for number, text in enumerate(texts, start=1)]


def test_new_store_is_empty(store: DocumentStore) -> None:
    assert store.count() == 0
    assert store.total() == 0
    assert store.get([0, 1]) == {}


def test_add_returns_new_ids_and_their_positions(store: DocumentStore) -> None:
    ids, positions, _ = store.add(_docs("alpha", "beta", "gamma"))
    assert ids == [0, 1, 2]
    assert positions == [0, 1, 2]
    ids, positions, _ = store.add(_docs("delta", "epsilon"))
    assert ids == [3, 4]
    assert positions == [0, 1]
    rows = store.get([0, 3, 4])
    assert [rows[i].text for i in (0, 3, 4)] == ["alpha", "delta", "epsilon"]


def test_duplicates_in_one_batch_are_stored_once_and_counted(store: DocumentStore) -> None:
    ids, positions, _ = store.add(_docs("same", "other", "same", "same"))
    assert ids == [0, 1]
    assert positions == [0, 1]  # only the first occurrence is new; the caller embeds positions 0 and 1
    assert store.count() == 2
    assert store.total() == 4
    rows = store.get(ids)
    assert rows[0].text == "same" and rows[0].count == 3
    assert rows[1].text == "other" and rows[1].count == 1
    assert rows[0].line == 1  # the first occurrence's origin is kept


def test_duplicates_across_batches_are_stored_once_and_counted(store: DocumentStore) -> None:
    store.add(_docs("one", "two"))
    ids, positions, _ = store.add(_docs("two", "three", "one", "two"))
    assert ids == [2]
    assert positions == [1]
    assert store.count() == 3
    assert store.total() == 6
    rows = store.get([0, 1, 2])
    assert {row.text: row.count for row in rows.values()} == {"one": 2, "two": 3, "three": 1}


def test_a_batch_of_only_known_texts_adds_nothing(store: DocumentStore) -> None:
    store.add(_docs("a", "b"))
    assert store.add(_docs("b", "a")) == StoreChange([], [], [])
    assert store.count() == 2
    assert store.total() == 4


def test_texts_differing_only_in_case_or_whitespace_are_distinct(store: DocumentStore) -> None:
    ids, _, _ = store.add(_docs("Text", "text", "text "))
    assert len(ids) == 3
    assert store.count() == 3


def test_fields_and_metadata_round_trip(store: DocumentStore) -> None:
    metadata = {
        "title": "Ünïcødé — 日本語 🙂",
        "tags": ["a", "b"],
        "nested": {"n": 1, "x": 2.5, "none": None, "flag": True},
    }
    ids, _, _ = store.add(
        [
            Document("café crème 🙂", "données.jsonl", 7, metadata),
            Document("no origin"),
        ]
    )
    rows = store.get(ids)
    first, second = rows[ids[0]], rows[ids[1]]
    assert first.id == ids[0]
    assert first.text == "café crème 🙂"
    assert first.source == "données.jsonl"
    assert first.line == 7
    assert first.metadata == metadata
    assert first.count == 1
    assert second.source is None
    assert second.line is None
    assert second.metadata == {}


def test_get_leaves_out_unknown_ids(store: DocumentStore) -> None:
    store.add(_docs("x", "y"))
    rows = store.get([1, 99, -5, 0, 1])
    assert sorted(rows) == [0, 1]
    assert rows[0].text == "x" and rows[1].text == "y"
    assert store.get([]) == {}
    assert store.get([42]) == {}


def test_get_accepts_numpy_ids(store: DocumentStore) -> None:
    """Ids come straight from FAISS as numpy int64."""
    import numpy as np

    store.add(_docs("x", "y", "z"))
    rows = store.get(np.array([2, 0, -1], dtype=np.int64))
    assert sorted(rows) == [0, 2]


def test_many_documents_in_chunks(store: DocumentStore) -> None:
    """More than the 500-row chunk used for lookups, with duplicates spread across chunk boundaries."""
    texts = [f"document {i}" for i in range(1200)]
    ids, positions, _ = store.add(_docs(*texts))
    assert ids == list(range(1200))
    ids, positions, _ = store.add(_docs(*texts[::3], "brand new"))
    assert ids == [1200]
    assert positions == [400]
    assert store.count() == 1201
    assert store.total() == 1200 + 400 + 1
    rows = store.get(range(1201))
    assert len(rows) == 1201
    assert rows[3].count == 2 and rows[4].count == 1


def test_reopen_keeps_everything(tmp_path: Path) -> None:
    path = tmp_path / "documents.db"
    first = DocumentStore(path, writable=True)
    first.add(_docs("a", "b", "a"))
    first.close()
    again = DocumentStore(path, writable=True)
    assert again.count() == 2
    assert again.total() == 3
    ids, _, _ = again.add(_docs("c"))
    assert ids == [2]  # ids continue after the existing ones
    again.close()


def test_read_only_open_reads_and_cannot_write(tmp_path: Path) -> None:
    path = tmp_path / "documents.db"
    writer = DocumentStore(path, writable=True)
    writer.add(_docs("kept", "kept", "also kept"))
    writer.close()
    reader = DocumentStore(path)  # writable=False is the default
    assert reader.count() == 2
    assert reader.total() == 3
    assert reader.get([0])[0].text == "kept"
    with pytest.raises(IndexerError):
        reader.add(_docs("new text"))
    with pytest.raises(IndexerError):
        reader.add(_docs("kept"))  # only a count update, still a write
    assert reader.count() == 2
    assert reader.total() == 3
    reader.close()
    # Nothing was written behind the reader's back either.
    check = DocumentStore(path)
    assert check.count() == 2 and check.total() == 3
    check.close()


def test_read_only_open_of_a_missing_file_raises_and_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "absent.db"
    with pytest.raises(IndexerError):
        DocumentStore(path)
    assert not path.exists()


@pytest.mark.parametrize("name", ["index#2", "50%20off", "what?", "100%"])
def test_read_only_open_works_whatever_the_directory_name(tmp_path: Path, name: str) -> None:
    directory = tmp_path / name
    directory.mkdir()
    path = directory / "documents.db"
    writer = DocumentStore(path, writable=True)
    writer.add(_docs("hello"))
    writer.close()
    before = sorted(p.name for p in tmp_path.iterdir())
    reader = DocumentStore(path)
    assert reader.count() == 1
    assert reader.get([0])[0].text == "hello"
    reader.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_read_only_open_of_a_database_without_the_table_raises(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE something_else (x)")
    connection.commit()
    connection.close()
    with pytest.raises(IndexerError, match="no documents table"):
        DocumentStore(path)
    # A read-only open did not add the table.
    connection = sqlite3.connect(path)
    tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    connection.close()
    assert tables == ["something_else"]


def test_read_only_open_of_an_empty_file_raises(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.write_bytes(b"")
    with pytest.raises(IndexerError):
        DocumentStore(path)


@pytest.mark.parametrize("writable", [False, True])
def test_random_bytes_raise_indexer_error(tmp_path: Path, writable: bool) -> None:
    path = tmp_path / "random.db"
    path.write_bytes(os.urandom(16384))
    with pytest.raises(IndexerError, match="corrupt or unreadable"):
        store = DocumentStore(path, writable=writable)
        store.count()


def _filled_store_bytes(tmp_path: Path) -> bytes:
    path = tmp_path / "full.db"
    store = DocumentStore(path, writable=True)
    store.add([Document(f"document number {i} " * 10, "f.txt", i, {"i": i}) for i in range(500)])
    store.close()
    return path.read_bytes()


@pytest.mark.parametrize("fraction", [0.5, 0.1])
@pytest.mark.parametrize("writable", [False, True])
def test_truncated_store_raises_indexer_error_on_open_or_query(tmp_path: Path, fraction: float, writable: bool) -> None:
    good = _filled_store_bytes(tmp_path)
    path = tmp_path / "truncated.db"
    path.write_bytes(good[: int(len(good) * fraction)])
    with pytest.raises(IndexerError, match="corrupt or unreadable"):
        store = DocumentStore(path, writable=writable)
        store.count()
        store.total()
        store.get(range(500))


def test_pages_overwritten_with_garbage_raise_indexer_error_on_query(tmp_path: Path) -> None:
    """The header page is intact (the store opens), but the table's pages are garbage."""
    good = bytearray(_filled_store_bytes(tmp_path))
    page = 4096
    good[page:] = bytes((i * 37 + 11) % 256 for i in range(len(good) - page))
    path = tmp_path / "damaged.db"
    path.write_bytes(bytes(good))
    with pytest.raises(IndexerError):
        store = DocumentStore(path)
        store.total()
        store.get(range(500))


def test_no_clustering_until_one_is_saved(store: DocumentStore) -> None:
    store.add(_docs("alpha", "beta"))
    assert store.clustering() is None
    assert store.clusters_of([0, 1]) == {}
    assert store.cluster_members() == {}


def test_saved_clustering_reads_back_and_survives_reopening(store: DocumentStore) -> None:
    store.add(_docs("alpha", "beta", "gamma", "delta", "epsilon"))
    store.save_clustering("kmeans", {"k": 2, "seed": 0}, [0, 1, 2, 4], [1, 0, 0, 1], [0.5, 0.7, 0.9, 0.8], "now")
    store.close()
    reopened = DocumentStore(store.path)
    record = reopened.clustering()
    assert (record.method, record.parameters, record.clusters, record.documents, record.created_at) == (
        "kmeans", {"k": 2, "seed": 0}, 2, 4, "now"
    )
    assert reopened.clusters_of([0, 1, 3, 4, 99]) == {0: 1, 1: 0, 4: 1}
    assert reopened.cluster_members() == {0: [2, 1], 1: [4, 0]}  # most central first
    reopened.close()


def test_saving_a_clustering_replaces_the_previous_one(store: DocumentStore) -> None:
    store.add(_docs("alpha", "beta", "gamma"))
    store.save_clustering("kmeans", {"k": 3}, [0, 1, 2], [0, 1, 2], [1.0, 1.0, 1.0], "first")
    store.save_clustering("community", {"threshold": 0.9, "min_size": 2}, [0, 2], [0, 0], [0.9, 0.95], "second")
    assert store.clustering().method == "community"
    assert store.cluster_members() == {0: [2, 0]}
    assert store.clusters_of([0, 1, 2]) == {0: 0, 2: 0}


def test_cluster_lookups_take_more_ids_than_sqlite_parameters(store: DocumentStore) -> None:
    store.add(_docs(*(f"text {i}" for i in range(1200))))
    ids = list(range(1200))
    store.save_clustering("kmeans", {"k": 2}, ids, [i % 2 for i in ids], [1.0] * 1200, "now")
    assert store.clusters_of(ids) == {i: i % 2 for i in ids}
    assert [len(members) for members in store.cluster_members().values()] == [600, 600]
