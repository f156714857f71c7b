"""A format-1 index made by the code before segments (tests/fixtures/make_format_one_index.py, three shards) is read
as segments with the hits one index of its vectors gives, and its first write converts it to segments for good."""

from __future__ import annotations

import tarfile
from pathlib import Path

import numpy as np
import pytest
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.live_write import writing_in_place
from searchengine.indexer.tables.store import Document, DocumentStore
from searchengine.indexer.upgrades.format_one import format_one_segments
from searchengine.indexer.upgrades.migrations import MIGRATIONS, applied
from searchengine.indexer.vectors.segments import load_segment_set
from searchengine.indexer.vectors.vector_index import VectorIndex

from tests.indexer.small_index import DIMENSION, unit_vectors

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "format_one_sharded.tar.gz"
COUNT = 12


@pytest.fixture
def old_index(tmp_path: Path) -> IndexDirectory:
    with tarfile.open(FIXTURE) as archive:
        archive.extractall(tmp_path, filter="data")
    return IndexDirectory(tmp_path / "index")


def _one_index() -> VectorIndex:
    """The fixture's vectors in one Flat index: the hits its shards must give."""
    index = VectorIndex.create("Flat", DIMENSION)
    index.add(unit_vectors(COUNT, 0), np.arange(COUNT, dtype=np.int64))
    return index


def test_the_fixture_is_format_one_in_three_shards(old_index: IndexDirectory) -> None:
    manifest = old_index.read_manifest()
    assert not manifest.segmented and manifest.index.shards == 3
    assert {"vectors.0", "vectors.1", "vectors.2", "documents"} <= set(manifest.files)


def test_its_shards_are_read_as_segments_with_the_hits_of_one_index(old_index: IndexDirectory) -> None:
    segments = format_one_segments(old_index, old_index.read_manifest())
    assert [segment.index.count for segment in segments.segments] == [4, 4, 4]
    for number, segment in enumerate(segments.segments):
        assert set(segment.ids % 3) == {number}
    queries = unit_vectors(5, 7)
    for restriction in ({}, {"allowed": np.arange(0, COUNT, 2)}, {"excluded": np.array([1, 5, 9])}):
        expected = _one_index().search(queries, 6, **restriction)
        found = segments.search(queries, 6, **restriction)
        np.testing.assert_array_equal(found[1], expected[1])
        np.testing.assert_allclose(found[0], expected[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(segments.reconstruct(np.arange(COUNT)), unit_vectors(COUNT, 0), atol=1e-6)


def test_its_first_write_converts_it_to_segments_that_answer_the_same(old_index: IndexDirectory) -> None:
    queries = unit_vectors(5, 7)
    expected = _one_index().search(queries, 6)
    with writing_in_place(old_index) as write:
        assert write.converted and write.upgraded == 0
        change = write.store.add([Document("one more")])
        write.vectors.add(unit_vectors(1, 99), np.asarray(change.ids))
    manifest = old_index.read_settings()
    assert manifest.segmented
    store = DocumentStore(old_index.file(manifest, "documents"))
    records = store.segments.records()
    assert store.count() == COUNT + 1 and applied(store.db) == len(MIGRATIONS)  # steps 3 to 5 recorded
    store.close()
    segments = load_segment_set(old_index.path, records, manifest.index.type, manifest.index.dimension)
    assert len(segments.segments) == 4  # the three shards, then the write's own segment
    assert sorted(segments.ids()) == list(range(COUNT + 1))
    found = segments.search(queries, 6, excluded=np.array([COUNT]))
    np.testing.assert_array_equal(found[1], expected[1])
