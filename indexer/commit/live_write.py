"""A write in place: the cost of a write is what it writes, not what the index holds.

The commit protocol of every write to a format-2 index (add, upsert, delete, cluster, dedupe; merges in
indexer/commit/merge_policy.py):
  1. under the directory's writer lock, open the store and BEGIN IMMEDIATE: the write's one transaction;
  2. change documents, passages, the keyword index, tombstones and metadata in place, inside it;
  3. write the write's new vectors as one new segment file, and fsync it and the directory;
  4. name the segment in the store, stamp the commit (number, time, versions, next id) and COMMIT: the commit
     point. Before it the index is the previous state (the segment file is an orphan); after it, the new one;
  5. remove the files no committed state names (orphans of interrupted writes, segments merged away).
A failure or a kill at any step leaves the previous committed state, or the new one once step 4 is done.

Nothing here reads the existing vectors: a write loads neither the FAISS segments nor anything else that grows
with the index. An index written by an older version (format 1) is converted once, on its first write, by one
whole rewrite (indexer/commit/rewrite.py), and says so.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from searchengine.indexer.commit.crash_points import crash_point
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.manifest import Manifest, StoredFile
from searchengine.indexer.errors import IndexerError
from searchengine.indexer.tables.store import DocumentStore
from searchengine.indexer.upgrades.chain import upgrade_index
from searchengine.indexer.vectors.originals import ORIGINAL_TYPES, ORIGINALS_SETTING
from searchengine.indexer.vectors.segments import SegmentRecord, SegmentSet, load_segment_set, write_segment
from searchengine.indexer.vectors.template import TemplateRecord, encoder_of, encodes, load_template, sample_errors
from searchengine.indexer.vectors.vector_index import VectorIndex
from searchengine.indexer.vectors.whitening import Whitening


class NewVectors:
    """The vectors a write adds: one new segment, written at commit, exact, or in an index with a trained template
    (indexer/vectors/template.py) encoded with it where `encodes` says so (no training: a copy of the template,
    the vectors added). Deletes cannot remove vectors from immutable segments, so `remove` says so and the caller
    tombstones them."""

    def __init__(self, factory: str, dimension: int, template: TemplateRecord | None = None) -> None:
        self.factory = factory
        self.dimension = dimension
        self.template = template
        """The store's template record (read at the write's start), loaded only when the write encodes with it."""
        self._index: VectorIndex | None = None

    @property
    def count(self) -> int:
        return 0 if self._index is None else self._index.count

    @property
    def needs_training(self) -> bool:
        return False

    def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        if self._index is None:
            self._index = VectorIndex.create("Flat", self.dimension)
        self._index.add(vectors, ids)

    def remove(self, ids: np.ndarray) -> bool:  # noqa: ARG002 (BuildParts' interface)
        return False

    def write(self, directory: IndexDirectory, store: DocumentStore) -> SegmentRecord | None:
        """Write the new segment, with the store's permissions (None when nothing was added); vectors encoded with
        the template are counted in the store with their quantization error (what `info`'s retrain advice reads)."""
        if self._index is None or not self._index.count:
            return None
        index = self._index
        if self.template is not None:
            record = self.template
            problem = directory.check_file(StoredFile(record.name, record.size, record.checksum))
            if problem:
                raise IndexerError(f"{problem}; run `searchengine compact --retrain` on the index")
            template = load_template(directory.path, record, self.dimension)
            ids, vectors = self._index.stored_matrix()
            store.segments.count_added(len(ids), *(sample_errors(template, vectors) or (0, 0.0)))
            if encodes(template, index.count):
                originals = store.settings.get(ORIGINALS_SETTING)
                index = encoder_of(template, originals if originals in ORIGINAL_TYPES else None)
                index.add(vectors, ids)
        return write_segment(directory.path, index, mode_of=store.path)


@dataclass
class IndexWrite:
    """An open write in place: change `store` (inside its transaction) and add to `vectors`; committed whole when
    the `writing_in_place` block ends, rolled back if it raises."""

    directory: IndexDirectory
    store: DocumentStore
    vectors: NewVectors
    whitening: Whitening | None
    manifest: Manifest
    versions: dict[str, str] | None = None
    """Library versions to record (None: a write that encodes nothing keeps the recorded ones)."""
    converted: bool = False
    """True when this write first converted an index of format 1 (one whole rewrite)."""
    upgraded: int = 0
    """Documents an older store had merged into another's row, given rows of their own by the conversion."""
    _segments: SegmentSet | None = field(default=None, repr=False)

    def segments(self) -> SegmentSet:
        """The committed vectors, every file's checksum checked (loaded on first use: adding and deleting never
        need them)."""
        if self._segments is None:
            index = self.manifest.index
            records = self.store.segments.records()
            for record in records:  # read whole anyway: check every byte before a write builds on them
                for name, size, checksum in record.files:
                    problem = self.directory.check_file(StoredFile(name, size, checksum))
                    if problem:
                        raise IndexerError(f"{problem}; rebuild the index")
            self._segments = load_segment_set(self.directory.path, records, index.type, index.dimension)
        return self._segments


@contextmanager
def writing_in_place(directory: IndexDirectory, versions: dict[str, str] | None = None) -> Iterator[IndexWrite]:
    """Hold the writer lock over one transaction on the index's store; commit it with the write's new segment
    when the block finishes, roll everything back if it raises (see the module's commit protocol)."""
    converted, upgraded = upgrade_index(directory)
    with directory.locked():
        manifest = directory.read_settings()
        whitening_path = directory.file(manifest, "whitening")
        store = DocumentStore(directory.file(manifest, "documents"), writable=True)
        write = IndexWrite(
            directory=directory,
            store=store,
            vectors=NewVectors("Flat", manifest.index.dimension, store.segments.template()),
            whitening=Whitening.load(whitening_path) if whitening_path else None,
            manifest=manifest,
            versions=versions,
            converted=converted,
            upgraded=upgraded,
        )
        segment: SegmentRecord | None = None
        try:
            store.begin()
            yield write
            segment = write.vectors.write(directory, store)
            crash_point("segment-synced")
            if segment is not None:
                store.segments.add([segment])
            store.segments.stamp(versions, store.next_id())
            crash_point("before-commit")
            store.commit()
            crash_point("after-commit")
        except BaseException:
            store.rollback()
            store.close()
            if segment is not None:
                directory.remove_if_uncommitted(segment.name)
            raise
        try:
            # read through the writer's connection (no second one opened), with the manifest read under this lock
            directory.remove_unreferenced(store, manifest)
        finally:
            store.close()
