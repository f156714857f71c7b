"""Vector segments: immutable FAISS files, each holding the vectors of some ids, searched together as one index.

A write adds its new vectors as a new segment (Lucene's segments, LanceDB's fragments) and never rewrites the
segments already there; a deleted vector stays in its segment, tombstoned in the store, until a merge
(indexer/commit/merge_policy.py) copies the live vectors of several segments into one. A segment file is written and
fsynced before the store transaction that names it commits (indexer/tables/segment_table.py), so every committed state
names complete files only.

In an index with a trained template (indexer/vectors/template.py: IVF, PQ, SQ8 types) every segment but the
smallest of an IVF index is a copy of the template with its vectors added. Otherwise small segments are exact
(Flat), and a merged segment larger than SMALL_SEGMENT_LIMIT takes the index's own type (the `--index` it was
built with, or HNSW32 chosen for a large corpus). Searching asks every segment for its own k
best, restricted to its part of the filter and of the tombstones, in parallel threads (FAISS releases the GIL),
and merges them into the k best by score, ties by id: for exact segments that is the exact top k.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import faiss
import numpy as np
from searchengine.indexer.commit.crash_points import crash_point
from searchengine.indexer.commit.durable_files import file_checksum, fsync_path
from searchengine.indexer.errors import IndexerError, StorageFullError, storage_error_kind
from searchengine.indexer.vectors.originals import MappedOriginals, OriginalsRecord, write_originals
from searchengine.indexer.vectors.recorded_file import check_recorded_size
from searchengine.indexer.vectors.rescore_depth import default_rescore
from searchengine.indexer.vectors.top_k import merge_found, pool
from searchengine.indexer.vectors.vector_index import VectorIndex, collect_matrix, training_shortfall

SMALL_SEGMENT_LIMIT = 50_000
"""Segments up to this many vectors are exact (Flat): one search of 50,000 384-dim vectors costs about as much as
HNSW's on a million, and a small segment is built in milliseconds."""
PREFIX = "segment"
SUFFIX = "faiss"


@dataclass(frozen=True)
class SegmentRecord:
    """A segment as the store names it: its file, FAISS type, vector count, and the file's size and checksum."""

    name: str
    factory: str
    vectors: int
    size: int
    checksum: str
    first_id: int = 0
    last_id: int = -1
    """The smallest and largest id it holds (what the merge policy counts its tombstones by)."""
    originals: OriginalsRecord | None = None
    """Its original vectors' file, for a type whose codes are approximate (indexer/vectors/originals.py)."""

    @classmethod
    def from_dict(cls, fields: dict) -> SegmentRecord:
        """A record from `dataclasses.asdict`'s output (as Ray workers send theirs, in JSON)."""
        originals = fields.get("originals")
        return cls(**{**fields, "originals": None if originals is None else OriginalsRecord(**originals)})

    @property
    def files(self) -> list[tuple[str, int, str]]:
        """(name, size, checksum) of each of its files: the segment, and its originals when it has them."""
        own = [(self.name, self.size, self.checksum)]
        if self.originals is not None:
            own.append((self.originals.name, self.originals.size, self.originals.checksum))
        return own


@dataclass
class Segment:
    """A loaded segment: its FAISS index and its ids, sorted (to route ids to it without asking FAISS)."""

    record: SegmentRecord
    index: VectorIndex
    ids: np.ndarray


def segment_factory(index_type: str, count: int) -> str:
    """The FAISS type of a segment of `count` vectors in an index of `index_type`: exact while small, the
    index's own type once large (and trainable on `count` vectors)."""
    if count <= SMALL_SEGMENT_LIMIT or training_shortfall(index_type, count) is not None:
        return "Flat"
    return index_type


_last_number = 0


def new_segment_name() -> str:
    """A file name no other segment has: the time in nanoseconds, rising within a process (writers of one index
    are serialised by its lock)."""
    global _last_number  # noqa: PLW0603 (one counter per process)
    _last_number = max(time.time_ns(), _last_number + 1)
    return segment_name(_last_number)


def reserve_segment_numbers(count: int) -> int:
    """The first of `count` consecutive segment numbers no other segment of this process has or will get: what a
    build hands to writers in other processes (Ray workers), which name their segments `segment_name(first + i)`
    themselves. Above every name made here before, and every later `new_segment_name` is above them all."""
    global _last_number  # noqa: PLW0603 (one counter per process)
    first = max(time.time_ns(), _last_number + 1)
    _last_number = first + max(count, 1) - 1
    return first


def segment_name(number: int) -> str:
    """The file name of segment `number`."""
    return f"{PREFIX}.{number}.{SUFFIX}"


def write_segment(
    directory: Path, index: VectorIndex, name: str | None = None, mode_of: Path | None = None
) -> SegmentRecord:
    """Write `index` as a new segment file in `directory`, fsynced (file and directory), and return its record;
    with the permissions of `mode_of` (the store) when given, so an index shared by a group stays readable to it.
    The file counts only once a store transaction names it; until then it is an orphan that clean-up removes."""
    name = name or new_segment_name()
    path = directory / name
    try:
        index.save(path)
    except (RuntimeError, OSError) as exc:
        path.unlink(missing_ok=True)
        raise _write_failure(exc, f"segment file {path}") from None
    crash_point("segment-written")
    if mode_of is not None:
        shutil.copymode(mode_of, path)
    fsync_path(path)
    ids = np.sort(index.ids())
    originals = None
    if index.spool is not None:
        try:
            originals = write_originals(directory, name, index.spool, ids, mode_of)
        except (RuntimeError, OSError) as exc:
            path.unlink(missing_ok=True)
            raise _write_failure(exc, f"the originals of segment file {path}") from None
    fsync_path(directory)
    first, last = (int(ids[0]), int(ids[-1])) if len(ids) else (0, -1)
    return SegmentRecord(
        name, index.factory, index.count, path.stat().st_size, file_checksum(path), first, last, originals
    )



def _write_failure(exc: RuntimeError | OSError, what: str) -> IndexerError:
    """The one-line error for a failed write of `what` (a segment file or its originals): a full disk says to free
    space, any other failure its reason; either way the index is as it was before."""
    kind = storage_error_kind(exc)
    if kind is StorageFullError:
        return kind(
            f"no space left on device writing {what}: free some space and run the command again; the index is as it "
            "was before"
        )
    return kind(f"cannot write {what} ({str(exc).strip().splitlines()[-1]}); the index is as it was before")

def load_segment_set(directory: Path, records: list[SegmentRecord], factory: str, dimension: int) -> SegmentSet:
    """The segments `records` name, loaded, as one vector index of the index's `factory` and `dimension`."""
    return SegmentSet([load_segment(directory, record, dimension) for record in records], factory, dimension)


def load_segment(directory: Path, record: SegmentRecord, dimension: int) -> Segment:
    """Read one segment file, checked to be of its recorded size and vector count and of the index's
    `dimension`."""
    path = directory / record.name
    check_recorded_size(path, record.size, "segment file", "rebuild the index")
    index = VectorIndex.load(path, record.factory, mapped=True)  # immutable: its codes stay on disk until used
    if index.count != record.vectors:
        raise IndexerError(
            f"segment file {path} holds {index.count} vectors but the store says {record.vectors}; rebuild the index"
        )
    if index.dimension != dimension:
        raise IndexerError(
            f"segment file {path} holds vectors of dimension {index.dimension}, the index's are {dimension}; "
            "rebuild the index"
        )
    ids = np.sort(index.ids())
    if record.originals is not None:
        index.originals = load_originals(directory, record, ids, dimension)
    return Segment(record, index, ids)


def load_originals(directory: Path, record: SegmentRecord, ids: np.ndarray, dimension: int) -> MappedOriginals:
    """The originals file of segment `record` memory-mapped, checked to be of its recorded size."""
    path = directory / record.originals.name
    check_recorded_size(path, record.originals.size, "originals file", "rebuild the index")
    return MappedOriginals(path, ids, dimension)


class SegmentSet:
    """The segments of one committed state, used as one vector index (the methods the query path, clustering and
    mining use of VectorIndex). Read-only: writes add segments (indexer/commit/live_write.py)."""

    def __init__(self, segments: list[Segment], factory: str, dimension: int, rescore: int | None = None) -> None:
        self.segments = segments
        self.factory = factory
        """The index's own type (what large segments use)."""
        self._dimension = dimension
        self.rescore = rescore
        """Candidates per query a segment with originals rescores exactly (0: its codes' own scores; None: its
        type's default, indexer/vectors/rescore_depth.default_rescore)."""

    def rescoring(self, rescore: int | None) -> SegmentSet:
        """These segments searched with `rescore` candidates rescored (None: each segment type's default)."""
        return SegmentSet(self.segments, self.factory, self._dimension, rescore)

    @property
    def has_originals(self) -> bool:
        """Whether any segment keeps originals (codes that approximate them)."""
        return any(segment.index.originals is not None for segment in self.segments)

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def count(self) -> int:
        return sum(segment.index.count for segment in self.segments)

    @property
    def needs_training(self) -> bool:
        return False

    def search(
        self, queries: np.ndarray, k: int, allowed: np.ndarray | None = None, excluded: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """VectorIndex.search over every segment at once, merged: the k best per query, ties by id. A segment with
        originals takes max(k, rescore) candidates from its codes and scores them exactly from its originals, so
        every score merged is an exact inner product (a binary segment's Hamming ranks only its candidates: its
        k best are always scored from the originals)."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        threads = max(1, faiss.omp_get_max_threads() // max(1, len(self.segments)))

        def search_segment(segment: Segment) -> tuple[np.ndarray, np.ndarray] | None:
            own = None if allowed is None else members(allowed, segment.ids)
            if own is not None and not len(own):
                return None
            gone = None if excluded is None else members(excluded, segment.ids)
            if len(gone if gone is not None else ()) == segment.index.count:
                return None
            faiss.omp_set_num_threads(threads)
            depth, rescored = self.candidates(segment, k)
            found = segment.index.search(queries, depth, own, gone if gone is not None and len(gone) else None)
            return segment.index.originals.rescore(queries, found[1], k) if rescored else found

        if len(self.segments) == 1:
            found = [search_segment(self.segments[0])]
        else:
            found = list(pool().map(search_segment, self.segments))
        return merge_found(found, k, len(queries))

    def candidates(self, segment: Segment, k: int) -> tuple[int, bool]:
        """How many candidates `search` takes from `segment`'s codes for each query's k best, and whether it rescores
        them from the segment's originals: this set's rescore depth (its type's default where None) for a segment
        with originals, at least k; k and no rescoring for one without, or where the depth is 0 (a binary segment's
        k best are rescored even then: Hamming distances are no scores)."""
        wanted = default_rescore(segment.index.factory, segment.index.count) if self.rescore is None else self.rescore
        rescored = segment.index.originals is not None and (wanted > 0 or segment.index.binary)
        return (max(k, wanted) if rescored else k), rescored

    def reconstruct(self, ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        out = np.empty((len(ids), self.dimension), dtype=np.float32)
        found = np.zeros(len(ids), dtype=bool)
        for segment in self.segments:
            mask = contains(segment.ids, ids)
            if mask.any():
                out[mask] = segment.index.reconstruct(ids[mask])
                found |= mask
        if not found.all():
            raise IndexerError(f"no vector with id {int(ids[~found][0])} in the index")
        return out

    def remove(self, ids: np.ndarray) -> bool:  # noqa: ARG002 (BuildParts' interface)
        """Segments are immutable: deleted vectors are tombstoned by the caller until a merge drops them."""
        return False

    def ids(self) -> np.ndarray:
        """Every stored id, segment after segment."""
        return np.concatenate([np.zeros(0, dtype=np.int64)] + [segment.ids for segment in self.segments])

    def stored_vectors(self, batch_size: int = 65_536) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for segment in self.segments:
            yield from segment.index.stored_vectors(batch_size)

    def stored_matrix(self) -> tuple[np.ndarray, np.ndarray]:
        return collect_matrix(self.count, self.dimension, self.stored_vectors())


def members(values: np.ndarray, sorted_ids: np.ndarray) -> np.ndarray:
    """The elements of `values` that are in `sorted_ids`."""
    values = np.asarray(values, dtype=np.int64)
    return values[contains(sorted_ids, values)]


def contains(sorted_ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """A mask over `values`: which are in `sorted_ids` (binary search, so a filter of many ids stays cheap)."""
    if not len(sorted_ids):
        return np.zeros(len(values), dtype=bool)
    where = np.minimum(np.searchsorted(sorted_ids, values), len(sorted_ids) - 1)
    return sorted_ids[where] == values
