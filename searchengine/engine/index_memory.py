"""The memory an index takes in a query process, by part, as `searchengine info` shows it: read from the real
files and FAISS structures, not estimated.

codes, graph, ids, fixed  summed over the vector segments, each opened as a query opens it (indexer/vectors/
                          memory_parts.py); a segment's codes are memory-mapped, so they are page cache pages of its
                          file once a search has touched them.
mapped files              the files a query maps (the segments, and the full vectors kept beside compressed codes
                          for exact rescoring, `originals`, counted apart too): their size on
                          disk and how much of them the page cache holds now (mincore), shared by every process and
                          given back under pressure, so reported apart.
store cache               the most SQLite's page cache may hold per connection (page size x cache_size), and the
                          store file's size.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from searchengine.indexer.commit.manifest import ORIGINALS_ROLE, Manifest
from searchengine.indexer.errors import IndexerError
from searchengine.indexer.tables.store import DocumentStore
from searchengine.indexer.vectors.memory_parts import IndexMemory, index_memory
from searchengine.indexer.vectors.page_cache import cached_bytes
from searchengine.indexer.vectors.vector_index import VectorIndex

STORE_ROLE = "documents"
VECTOR_ROLES = ("segment", "vectors")
"""Manifest roles of the vector files: the segments (format 2) and an older index's one file or shards."""
ORIGINALS_SUFFIX = "." + ORIGINALS_ROLE
"""A segment's full vectors, kept beside compressed codes for rescoring (indexer/vectors/originals.py): mapped,
never loaded as an index."""


@dataclass(frozen=True)
class MemoryUse:
    """Bytes by part (see the module)."""

    codes: int
    graph: int
    ids: int
    fixed: int
    mapped_files: int
    mapped_cached: int
    originals: int
    """Of `mapped_files`, the full vectors kept beside compressed codes for exact rescoring."""
    store_cache_limit: int
    store_file: int

    @property
    def resident(self) -> int:
        """What searching every vector keeps in memory: codes, graph, ids and tables (the mapped full vectors, the
        store's cache and the model apart)."""
        return self.codes + self.graph + self.ids + self.fixed

    def as_json(self) -> dict[str, int]:
        return {**asdict(self), "resident": self.resident}


def memory_use(directory: Path, manifest: Manifest, store: DocumentStore) -> MemoryUse:
    """The MemoryUse of the index in `directory` as of `manifest`, whose store is open as `store`."""
    parts = IndexMemory()
    mapped_files = mapped_cached = originals = 0
    for role, stored in manifest.files.items():
        if not role.startswith(VECTOR_ROLES):
            continue
        path = directory / stored.name
        try:
            size = path.stat().st_size
            if role.endswith(ORIGINALS_SUFFIX):
                originals += size
            else:
                parts += index_memory(VectorIndex.load(path, manifest.index.type, mapped=True).index)
            mapped_files += size
            mapped_cached += cached_bytes(path)
        except FileNotFoundError:
            # A writer's commit removed it after `manifest` was read (IndexDirectory.read_consistently reads again),
            # or it is missing (damage, which that raises).
            raise IndexerError(f"vector file {path} is missing; run `searchengine verify`") from None
    page_size = store.db.execute("PRAGMA page_size").fetchone()[0]
    cache_size = store.db.execute("PRAGMA cache_size").fetchone()[0]
    limit = -cache_size * 1024 if cache_size < 0 else cache_size * page_size
    store_path = directory / manifest.files[STORE_ROLE].name
    return MemoryUse(
        codes=parts.codes,
        graph=parts.graph,
        ids=parts.ids,
        fixed=parts.fixed,
        mapped_files=mapped_files,
        mapped_cached=mapped_cached,
        originals=originals,
        store_cache_limit=limit,
        store_file=store_path.stat().st_size,
    )
