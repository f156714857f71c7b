"""Upgrade step 6 (indexer/upgrades/document_checksums.py, migration 4) on an index written by main before it
(tests/fixtures/main_index.tar.gz): verify says "no row checksums yet" until the step, which sums every stored row
once, after which each row matches its checksum."""

from __future__ import annotations

from pathlib import Path

import sqlite_utils
from searchengine.indexer.commit.row_check import rows_problem
from searchengine.indexer.tables.row_checksums import has_row_checksums
from searchengine.indexer.tables.store import DocumentStore
from searchengine.indexer.upgrades.document_checksums import row_checksums

from tests.indexer.upgrades.old_indexes import recorded, store_path, unpacked


def test_the_step_sums_every_stored_row_once(tmp_path: Path) -> None:
    path = store_path(unpacked("main_index", tmp_path))
    assert [number for number, _ in recorded(path)] == [1, 2, 3]
    store = DocumentStore(path)
    assert not has_row_checksums(store.db)
    problem, checked = rows_problem(store)
    assert problem is None and checked.startswith("no row checksums yet")
    store.close()
    db = sqlite_utils.Database(path)
    with db.conn:  # committed, as migrate's transaction commits it
        row_checksums(db)
    assert db["row_checksums"].count == db["documents"].count == 22
    db.close()
    store = DocumentStore(path)
    problem, checked = rows_problem(store)
    assert problem is None and checked.startswith("22 documents match")
    store.close()


def test_the_first_writable_open_records_it(tmp_path: Path) -> None:
    path = store_path(unpacked("main_index", tmp_path))
    DocumentStore(path, writable=True).close()
    assert recorded(path)[3] == (4, "row_checksums")
