"""The store's schema: a store of any age opened for writing gains the base tables it lacks and every numbered
migration, once, in order; a read-only open changes nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from searchengine.indexer.tables.store import Document, DocumentStore
from searchengine.indexer.upgrades.migrations import MIGRATIONS, applied


def _tables(path: Path) -> set[str]:
    connection = sqlite3.connect(path)
    try:
        return {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        connection.close()


def _oldest_store(path: Path) -> None:
    """A store as the first versions wrote it: the documents table alone (no keyword index, tombstones, passages
    or migrations)."""
    connection = sqlite3.connect(path)
    connection.execute(
        "CREATE TABLE documents (id INTEGER PRIMARY KEY, external_id TEXT, text TEXT, source TEXT, line INTEGER, "
        "metadata TEXT, hash TEXT)"
    )
    connection.execute("INSERT INTO documents VALUES (0, NULL, 'an old text', NULL, NULL, '{}', 'h0')")
    connection.commit()
    connection.close()


def test_a_store_from_before_the_migrations_gains_every_table_and_migration_when_written(tmp_path: Path) -> None:
    path = tmp_path / "documents.db"
    _oldest_store(path)
    reader = DocumentStore(path)
    assert reader.count() == 1 and not reader.keyword.exists()
    reader.close()
    assert _tables(path) == {"documents"}  # reading changes nothing
    writer = DocumentStore(path, writable=True)
    assert applied(writer.db) == len(MIGRATIONS)
    numbered = writer.db.execute("SELECT number, name FROM schema_migrations ORDER BY number").fetchall()
    assert numbered == [(n, m.__name__.strip("_")) for n, m in enumerate(MIGRATIONS, start=1)]
    assert writer.add([Document("a new text")]).ids == [1]
    assert [hit for hit, _ in writer.keyword.search("text", 5)] == [0, 1]  # the keyword index holds the old row
    writer.close()
    assert {"documents_fts", "tombstones", "passages", "segments", "counters", "build_settings"} <= _tables(path)


def test_migrations_run_once(tmp_path: Path) -> None:
    path = tmp_path / "documents.db"
    DocumentStore(path, writable=True).close()
    schema = sqlite3.connect(path).execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall()
    again = DocumentStore(path, writable=True)
    assert applied(again.db) == len(MIGRATIONS)
    assert again.db.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] == len(MIGRATIONS)
    again.close()
    assert sqlite3.connect(path).execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall() == schema


def test_a_store_from_a_newer_searchengine_is_read_but_not_written(tmp_path: Path) -> None:
    """A store that has had a migration this code does not know was written to as if it were current, its newer
    records left behind by the write."""
    import pytest
    from searchengine.indexer.errors import IndexerError

    path = tmp_path / "documents.db"
    store = DocumentStore(path, writable=True)
    store.add([Document("a text of a newer searchengine")])
    store.close()
    connection = sqlite3.connect(path)
    connection.execute("INSERT INTO schema_migrations VALUES (?, 'from_a_newer_version')", [len(MIGRATIONS) + 1])
    connection.commit()
    connection.close()
    reader = DocumentStore(path)
    assert reader.count() == 1
    reader.close()
    newer = rf"written by a newer searchengine \(its store has had {len(MIGRATIONS) + 1} schema changes, this .* knows"
    with pytest.raises(IndexerError, match=newer):
        DocumentStore(path, writable=True)
