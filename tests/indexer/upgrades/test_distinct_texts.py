"""Upgrade step 9 (indexer/upgrades/distinct_texts.py, migration 7) on an index written by main before it
(tests/fixtures/main_index.tar.gz): the store gains the kept count of distinct texts, counted once from the rows
already stored, and `info`'s repeats then read it instead of the whole index of text hashes."""

from __future__ import annotations

from pathlib import Path

import sqlite_utils
from searchengine.indexer.tables.counters import DISTINCT_TEXTS, read_counter
from searchengine.indexer.tables.documents import Document
from searchengine.indexer.tables.store import DocumentStore
from searchengine.indexer.upgrades.distinct_texts import distinct_texts

from tests.indexer.upgrades.old_indexes import recorded, store_path, unpacked

SCANNED = "SELECT count(DISTINCT hash) FROM documents"


def test_the_step_counts_the_stored_texts_once_then_keeps_the_count(tmp_path: Path) -> None:
    path = store_path(unpacked("main_index", tmp_path))
    assert 7 not in {number for number, _ in recorded(path)}
    db = sqlite_utils.Database(path)
    distinct = db.execute(SCANNED).fetchone()[0]
    assert distinct > 0
    with db.conn:  # committed, as migrate's transaction commits it
        distinct_texts(db)
    assert read_counter(db, DISTINCT_TEXTS) == distinct
    db.close()
    store = DocumentStore(path, writable=True)
    store.begin()
    store.add([Document("a text no index of main holds"), Document("a text no index of main holds")])
    store.commit()
    assert read_counter(store.db, DISTINCT_TEXTS) == distinct + 1 == store.db.execute(SCANNED).fetchone()[0]
    store.close()
    assert recorded(path)[6] == (7, "distinct_texts")
