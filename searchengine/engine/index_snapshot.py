"""One committed state of an index directory, loaded for reading: its manifest, vector segments, document store
(held at one read snapshot, so every read sees one commit) and whitening, and the ways it moves on to a newer
commit (`refresh`) or lets go of its snapshot around a write."""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from searchengine.errors import SearchEngineError
from searchengine.indexer.commit.commit_probe import CommitProbe
from searchengine.indexer.commit.index_directory import READ_ATTEMPTS, IndexDirectory
from searchengine.indexer.commit.index_state import state_of
from searchengine.indexer.commit.manifest import Manifest, StoredFile
from searchengine.indexer.errors import IndexerError
from searchengine.indexer.tables.store import DocumentStore
from searchengine.indexer.tables.wal_upkeep import LogUpkeep
from searchengine.indexer.upgrades.format_one import format_one_segments
from searchengine.indexer.vectors.segments import Segment, SegmentRecord, SegmentSet, load_segment
from searchengine.indexer.vectors.whitening import Whitening

LoadedSegments = weakref.WeakValueDictionary[str, Segment]
"""Loaded segments by file name, while a loaded state holds them: immutable, so a reload after a write loads only
the new ones, and the snapshots of one process's readers of an index (SearchEngine.sibling) load each one once."""


class IndexSnapshot:
    """The loaded state of the index in `path` as of one commit (`manifest`, `vectors`, `store`, `whitening`)."""

    def __init__(self, path: Path, segments: LoadedSegments | None = None) -> None:
        """Load whatever manifest is current in `path`; `segments`: loaded segments to share with other snapshots."""
        self.directory = IndexDirectory(path)
        self.manifest: Manifest
        """What the index holds, as of the last load (open, and after each change made through this engine)."""
        self.vectors: SegmentSet
        self._store: DocumentStore | None = None
        self.whitening: Whitening | None = None
        self.tombstones: np.ndarray
        """Ids of deleted documents whose vectors wait for `compact()` (index types that cannot delete)."""
        self.live = 0
        """Number of documents in the index (deleted ones not counted)."""
        self.keyword_index = False
        """Whether the index can search by keyword (keyword and hybrid modes)."""
        self.segments = segments if segments is not None else weakref.WeakValueDictionary()
        self._stamp: tuple[int, int] | None = None
        self._commit: int | None = None
        """The store's commit number as loaded (format 2): `refresh` reloads when a writer commits another."""
        self._schema: int | None = None
        """The store's schema version as loaded: a write that changed the store's tables is followed by `_load`."""
        self._probe: CommitProbe | None = None
        """Reads the newest commit number for `refresh`, leaving the loaded state's snapshot where it is."""
        self._upkeep: LogUpkeep | None = None
        """Says when `refresh` should renew the snapshot so SQLite can start its write-ahead log again."""
        self.closed = False
        """Whether `close()` was called: every later read or write is refused in one line (`check_open`)."""
        self._load()

    @property
    def path(self) -> Path:
        return self.directory.path

    @property
    def store(self) -> DocumentStore:
        """The document store of the loaded commit; refused after `close()` (`check_open`)."""
        if self.closed or self._store is None:  # None only once closed: every load sets it
            raise self._closed_error()
        return self._store

    def _load(self) -> None:
        # A writer may commit and remove the files between reading the manifest and opening them: read again.
        stamp = self.directory.manifest_stamp()
        probe = self._probe.newest if self._probe is not None else None  # a connection kept open, not a new one
        manifest, vectors, store, whitening = self.directory.read_consistently(self._open_files, False, probe)
        try:
            tombstones, live = self._checked(manifest, vectors, store, whitening)
        except BaseException:
            store.close()
            raise
        probe = self._probe if self._probe is not None and self._probe.path == store.path else None
        if probe is not None:  # kept open for the same store file: its connection reads every later commit
            self._probe = None
        self._close_files()
        if probe is not None and not manifest.segmented:
            probe.close()
        self.manifest, self.vectors, self._store, self.whitening = manifest, vectors, store, whitening
        self.tombstones, self.live, self._stamp = tombstones, live, stamp
        self._commit = store.segments.commit_number() if manifest.segmented else None
        self._schema = store.schema_version()
        self._probe = (probe or CommitProbe(store.path)) if manifest.segmented else None
        self._upkeep = LogUpkeep(store.path) if manifest.segmented else None
        if manifest.segmented:
            self.segments.update((segment.record.name, segment) for segment in vectors.segments)
        self.keyword_index = store.keyword.exists()

    def _load_in_place(self) -> None:
        """`_load` once this engine's snapshot was let go (around a write, `writing`, or by `release_snapshot`): the
        newest commit read through the store connection held, on a new read snapshot, keeping the connections beside
        it (the commit probe, the log's upkeep) and the loaded segments, so only new segments, the tombstones and
        the counts are read. Every check of `_load` runs. Where more than rows and segments changed (a rebuild or a
        conversion replaced the manifest, an upgrade step or a field index changed the store's tables), or nothing
        looks committed, or a segment went missing meanwhile, the full `_load` runs instead."""
        store, stamp = self.store, self.directory.manifest_stamp()
        if not self.manifest.segmented or store.closed or stamp != self._stamp:
            self._load()
            return
        store.read_snapshot()
        commit = store.segments.commit_number()
        if commit == self._commit or store.schema_version() != self._schema:
            self._load()
            return
        dimension = self.manifest.index.dimension
        try:
            records = store.segments.records()
            segments = [self._segment(record, dimension) for record in records]
        except IndexerError:  # a merge removed a segment after this snapshot began: `_load` reads again
            self._load()
            return
        manifest = state_of(store, self.manifest, records)
        if self.directory.manifest_stamp() != stamp:  # replaced meanwhile: the store read may be an old one's
            self._load()
            return
        vectors = SegmentSet(segments, manifest.index.type, dimension)
        self.tombstones, self.live = self._checked(manifest, vectors, store, self.whitening)
        self.manifest, self.vectors, self._commit = manifest, vectors, commit
        self.segments.update((segment.record.name, segment) for segment in segments)
        self.keyword_index = store.keyword.exists()

    def _checked(
        self, manifest: Manifest, vectors: SegmentSet, store: DocumentStore, whitening: Whitening | None
    ) -> tuple[np.ndarray, int]:
        """The tombstones and the live count of a state about to be loaded, once it passed every check: the model
        it was built with is still the one opened, the shapes agree, and the store's counts match its vectors."""
        if self._stamp is not None and manifest.model.fingerprint != self.manifest.model.fingerprint:
            raise SearchEngineError(
                f"index {self.path} was rebuilt with model {manifest.model.name} (fingerprint "
                f"{manifest.model.fingerprint}) since it was opened with {self.manifest.model.name}; open it again"
            )
        _check_dimensions(self.path, manifest, vectors, whitening)
        tombstones, live, live_vectors = store.tombstones.ids(), store.count(), store.vector_count()
        if live_vectors != manifest.count.vectors or vectors.count != live_vectors + len(tombstones):
            raise IndexerError(
                f"index {self.path} is inconsistent: {vectors.count} vectors, {live_vectors} for the {live} stored "
                f"documents and {len(tombstones)} deleted, manifest says {manifest.count.vectors}; rebuild the index"
            )
        return tombstones, live

    def refresh(self) -> bool:
        """Reload the index if a writer (another process, or another SearchEngine) committed since it was loaded;
        True if it did. A stat and one small read when nothing changed; after a write in place only the new
        segments are loaded. On failure the loaded state stays as it was, whole and usable: the newest commit is
        read beside it (CommitProbe), so its store keeps answering from the commit its segments belong to.
        When nothing changed but SQLite's write-ahead log has grown, the store's snapshot of the same commit may
        be renewed, so the log can start again (indexer/tables/wal_upkeep.py): call this now and then in a long-lived
        reader. After `release_snapshot`, this picks a snapshot up again."""
        if self.store.closed or (self._probe is not None and not self.store.holds_snapshot):
            return self._pick_up_snapshot()
        same_manifest = self.directory.manifest_stamp() == self._stamp
        if same_manifest and (self._probe is None or self._probe.newest() == self._commit):
            if self._upkeep is not None and self._upkeep.time_to_renew():
                return self._renew_snapshot()
            return False
        self._load()
        return True

    def _renew_snapshot(self) -> bool:
        """Read the same commit through a new read transaction, begun after the log was copied into the database
        file: opened beside the loaded store and swapped in only once it shows the same commit, so a writer that
        commits meanwhile never leaves the store a commit ahead of the segments (then this reloads; True)."""
        store = DocumentStore(self.store.path)
        try:
            store.read_snapshot()
            same = store.segments.commit_number() == self._commit
        except BaseException:
            store.close()
            raise
        if not same:
            store.close()
            self._load()
            return True
        self.store.close()
        self._store = store
        return False

    @contextlib.contextmanager
    def writing(self, may_commit_nothing: bool = False) -> Iterator[None]:
        """Around a write to this index: the read snapshot is let go first (one held across the write would keep
        SQLite from starting its write-ahead log again, so the log would grow with every write), and the committed
        state is loaded after. `may_commit_nothing` (a merge with nothing to merge), and a write that failed, first
        look whether anything was committed (`_pick_up_snapshot`); should that fail after a write that failed, the
        write's own error is the one raised."""
        self.check_open()
        self.store.release_snapshot()
        try:
            yield
        except BaseException:
            with contextlib.suppress(Exception):
                self._pick_up_snapshot()
            raise
        if may_commit_nothing:
            self._pick_up_snapshot()
        else:
            self._load_or_close()

    def release_snapshot(self) -> None:
        """Let go of the read snapshot until the next `refresh()`, which picks one up again (reloading if a writer
        committed meanwhile). An engine kept open but idle, such as the server's writer between writes, then keeps
        no part of SQLite's write-ahead log from being emptied (indexer/tables/wal_upkeep.py)."""
        self.store.release_snapshot()

    def _pick_up_snapshot(self) -> bool:
        """A read snapshot again after `writing` or `release_snapshot`: a new read transaction of the loaded store
        where nothing was committed meanwhile, else the committed state loaded (then True). Should that load fail,
        the store stays closed, so the engine answers nothing (a one-line error) until a `refresh()` loads."""
        if not self.store.closed:
            self.store.read_snapshot()
            same_manifest = self.directory.manifest_stamp() == self._stamp
            if same_manifest and (self._probe is None or self.store.segments.commit_number() == self._commit):
                return False
        self._load_or_close()
        return True

    def _load_or_close(self) -> None:
        """`_load_in_place`, closing the loaded store if it fails: that store's snapshot of the loaded commit was let
        go, so it would read a newer commit than the loaded segments, and the engine must not answer from both.
        (Closed only then: closing it first, as the last connection, made SQLite rebuild its log index at every
        write.)"""
        try:
            self._load_in_place()
        except BaseException:
            self.store.close()
            raise

    def _open_files(self, manifest: Manifest) -> tuple[Manifest, SegmentSet, DocumentStore, Whitening | None]:
        whitening_path = self.directory.file(manifest, "whitening")
        whitening = Whitening.load(whitening_path) if whitening_path else None
        store = DocumentStore(self.directory.file(manifest, "documents"))
        if not manifest.segmented:
            return manifest, format_one_segments(self.directory, manifest), store, whitening
        try:
            for attempt in range(READ_ATTEMPTS):  # a merge may remove segments between our snapshot and loading them
                store.read_snapshot()  # the counts, segments and tombstones of one commit, and the documents with them
                commit = store.segments.commit_number()
                try:
                    records = store.segments.records()
                    segments = [self._segment(record, manifest.index.dimension) for record in records]
                    break
                except IndexerError:
                    store.read_snapshot()
                    if attempt == READ_ATTEMPTS - 1 or store.segments.commit_number() == commit:
                        raise
            manifest = state_of(store, manifest, records)
        except BaseException:
            store.close()
            raise
        return manifest, SegmentSet(segments, manifest.index.type, manifest.index.dimension), store, whitening

    def _segment(self, record: SegmentRecord, dimension: int) -> Segment:
        """The loaded segment `record` names: the one loaded before, or read now (its checksum checked when small)."""
        loaded = self.segments.get(record.name)
        if loaded is not None:
            return loaded
        stored = StoredFile(record.name, record.size, record.checksum)
        problem = self.directory.check_file(stored, verify=lambda size: size <= self.directory.verify_on_open_bytes)
        if problem:
            raise IndexerError(f"{problem}; rebuild the index")
        return load_segment(self.path, record, dimension)

    def check_open(self) -> None:
        """Refuse a use of this state after `close()`, in one line, instead of failing on the files it let go."""
        if self.closed:
            raise self._closed_error()

    def _closed_error(self) -> SearchEngineError:
        return SearchEngineError(f"the engine on {self.path} was closed; open the index again (SearchEngine.open)")

    def close(self) -> None:
        """Close the store and the connections beside it; every later use is refused (`check_open`)."""
        self.closed = True
        self._close_files()

    def _close_files(self) -> None:
        """Close the store and the connections beside it, before a load replaces them or at `close()`."""
        if self._store is not None:
            self._store.close()
            self._store = None
        if self._probe is not None:
            self._probe.close()
            self._probe = None
        if self._upkeep is not None:  # closed last: a connection that can write, so SQLite may fold the log in
            self._upkeep.close()
            self._upkeep = None


def _check_dimensions(path: Path, manifest: Manifest, vectors: SegmentSet, whitening: Whitening | None) -> None:
    """Refuse files whose shapes disagree with the manifest before FAISS or numpy meets them mid-query."""
    expected = manifest.index.dimension
    if vectors.dimension != expected:
        raise IndexerError(
            f"index {path}: the vector index holds {vectors.dimension}-dimensional vectors but the manifest says "
            f"{expected}; rebuild the index"
        )
    if whitening is not None and whitening.matrix.shape != (manifest.model.dimension, expected):
        rows, columns = whitening.matrix.shape
        raise IndexerError(
            f"index {path}: the whitening maps {rows} to {columns} dimensions but the model has "
            f"{manifest.model.dimension} and the index {expected}; rebuild the index"
        )
