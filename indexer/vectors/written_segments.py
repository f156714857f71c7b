"""Segments other processes wrote for a build (Ray workers: searchengine.engine.ray_embedding), which the build
commits as its own: the same immutable files a local write makes (written, checksummed once and fsynced by their
writer), named in the store by the build's one commit, so the vectors never pass through the process that commits.

Until that commit they are orphans like any uncommitted segment: a build that fails removes them, and the files
of a build that was killed are removed by the next write's clean-up (indexer/commit/index_directory.py), never before.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
from searchengine.indexer.errors import IndexerError
from searchengine.indexer.vectors.segments import SegmentRecord

if TYPE_CHECKING:
    from searchengine.indexer.commit.index_directory import Generation


class WrittenSegments:
    """The segments a build adopts, in id order, as the vectors it commits (what commit_generation saves). Their
    vectors cannot be removed: a vector the build does not keep (a document replaced later in the input) is
    tombstoned by the caller, as for any segment."""

    def __init__(self, generation: Generation, factory: str, dimension: int) -> None:
        self.generation = generation
        self.factory = factory
        """The index's own type (a segment's own is Flat while small: indexer/vectors/segments.segment_factory)."""
        self.dimension = dimension
        self.records: list[SegmentRecord] = []

    @property
    def count(self) -> int:
        return sum(record.vectors for record in self.records)

    @property
    def needs_training(self) -> bool:
        return False

    def adopt(self, records: Iterable[SegmentRecord]) -> None:
        """Take segments a worker wrote into the index directory, each checked to be there with its recorded size
        (a worker on another machine writes there only through a shared file system)."""
        for record in records:
            for name, expected, _ in record.files:  # the segment, and its originals file where it has one
                path = self.generation.directory.path / name
                self.generation.created_file(name)  # removed with the generation if the build fails
                try:
                    size = path.stat().st_size
                except OSError:
                    size = None
                if size != expected:
                    found = "is not there" if size is None else f"has {size} bytes, not {expected}"
                    raise IndexerError(
                        f"segment file {path} that a Ray worker wrote {found} on this machine: put the index "
                        "directory on a file system every node shares (the same path everywhere)"
                    )
            self.records.append(record)

    def remove(self, ids: np.ndarray) -> bool:  # noqa: ARG002 (BuildParts' interface)
        """Segments are immutable: the caller tombstones the vectors a build does not keep."""
        return False
