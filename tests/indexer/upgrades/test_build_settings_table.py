"""Upgrade step 5 (indexer/upgrades/build_settings_table.py, migration 3) on an index made by the code before it
(tests/fixtures/before_build_settings.tar.gz, made at 87d479b^): the store reads as holding no settings before and
after the step, and the first write gains the table, which then keeps what is set."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import sqlite_utils
from searchengine.indexer.commit.live_write import writing_in_place
from searchengine.indexer.tables.store import Document, DocumentStore
from searchengine.indexer.upgrades.build_settings_table import build_settings

from tests.indexer.small_index import unit_vectors
from tests.indexer.upgrades.old_indexes import recorded, store_path, tables, unpacked


def test_the_step_adds_the_table_empty(tmp_path: Path) -> None:
    path = store_path(unpacked("before_build_settings", tmp_path))
    assert recorded(path) == [(1, "segments"), (2, "counters")] and "build_settings" not in tables(path)
    reader = DocumentStore(path)
    assert reader.settings.get("reading") is None and reader.count() == 13
    reader.close()
    db = sqlite_utils.Database(path)
    with db.conn:  # committed, as migrate's transaction commits it
        build_settings(db)
    assert db["build_settings"].count == 0
    db.close()


def test_after_the_first_write_the_index_keeps_its_settings(tmp_path: Path) -> None:
    directory = unpacked("before_build_settings", tmp_path)
    with writing_in_place(directory) as write:
        assert write.store.settings.get("reading") is None
        change = write.store.add([Document("one more")])
        write.vectors.add(unit_vectors(1, 9), np.asarray(change.ids))
        write.store.settings.set("reading", {"text_field": "body"})
    path = store_path(directory)
    assert recorded(path)[2] == (3, "build_settings")
    store = DocumentStore(path)
    assert store.settings.get("reading") == {"text_field": "body"} and store.count() == 14
    store.close()
    assert [check.problem for check in directory.verify() if check.problem] == []
