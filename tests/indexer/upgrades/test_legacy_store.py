"""Upgrade steps 1 and 2 on an index made by the code before one row per document (tests/fixtures/
make_legacy_store_index.py): read through a view without a file changing, then, at the first write, one row per
document with the shared vector copied, and the tables and keyword index later versions added."""

from __future__ import annotations

import hashlib
import tarfile
from pathlib import Path

import numpy as np
import pytest
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.live_write import writing_in_place
from searchengine.indexer.tables.store import DocumentStore
from searchengine.indexer.upgrades.migrations import MIGRATIONS, applied
from searchengine.indexer.vectors.segments import load_segment_set

from tests.indexer.small_index import unit_vectors

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "legacy_store.tar.gz"


@pytest.fixture
def old_index(tmp_path: Path) -> IndexDirectory:
    with tarfile.open(FIXTURE) as archive:
        archive.extractall(tmp_path, filter="data")
    return IndexDirectory(tmp_path / "index")


def _digests(directory: IndexDirectory) -> dict[str, str]:
    return {path.name: hashlib.sha256(path.read_bytes()).hexdigest() for path in sorted(directory.path.iterdir())}


def test_a_reader_reads_it_through_a_view_and_changes_no_file(old_index: IndexDirectory) -> None:
    before = _digests(old_index)
    store = DocumentStore(old_index.file(old_index.read_manifest(), "documents"))
    assert store.legacy and store.count() == 3
    assert [document.text for document in store.get([0, 1, 2]).values()] == ["alpha", "beta", "gamma"]
    assert "passages" not in store.db.table_names()
    store.close()
    assert _digests(old_index) == before


def test_the_first_write_gives_every_document_its_row_and_vector(old_index: IndexDirectory) -> None:
    with writing_in_place(old_index) as write:
        assert write.converted and write.upgraded == 3
    manifest = old_index.read_settings()
    store = DocumentStore(old_index.file(manifest, "documents"))
    rows = store.db.execute("SELECT id, external_id, text FROM documents ORDER BY id").fetchall()
    assert rows == [
        (0, "a1", "alpha"),
        (1, None, "beta"),
        (2, None, "gamma"),
        (3, "a2", "alpha"),
        (4, None, "gamma"),
        (5, None, "gamma"),
    ]
    assert not store.legacy and "external_ids" not in store.db.table_names()
    tables = set(store.db.table_names())
    assert {"tombstones", "passages", "documents_fts"} <= tables  # step 2
    assert sorted(found for found, _ in store.keyword.search("gamma", 10)) == [2, 4, 5]
    assert applied(store.db) == len(MIGRATIONS)  # steps 3 to 5
    records = store.segments.records()
    store.close()
    segments = load_segment_set(old_index.path, records, manifest.index.type, manifest.index.dimension)
    original = unit_vectors(3, 0)
    np.testing.assert_allclose(segments.reconstruct(np.arange(6)), original[[0, 1, 2, 0, 2, 2]], atol=1e-6)
