"""Upgrade step 7 (indexer/upgrades/originals_table.py, migration 5) on an index written by main before it
(tests/fixtures/main_index.tar.gz): the store gains the table naming segments' originals files, empty, so every
segment it names reads as keeping none, before the step and after."""

from __future__ import annotations

from pathlib import Path

import sqlite_utils
from searchengine.indexer.tables.store import DocumentStore
from searchengine.indexer.upgrades.originals_table import segment_originals

from tests.indexer.upgrades.old_indexes import recorded, store_path, tables, unpacked


def test_the_step_adds_the_table_empty(tmp_path: Path) -> None:
    path = store_path(unpacked("main_index", tmp_path))
    assert "segment_originals" not in tables(path)
    store = DocumentStore(path)
    before = store.segments.records()
    store.close()
    assert len(before) == 3 and all(record.originals is None for record in before)
    db = sqlite_utils.Database(path)
    with db.conn:  # committed, as migrate's transaction commits it
        segment_originals(db)
    assert db["segment_originals"].count == 0
    db.close()
    store = DocumentStore(path, writable=True)
    assert store.segments.records() == before
    store.close()
    assert recorded(path)[4] == (5, "segment_originals")
