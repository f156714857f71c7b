"""Upgrade step 3's store part (indexer/upgrades/segment_tables.py, migration 1) on a format-1 index made by the
code before segments (tests/fixtures/format_one_sharded.tar.gz): the store gains the segments and index_state tables,
empty, and the index's first write records the step and names its converted segments there."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import sqlite_utils
from searchengine.indexer.commit.live_write import writing_in_place
from searchengine.indexer.tables.store import Document, DocumentStore
from searchengine.indexer.upgrades.segment_tables import segments

from tests.indexer.small_index import unit_vectors
from tests.indexer.upgrades.old_indexes import recorded, store_path, tables, unpacked


def test_the_step_adds_the_format_2_tables_empty_and_keeps_the_documents(tmp_path: Path) -> None:
    path = store_path(unpacked("format_one_sharded", tmp_path))
    assert not {"segments", "index_state"} & tables(path) and recorded(path) == []
    db = sqlite_utils.Database(path)
    with db.conn:  # committed, as migrate's transaction commits it
        segments(db)
    assert db["segments"].count == 0 and db["index_state"].count == 0 and db["documents"].count == 12
    db.close()


def test_the_first_write_records_it_and_names_the_segments_it_converted(tmp_path: Path) -> None:
    directory = unpacked("format_one_sharded", tmp_path)
    with writing_in_place(directory) as write:
        change = write.store.add([Document("after the upgrade")])
        write.vectors.add(unit_vectors(1, 9), np.asarray(change.ids))
    path = store_path(directory)
    assert recorded(path)[0] == (1, "segments")
    store = DocumentStore(path)
    named = [record.name for record in store.segments.records()]
    assert store.count() == 13 and len(named) == 4  # the three shards, and the write's own segment
    assert all((directory.path / name).is_file() for name in named)
    store.close()
    assert [check.problem for check in directory.verify() if check.problem] == []
