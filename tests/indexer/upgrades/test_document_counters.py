"""Upgrade step 4 (indexer/upgrades/document_counters.py, migration 2) on an index made by the code before it
(tests/fixtures/before_counters.tar.gz, made at ac9f40d^: 14 documents, one deleted): the counters start from the
rows the store holds, and its triggers keep them in step with later writes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import sqlite_utils
from searchengine.indexer.commit.live_write import writing_in_place
from searchengine.indexer.tables.counters import counted, read_counter
from searchengine.indexer.tables.store import Document, DocumentStore
from searchengine.indexer.upgrades.document_counters import counters

from tests.indexer.small_index import unit_vectors
from tests.indexer.upgrades.old_indexes import recorded, store_path, tables, unpacked


def test_the_step_counts_the_rows_already_stored(tmp_path: Path) -> None:
    path = store_path(unpacked("before_counters", tmp_path))
    assert recorded(path) == [(1, "segments")] and "counters" not in tables(path)
    reader = DocumentStore(path)
    assert reader.count() == 13  # counted by a scan while the store has no counters
    reader.close()
    assert "counters" not in tables(path)  # reading changes nothing
    db = sqlite_utils.Database(path)
    with db.conn:  # committed, as migrate's transaction commits it
        counters(db)
    assert read_counter(db, "documents") == counted(db, "documents") == 13
    assert read_counter(db, "passages") == counted(db, "passages") == 0
    db.close()


def test_after_the_first_write_the_counters_follow_every_write(tmp_path: Path) -> None:
    directory = unpacked("before_counters", tmp_path)
    with writing_in_place(directory) as write:
        change = write.store.add([Document("one more"), Document("and another")])
        write.vectors.add(unit_vectors(2, 9), np.asarray(change.ids))
        write.store.tombstones.add(write.store.delete([0]))
    path = store_path(directory)
    assert recorded(path)[1] == (2, "counters")
    store = DocumentStore(path)
    assert read_counter(store.db, "documents") == counted(store.db, "documents") == store.count() == 14
    store.close()
    assert [check.problem for check in directory.verify() if check.problem] == []
