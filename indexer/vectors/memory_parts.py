"""The memory a loaded FAISS index holds, by part, read from its own structures: the vector codes, the graph's
links, the id maps, and what is held once (an IVF's centroids, a quantizer's tables). What `info` shows, and what
the memory model of indexer/vectors/index_choice.py is checked against."""

from __future__ import annotations

from dataclasses import dataclass

import faiss

REVERSE_ID_BYTES = 48
"""An IndexIDMap2's reverse map (a C++ unordered_map of id to position) per vector, which FAISS does not expose:
measured as the resident set's growth less the id array's 8 bytes."""
DIRECT_MAP_BYTES = 64
"""An IVF's hashtable direct map (id to list and offset) per vector, measured the same way."""


@dataclass(frozen=True)
class IndexMemory:
    """Bytes by part: `codes` (float32 vectors, or their compressed codes), `graph` (HNSW links, levels and
    offsets), `ids` (FAISS's id maps) and `fixed` (IVF centroids, quantizer tables)."""

    codes: int = 0
    graph: int = 0
    ids: int = 0
    fixed: int = 0

    @property
    def total(self) -> int:
        return self.codes + self.graph + self.ids + self.fixed

    def __add__(self, other: IndexMemory) -> IndexMemory:
        return IndexMemory(
            self.codes + other.codes, self.graph + other.graph, self.ids + other.ids, self.fixed + other.fixed
        )


def index_memory(index: faiss.Index) -> IndexMemory:
    """The parts of `index` (an IndexIDMap2 around a flat, HNSW or scalar-quantizer index, or an IVF)."""
    outer = faiss.downcast_index(index)  # kept referenced: it owns the inner index read below
    ivf = faiss.try_extract_index_ivf(outer)
    if ivf is not None:
        lists = ivf.invlists
        stored = sum(lists.list_size(i) for i in range(ivf.nlist))
        quantizer = faiss.downcast_index(ivf.quantizer)  # flat, or a graph over the centroids
        fixed = index_memory(quantizer).total + _table_bytes(ivf)
        return IndexMemory(codes=stored * ivf.code_size, ids=stored * (8 + DIRECT_MAP_BYTES), fixed=fixed)
    ids, inner = 0, outer
    if isinstance(outer, faiss.IndexIDMap2):
        ids = outer.id_map.size() * (8 + REVERSE_ID_BYTES)
        inner = faiss.downcast_index(outer.index)
    elif isinstance(outer, faiss.IndexIDMap):
        ids = outer.id_map.size() * 8
        inner = faiss.downcast_index(outer.index)
    if hasattr(inner, "hnsw"):
        hnsw = inner.hnsw
        graph = hnsw.neighbors.size() * 4 + hnsw.levels.size() * 4 + hnsw.offsets.size() * 8
        storage = faiss.downcast_index(inner.storage)
        return IndexMemory(codes=_codes_bytes(storage), graph=graph, ids=ids, fixed=_table_bytes(storage))
    return IndexMemory(codes=_codes_bytes(inner), ids=ids, fixed=_table_bytes(inner))


def _codes_bytes(index: faiss.Index) -> int:
    """The codes a flat-coded index (Flat, SQ, PQ) stores: its code size times its vectors."""
    code_size = getattr(index, "code_size", None)
    if code_size is None:
        return 0
    return int(index.ntotal) * int(code_size)


def _table_bytes(index: faiss.Index) -> int:
    """A quantizer's trained tables: a scalar quantizer's ranges, a product quantizer's centroids."""
    held = 0
    sq = getattr(index, "sq", None)
    if sq is not None:
        held += sq.trained.size() * 4
    pq = getattr(index, "pq", None)
    if pq is not None:
        held += pq.centroids.size() * 4
    return held
