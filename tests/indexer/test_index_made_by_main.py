"""An index written by main before the indexer was reorganised (tests/fixtures/make_main_index.py: a build in two
shards, an add, a delete) opens with nothing to upgrade (row checksums, migration 4, and the segments' originals
table, migration 5, come with its first write), answers the hits its vectors call for, and takes writes."""

from __future__ import annotations

import tarfile
from pathlib import Path

import numpy as np
import pytest
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.live_write import writing_in_place
from searchengine.indexer.tables.store import Document, DocumentStore
from searchengine.indexer.upgrades.chain import upgrade_index
from searchengine.indexer.upgrades.migrations import MIGRATIONS, applied
from searchengine.indexer.vectors.segments import SegmentSet, load_segment_set
from searchengine.indexer.vectors.vector_index import VectorIndex

from tests.indexer.small_index import DIMENSION, unit_vectors

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "main_index.tar.gz"


@pytest.fixture
def main_index(tmp_path: Path) -> IndexDirectory:
    with tarfile.open(FIXTURE) as archive:
        archive.extractall(tmp_path, filter="data")
    return IndexDirectory(tmp_path / "index")


def _opened(directory: IndexDirectory) -> tuple[DocumentStore, SegmentSet]:
    manifest = directory.read_settings()
    store = DocumentStore(directory.file(manifest, "documents"))
    return store, load_segment_set(directory.path, store.segments.records(), "Flat", DIMENSION)


def _expected(vectors: dict[int, np.ndarray], queries: np.ndarray, k: int) -> np.ndarray:
    """The ids one exact index of `vectors` returns."""
    index = VectorIndex.create("Flat", DIMENSION)
    ids = np.array(sorted(vectors), dtype=np.int64)
    index.add(np.stack([vectors[i] for i in ids]), ids)
    return index.search(queries, k)[1]


def test_it_opens_as_written_with_nothing_to_upgrade(main_index: IndexDirectory) -> None:
    store, segments = _opened(main_index)
    assert store.count() == 22 and list(store.tombstones.ids()) == [4] and len(segments.segments) == 3
    assert applied(store.db) == 3 and not store.legacy  # main's three; 4 and 5 come at the first write
    assert all(record.originals is None for record in store.segments.records())
    store.close()
    assert upgrade_index(main_index) == (False, 0)


def test_it_answers_the_same_hits_and_takes_writes(main_index: IndexDirectory) -> None:
    vectors = dict(enumerate(unit_vectors(20, 0))) | dict(zip(range(20, 23), unit_vectors(3, 1)))
    del vectors[4]
    queries = unit_vectors(6, 7)
    store, segments = _opened(main_index)
    found = segments.search(queries, 5, excluded=store.tombstones.ids())[1]
    np.testing.assert_array_equal(found, _expected(vectors, queries, 5))
    assert sorted(found for found, _ in store.keyword.search("added", 10)) == [20, 21, 22]
    store.close()
    with writing_in_place(main_index) as write:
        change = write.store.add([Document("one more")])
        write.vectors.add(unit_vectors(1, 9), np.asarray(change.ids))
        write.store.tombstones.add(write.store.delete([5]))
    vectors[change.ids[0]] = unit_vectors(1, 9)[0]
    del vectors[5]
    store, segments = _opened(main_index)
    assert store.count() == 22 and sorted(store.tombstones.ids()) == [4, 5]
    assert applied(store.db) == len(MIGRATIONS)
    assert [check.problem for check in main_index.verify() if check.problem] == []
    found = segments.search(queries, 5, excluded=store.tombstones.ids())[1]
    np.testing.assert_array_equal(found, _expected(vectors, queries, 5))
    store.close()
