"""ShardCopy: one copy of one shard of a cluster index, an ordinary index directory on the local disk of the node
it runs on, read by an IndexReader and written under the index's own commit protocol. A plain class: the cluster
runs it as a Ray actor (`ray.remote(ShardCopy)`, pinned to its node), and it can be the body of a Ray Serve
deployment as it is. Every write carries the shard's sequence number, stored in the same SQLite transaction as
the write, so a copy knows exactly which writes it holds; cluster writes are upserts and deletes by external id,
so applying one again changes nothing."""

from __future__ import annotations

import functools
import logging
import os
import queue
import shutil
import sqlite3
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from searchengine.cluster.embedded_model import EmbeddedModel
from searchengine.cluster.errors import ClusterError, CopyBehindError, WriteConflictError
from searchengine.cluster.node_folders import current_node, own_folder, remove_folder
from searchengine.cluster.shard_search import ShardCandidates, ShardQuery, shard_candidates, shard_statistics
from searchengine.cluster.write_counts import AppliedWrite, WriteCounts
from searchengine.engine.filters import Filters
from searchengine.engine.index_reader import IndexReader
from searchengine.engine.index_writer import IndexWriter
from searchengine.engine.indexing import Chunk, IndexSettings, build_index, drop_vectors
from searchengine.engine.search import Hit, Scored, hits_of
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.live_write import writing_in_place
from searchengine.indexer.commit.merge_policy import MERGE_LIMIT, merge_limit, plan_merge
from searchengine.indexer.query.global_bm25 import TermStatistics
from searchengine.indexer.tables.documents import Document
from searchengine.indexer.tables.store import StoreChange

SEQUENCE = "cluster_sequence"
"""The store setting that holds the last write of the shard this copy committed (0: the build)."""
WRITE = "cluster_write"
"""The store setting that names the copy's last write (its writer's id for it), committed with its SEQUENCE."""
log = logging.getLogger("searchengine.cluster")
_END = object()
_ABORT = object()


def _one_at_a_time(method: Callable[..., Any]) -> Callable[..., Any]:
    """A ShardCopy method that runs alone: an actor calls them one at a time anyway, a Serve replica may not."""

    @functools.wraps(method)
    def alone(self: ShardCopy, *args: Any, **options: Any) -> Any:  # noqa: ANN401
        with self._lock:
            return method(self, *args, **options)

    return alone


class ShardCopy:
    """Copy `shard` of a cluster index, in `folder` under `local_root`'s subfolder of the node it runs on. Refused
    (CopyFolderError) when `folder` belongs to another node: nothing assumes a shared file system."""

    def __init__(self, folder: str, shard: int, local_root: str, node: str | None = None) -> None:
        self.node = node or current_node()
        path = own_folder(folder, local_root, self.node)
        self.folder, self.shard = path, shard
        self._lock = threading.RLock()
        self.reader: IndexReader | None = None
        self._build: _Build | None = None
        if IndexDirectory(path).exists():
            self.reader = IndexReader(path)

    # the build --------------------------------------------------------------------------------------------------
    @_one_at_a_time
    def begin_build(self, model: EmbeddedModel, index_type: str) -> None:
        """Start building this copy's index from the batches `write_batch` gives (in a thread of this process,
        so the batches stream into one build)."""
        if self.reader is not None or self._build is not None:
            raise ClusterError(f"shard copy {self.folder} already holds an index: a build writes a new folder")
        self._build = _Build(self.folder, model, index_type)

    @_one_at_a_time
    def write_batch(self, documents: list[Document], vectors: np.ndarray) -> int:
        """Store `documents` with their `vectors` (embedded by a worker) in the build; returns how many."""
        if self._build is None:
            raise ClusterError("write_batch before begin_build: start the build first")
        self._build.put(Chunk(documents, np.asarray(vectors, dtype=np.float32)))
        return len(documents)

    @_one_at_a_time
    def finish_build(self) -> dict[str, Any]:
        """Commit the build in this copy's folder and open it; returns what was written, where, and by which
        process (so a caller can count that it wrote none of it)."""
        if self._build is None:
            raise ClusterError("finish_build before begin_build: start the build first")
        build, self._build = self._build, None
        documents = build.finish()
        self.reader = IndexReader(self.folder)
        return {"documents": documents, "rows": len(self.reader), "pid": os.getpid(), "node": self.node}

    # reading ----------------------------------------------------------------------------------------------------
    @_one_at_a_time
    def statistics(self, texts: list[str]) -> TermStatistics:
        """This shard's term statistics for the words of `texts` (the first round of a keyword or hybrid search)."""
        return shard_statistics(self._reader(), texts)

    @_one_at_a_time
    def candidates(self, query: ShardQuery, queries: int) -> tuple[list[ShardCandidates], int]:
        """This shard's candidates for a search (the second round; shard_search.shard_candidates)."""
        return shard_candidates(self._reader(), query, queries)

    @_one_at_a_time
    def hits(self, rankings: list[list[Scored]]) -> list[list[Hit]]:
        """The documents of the chosen candidates, in order, as hits with this shard's ids (the last round)."""
        return hits_of(self._reader().store, rankings)

    @_one_at_a_time
    def documents(self, where: Filters) -> list[Document]:
        """This shard's documents that meet every filter (IndexReader.documents)."""
        return self._reader().documents(where)

    @_one_at_a_time
    def ids_of(self, external_ids: list[str]) -> dict[str, int]:
        """This shard's ids of the stored documents with `external_ids`, by external id (those a delete of them
        removes; an id no document has is left out)."""
        found = self._reader().store.documents.by_external_id(set(external_ids))
        return {external_id: int(row_id) for external_id, (row_id, _) in found.items()}

    @_one_at_a_time
    def status(self) -> dict[str, Any]:
        """This copy's node, folder, documents, segments and sequence number."""
        reader = self._reader()
        return {
            "shard": self.shard,
            "node": self.node,
            "folder": str(self.folder),
            "documents": len(reader),
            "segments": len(reader.vectors.segments),
            "sequence": self.sequence(),
        }

    @_one_at_a_time
    def sequence(self) -> int:
        """The shard's last write this copy committed (0: none since the build)."""
        return _held(self._reader())

    @_one_at_a_time
    def last_write(self) -> tuple[int, str | None]:
        """The shard's last write this copy committed and its writer's id for it (None: none since the build, or one
        written without an id): two copies at the same number hold the same writes only when the ids agree too."""
        reader = self._reader()
        return _held(reader), reader.store.settings.get(WRITE)

    # writing ----------------------------------------------------------------------------------------------------
    @_one_at_a_time
    def apply(
        self,
        sequence: int,
        documents: list[Document],
        vectors: np.ndarray | None,
        deleted: list[str],
        write_id: str | None = None,
    ) -> AppliedWrite:
        """Write number `sequence` of the shard: upsert `documents` (with their `vectors`) and delete the documents
        with the external ids `deleted`, in one commit that also stores `sequence` and `write_id` (the writer's id
        for it); then its segments are merged as the index's merge policy asks, as one index's add merges (each write
        leaves a segment: unmerged, every later reload and search of the copy pays for each). The write this copy
        holds already (its last, with the same `write_id`) changes nothing; another write under a number it holds
        is refused (WriteConflictError: another writer wrote the shard since this one read it), and so is one that
        skips a write it lacks (it must catch up first). `write_id` None (a caller that writes the copy alone, as a
        benchmark does): any number it holds is taken as held. Returns the copy's sequence number after it and what
        the write did (WriteCounts, as one index's add counts it; None for a write it held already)."""
        reader = self._reader()  # refreshed once: the sequence is read from the state it loaded
        held = _held(reader)
        if sequence <= held:
            if write_id is None or (sequence == held and write_id == reader.store.settings.get(WRITE)):
                return AppliedWrite(held, None)
            raise WriteConflictError(
                f"shard {self.shard} copy at {self.folder} holds write {held}, and this write was sent as write "
                f"{sequence}: another ClusterIndex (another process, or one opened earlier) wrote the shard since "
                "this one read it, so this write was not applied; write it again (the shard's number is read anew), "
                "and let one process, the served cluster's ingress, make every write"
            )
        if sequence != held + 1:
            raise CopyBehindError(
                f"shard {self.shard} copy at {self.folder} holds writes up to {held} and was sent write {sequence}: "
                "it missed writes; catch it up from a live copy (ClusterIndex.heal)"
            )
        counts = WriteCounts()
        with reader.writing(), writing_in_place(reader.directory) as write:
            if deleted:  # an id no document has changes nothing, so a delete can be sent again
                known = [row_id for row_id, _ in write.store.documents.by_external_id(set(deleted)).values()]
                drop_vectors(write.store, write.vectors, write.store.delete(sorted(known)))
                counts = WriteCounts(deleted=len(known))
            if documents:
                change = _add_embedded(write, documents, np.asarray(vectors, dtype=np.float32))
                counts += WriteCounts.of_upsert(len(documents), change)
            write.store.settings.set(SEQUENCE, sequence)
            write.store.settings.set(WRITE, write_id)
        # The reader now holds the copy's newest commit (only this copy writes its folder): the merge policy is asked
        # of that state, without reading the store again, and the merges run only when it asks for one. The write is
        # committed by now, so a merge that fails is logged, not raised (as the server's background merge): it leaves
        # the copy as it was, and the next write's merge tries again.
        records = [segment.record for segment in reader.vectors.segments]
        if plan_merge(records, reader.tombstones, merge_limit(reader.store.settings.get(MERGE_LIMIT))) is not None:
            try:
                IndexWriter(self.folder, snapshot=reader).merge()
            except Exception:  # noqa: BLE001 (the write it follows is committed and acknowledged on its own)
                log.exception("merging shard %s copy at %s after write %s failed", self.shard, self.folder, sequence)
        return AppliedWrite(sequence, counts)

    # copying ----------------------------------------------------------------------------------------------------
    @_one_at_a_time
    def committed_files(self) -> dict[str, bytes]:
        """This copy's last commit as files (name: bytes): the store through SQLite's backup (a consistent copy,
        whatever the write-ahead log holds), the manifest and the files it names. What another copy installs to
        catch up, sent through Ray (no shared file system)."""
        reader = self._reader()
        store_name = Path(reader.store.path).name
        files: dict[str, bytes] = {}
        with tempfile.TemporaryDirectory() as scratch:
            copied = Path(scratch) / store_name
            source = sqlite3.connect(reader.store.path)
            target = sqlite3.connect(copied)
            try:
                source.backup(target)
            finally:
                target.close()
                source.close()
            files[store_name] = copied.read_bytes()
        for entry in sorted(self.folder.iterdir()):
            if entry.is_file() and not entry.name.startswith((store_name, ".")):
                files[entry.name] = entry.read_bytes()
        return files

    @_one_at_a_time
    def install_files(self, files: dict[str, bytes]) -> int:
        """Replace this copy's index with `files` (another copy's `committed_files`): written beside it, then
        swapped in by renames, so a crash leaves the old index or the new one. Returns the sequence number."""
        staging = self.folder.with_name(self.folder.name + ".incoming")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for name, data in files.items():
            (staging / Path(name).name).write_bytes(data)
        if self.reader is not None:
            self.reader.close()
            self.reader = None
        old = self.folder.with_name(self.folder.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if self.folder.exists():
            self.folder.rename(old)
        staging.rename(self.folder)
        shutil.rmtree(old, ignore_errors=True)
        self.reader = IndexReader(self.folder)
        return self.sequence()

    @_one_at_a_time
    def remove(self) -> None:
        """Delete this copy's folder (a copy moved elsewhere, an old build's, or a build that did not commit)."""
        if self._build is not None:
            self._build.abort()
            self._build = None
        if self.reader is not None:
            self.reader.close()
            self.reader = None
        remove_folder(self.folder)

    def _reader(self) -> IndexReader:
        if self.reader is None:
            raise ClusterError(f"shard copy {self.folder} holds no index yet: build the cluster first")
        self.reader.refresh()
        return self.reader


def _held(reader: IndexReader) -> int:
    """The shard's last write that the state `reader` holds committed (0: none since the build)."""
    return int(reader.store.settings.get(SEQUENCE) or 0)


def _add_embedded(write: Any, documents: list[Document], vectors: np.ndarray) -> StoreChange:  # noqa: ANN401 (IndexWrite)
    """Upsert `documents` with the encoder's output `vectors` (one per document) into an open write; returns what
    it changed in the store."""
    from searchengine.engine.embedding import to_index_vectors

    change = write.store.add(documents)
    drop_vectors(write.store, write.vectors, change.removed_vectors)
    if change.ids:
        rows = np.asarray(change.positions, dtype=np.int64)
        write.vectors.add(to_index_vectors(vectors[rows], write.whitening), np.asarray(change.ids, dtype=np.int64))
    return change


class _Build:
    """A build of one copy's index in a thread, fed chunk by chunk."""

    def __init__(self, folder: Path, model: EmbeddedModel, index_type: str) -> None:
        self.chunks: queue.Queue[Any] = queue.Queue(maxsize=4)
        self.documents = 0
        self.ended = False
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(folder, model, index_type))
        self.thread.start()

    def put(self, chunk: Chunk) -> None:
        while self.thread.is_alive():
            try:
                self.chunks.put(chunk, timeout=0.5)
                return
            except queue.Full:
                continue
        self._raise()

    def finish(self) -> int:
        if self.thread.is_alive():
            self.chunks.put(_END)
        self.thread.join()
        self._raise()
        return self.documents

    def abort(self) -> None:
        """Stop the build without committing it (the index directory's writing() rolls it back)."""
        if self.thread.is_alive():
            self.chunks.put(_ABORT)
        self.thread.join()

    def _raise(self) -> None:
        if self.error is not None:
            raise self.error
        if not self.thread.is_alive() and self.chunks.qsize():
            raise ClusterError("the copy's build stopped before its last batch")

    def _chunks(self) -> Iterator[Chunk]:
        while (chunk := self.chunks.get()) is not _END:
            if chunk is _ABORT:
                self.ended = True
                raise ClusterError("the cluster build stopped before its commit")
            self.documents += len(chunk.documents)
            yield chunk
        self.ended = True

    def _run(self, folder: Path, model: EmbeddedModel, index_type: str) -> None:
        try:
            settings = IndexSettings(index_type=index_type, passages=False)
            build_index(IndexDirectory(folder), self._chunks(), model, settings, allow_empty=True)  # type: ignore[arg-type]
        except BaseException as error:  # noqa: BLE001 (raised in the actor's thread by finish)
            self.error = error
            while not self.ended and self.chunks.get() not in (
                _END,
                _ABORT,
            ):  # let the caller's puts through until it ends
                pass
