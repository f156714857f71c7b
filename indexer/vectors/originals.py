"""A segment's original vectors beside its compressed codes: what exact rescoring reads.

An index type whose codes only approximate the vectors (product quantization "PQ", scalar "SQ8", binary "LSH")
keeps the full vectors of each segment in a file of its own, `segment.<n>.npy` beside `segment.<n>.faiss`: a
NumPy array (float16 by default, float32 on request) with one row per vector, in ascending id order, so the row
of an id is its id less the first where the ids are one run (as a build writes them), else found by binary
search in the segment's sorted ids. It is memory-mapped: a query reads the rows of
its candidates only, from the page cache, and the codes stay the only vectors in memory (Qdrant's `on_disk`
originals, FAISS's IndexRefine with the refinement on disk). Exact types (Flat, HNSW's flat storage) keep none:
their codes are the vectors.

The file is written and fsynced before the commit that names it (the store records its size and checksum beside
its segment's, indexer/tables/segment_table.py), so a crash leaves either no file, or an orphan that the next
write's clean-up removes.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from searchengine.indexer.commit.crash_points import crash_point
from searchengine.indexer.commit.durable_files import file_checksum, fsync_path
from searchengine.indexer.errors import IndexerError
from searchengine.indexer.vectors.factory_codes import stores_approximate_vectors

ORIGINALS_SUFFIX = "npy"
ORIGINAL_TYPES = ("float16", "float32")
DEFAULT_ORIGINAL_TYPE = "float16"
"""Half the bytes of float32; rescoring from it measured the same recall@10 (benchmarks/storage/rescoring.py)."""
ORIGINALS_SETTING = "originals"
"""The store setting (indexer/tables/settings_table.py) holding the index's originals type, where a build chose one."""
_BINARY = re.compile(r"LSH")
"""Factory components with binary codes searched by Hamming distance."""
COPY_ROWS = 65_536


def keeps_originals(factory: str) -> bool:
    """Whether segments of FAISS type `factory` keep their original vectors: where their codes only approximate
    them (indexer/vectors/factory_codes.py; an OPQ rotation before Flat or HNSW stores exact vectors and keeps none)."""
    return stores_approximate_vectors(factory)


def is_binary(factory: str) -> bool:
    """Whether `factory` has binary codes compared by Hamming distance (smaller is nearer)."""
    return bool(_BINARY.search(factory))


def original_type(name: str | None) -> str:
    """The originals' type named `name` (None: the default), refused with a one-line error when unknown."""
    name = DEFAULT_ORIGINAL_TYPE if name is None else name
    if name not in ORIGINAL_TYPES:
        raise IndexerError(f"originals must be one of {', '.join(ORIGINAL_TYPES)}, not {name!r}")
    return name


def originals_name(segment: str) -> str:
    """The originals file of segment file `segment` (segment.<n>.faiss -> segment.<n>.npy)."""
    return f"{segment.rsplit('.', 1)[0]}.{ORIGINALS_SUFFIX}"


@dataclass(frozen=True)
class OriginalsRecord:
    """An originals file as the store names it: its name, size and checksum."""

    name: str
    size: int
    checksum: str


class OriginalsSpool:
    """The vectors an index is given while it is built, kept on disk (an unnamed temporary file) in the type
    they will be stored in, until `write` sorts them by id into the segment's originals file."""

    def __init__(self, dimension: int, dtype: str) -> None:
        self.dimension = dimension
        self.dtype = np.dtype(original_type(dtype))
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 (kept open for the index's life, closed by GC)
        self._ids: list[np.ndarray] = []

    @property
    def count(self) -> int:
        return sum(len(ids) for ids in self._ids)

    def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        self._file.write(np.ascontiguousarray(vectors, dtype=self.dtype).tobytes())
        self._ids.append(np.asarray(ids, dtype=np.int64).copy())

    def write(self, path: Path, keep: np.ndarray) -> None:
        """Write the rows of the ids `keep` (sorted; the segment's ids), in that order, to `path` as a .npy file,
        fsynced. The vectors the index was given last win for an id given twice."""
        self._file.flush()
        ids = np.concatenate([np.zeros(0, dtype=np.int64)] + self._ids)
        spooled = np.memmap(self._file, dtype=self.dtype, mode="r", shape=(len(ids), self.dimension)) if len(ids) else (
            np.zeros((0, self.dimension), dtype=self.dtype)
        )
        last = len(ids) - 1 - np.unique(ids[::-1], return_index=True)[1]  # the last row of each id, by id
        unique = ids[last]
        rows = last[np.searchsorted(unique, keep)]
        if len(keep) and not np.array_equal(unique[np.searchsorted(unique, keep)], keep):
            raise IndexerError("the index holds vectors its originals were not given; rebuild the index")
        with open(path, "wb") as handle:
            np.lib.format.write_array_header_1_0(
                handle, {"descr": np.lib.format.dtype_to_descr(self.dtype), "fortran_order": False,
                         "shape": (len(keep), self.dimension)}
            )
            for start in range(0, len(rows), COPY_ROWS):
                handle.write(np.ascontiguousarray(spooled[rows[start : start + COPY_ROWS]]).tobytes())
            handle.flush()
            os.fsync(handle.fileno())
        del spooled


def write_originals(
    directory: Path, segment: str, spool: OriginalsSpool, ids: np.ndarray, mode_of: Path | None = None
) -> OriginalsRecord:
    """Write the originals of segment file `segment` (its sorted `ids`) from `spool`, fsynced with the directory,
    with the permissions of `mode_of` when given; an orphan until the store names it."""
    path = directory / originals_name(segment)
    try:
        spool.write(path, ids)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    crash_point("originals-written")
    if mode_of is not None:
        shutil.copymode(mode_of, path)
    fsync_path(path)
    return OriginalsRecord(path.name, path.stat().st_size, file_checksum(path))


class MappedOriginals:
    """A segment's originals file, memory-mapped: the exact vectors of its ids, read row by row on demand."""

    def __init__(self, path: Path, ids: np.ndarray, dimension: int) -> None:
        try:
            self.rows = np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError):
            raise IndexerError(f"originals file {path} is corrupt or truncated; rebuild the index") from None
        if self.rows.shape != (len(ids), dimension) or self.rows.dtype.name not in ORIGINAL_TYPES:
            raise IndexerError(
                f"originals file {path} holds {self.rows.dtype} vectors of shape {self.rows.shape}, its segment "
                f"{len(ids)} of dimension {dimension}; rebuild the index"
            )
        self.ids = ids
        """The segment's ids, sorted: row i holds the vector of ids[i]."""
        self._run_start = int(ids[0]) if len(ids) and int(ids[-1]) - int(ids[0]) == len(ids) - 1 else None
        """The first id when the ids are one run (sorted and distinct, so last - first = count - 1), as a build
        writes them: a row is then its id less this, not a binary search of the ids (at 10M, 0.85 of a 1,000-
        candidate rescore's 2.9 ms)."""

    @property
    def dtype(self) -> str:
        return self.rows.dtype.name

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        """The original vectors of `ids` (all of them the segment's), as float32; an IndexerError naming an id the
        segment does not hold (a -1 of FAISS's padding, another segment's id), never another id's row."""
        ids = np.asarray(ids, dtype=np.int64)
        rows = self._rows(ids)
        if len(rows) < 2 or bool((rows[1:] >= rows[:-1]).all()):  # in file order already: one gather
            return self.rows[rows].astype(np.float32)
        order = np.argsort(rows, kind="stable")  # read the mapped file forwards
        out = np.empty((len(rows), self.rows.shape[1]), dtype=np.float32)
        out[order] = self.rows[rows[order]]
        return out

    def _rows(self, ids: np.ndarray) -> np.ndarray:
        """The rows of `ids`, each checked to hold that id: as id less the first where the ids are one run, by
        binary search where they are not or where the run test was misled (a repeated id offsetting a gap)."""
        if self._run_start is not None:
            rows = ids - self._run_start
            if self._held(ids, rows).all():
                return rows
        rows = np.searchsorted(self.ids, ids)
        held = self._held(ids, rows)
        if not held.all():
            raise IndexerError(
                f"no vector with id {int(ids[~held][0])} in the segment's originals ({len(self.ids)} ids); a caller "
                "asked for an id of another segment or FAISS's -1 padding: report it as a bug"
            )
        return rows

    def _held(self, ids: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Which of `ids` row `rows` holds (a row out of range holds none)."""
        inside = (rows >= 0) & (rows < len(self.ids))
        return inside & (self.ids[np.where(inside, rows, 0)] == ids) if len(self.ids) else inside

    def rescore(self, queries: np.ndarray, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The k best of each query row's candidate `ids` (-1: none) by exact inner product, best first, ties by
        id; rows padded with -1 and -inf where fewer than k candidates. Every distinct candidate is read once and
        scored against every query in one matrix product."""
        found = ids >= 0
        scores = np.full(ids.shape, -np.inf, dtype=np.float32)
        if found.any():
            wanted = np.unique(ids[found])
            table = queries @ self.vectors(wanted).T
            position = np.searchsorted(wanted, np.where(found, ids, wanted[0]))
            scores = np.where(found, np.take_along_axis(table, position, 1), -np.inf).astype(np.float32)
        ids = np.where(found, ids, -1)
        order = np.lexsort((ids, -scores), axis=1)[:, :k]
        best_scores, best_ids = np.take_along_axis(scores, order, 1), np.take_along_axis(ids, order, 1)
        if best_ids.shape[1] < k:
            pad = k - best_ids.shape[1]
            best_scores = np.pad(best_scores, ((0, 0), (0, pad)), constant_values=-np.inf)
            best_ids = np.pad(best_ids, ((0, 0), (0, pad)), constant_values=-1)
        return best_scores, best_ids
