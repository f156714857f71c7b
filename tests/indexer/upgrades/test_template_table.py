"""Upgrade step 8 (indexer/upgrades/template_table.py, migration 6) on an index written by main before it
(tests/fixtures/main_index.tar.gz): the store gains the table of the trained template, empty (an index built before
has none until a merge trains one or `compact --retrain`)."""

from __future__ import annotations

from pathlib import Path

import sqlite_utils
from searchengine.indexer.tables.store import DocumentStore
from searchengine.indexer.upgrades.template_table import vector_template

from tests.indexer.upgrades.old_indexes import recorded, store_path, tables, unpacked


def test_the_step_adds_the_table_empty(tmp_path: Path) -> None:
    path = store_path(unpacked("main_index", tmp_path))
    assert "vector_template" not in tables(path)
    store = DocumentStore(path)
    assert store.segments.template() is None
    store.close()
    db = sqlite_utils.Database(path)
    with db.conn:  # committed, as migrate's transaction commits it
        vector_template(db)
    assert db["vector_template"].count == 0
    db.close()
    store = DocumentStore(path, writable=True)
    assert store.segments.template() is None
    store.close()
    assert recorded(path)[5] == (6, "vector_template")
