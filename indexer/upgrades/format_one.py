"""The vectors of a format-1 index (written before segments: every write a new generation of all files) read as
segments, so readers and writers meet one vector type (SegmentSet) whatever wrote the index.

Format 1 keeps its vectors in one FAISS file (manifest role `vectors`) or, built with `--shards N`, in one per shard
(`vectors.0` ... `vectors.<N - 1>`, document id d in shard d % N), each named in the manifest with its size and
checksum. Each file is one segment here. Its first write converts the index to format 2 for good: the files are
written again as segment files that the store names (indexer/upgrades/chain.upgrade_index)."""

from __future__ import annotations

import numpy as np
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.commit.manifest import Manifest, vector_roles
from searchengine.indexer.vectors.segments import Segment, SegmentRecord, SegmentSet
from searchengine.indexer.vectors.vector_index import VectorIndex


def format_one_segments(directory: IndexDirectory, manifest: Manifest) -> SegmentSet:
    """The vector files a format-1 manifest names, loaded (in memory: a conversion adds to them), one segment each,
    in shard order."""
    segments = []
    for role in vector_roles(manifest.index.shards):
        stored = manifest.files[role]
        path = directory.path / stored.name
        index = VectorIndex.load(path, manifest.index.type)
        ids = np.sort(index.ids())
        first, last = (int(ids[0]), int(ids[-1])) if len(ids) else (0, -1)
        size = path.stat().st_size
        record = SegmentRecord(stored.name, index.factory, index.count, size, stored.checksum or "", first, last)
        segments.append(Segment(record, index, ids))
    return SegmentSet(segments, manifest.index.type, manifest.index.dimension)


def add_to_format_one(vectors: SegmentSet, vectors_to_add: np.ndarray, ids: np.ndarray) -> None:
    """Add vectors to the segments of a format-1 index being converted, each to the shard its id names (d % shards),
    as format 1 itself added them."""
    ids = np.asarray(ids, dtype=np.int64)
    for number, segment in enumerate(vectors.segments):
        mask = ids % len(vectors.segments) == number
        if mask.any():
            segment.index.add(vectors_to_add[mask], ids[mask])
            segment.ids = np.sort(np.concatenate([segment.ids, ids[mask]]))
