"""The FAISS vector index: any factory string, inner product on normalised vectors, ids = store row ids."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator
from pathlib import Path

import faiss
import numpy as np
from searchengine.indexer.errors import IndexerError
from searchengine.indexer.vectors.exact_batches import scored_together
from searchengine.indexer.vectors.graph_degree import check_graph_degree
from searchengine.indexer.vectors.index_choice import choose_index_type
from searchengine.indexer.vectors.originals import MappedOriginals, OriginalsSpool, is_binary, keeps_originals

HNSW_EF_CONSTRUCTION = 200
"""How many candidates the build weighs for each vector's links. The 80 used before (FAISS's own default is 40) left
a graph that did not reach recall@10 0.98 at 100,000 real MiniLM vectors even at efSearch 512 (0.9745); built
with 200 it does at 256 (0.9845). The build took 1.6 times as long as with 80 in that run
(benchmarks/storage/results/hnsw_params.json, docs/benchmarks.md#the-default-index-at-100000-beside-chroma)."""
HNSW_EF_SEARCH = 192
"""The candidate list of a search in a graph of up to HNSW_MID_GRAPH vectors, stored in its file: the smallest
measured that reaches recall@10 0.98 at 100,000 real MiniLM vectors (the Wikipedia sentences, STS-B queries) on the
HNSW_EF_CONSTRUCTION graph, for HNSW32 (0.982; 160 gave 0.979) and for HNSW32,SQ8 with its candidates rescored from
the originals (0.984), at about 20% less search time than 256 (benchmarks/storage/results/default_index_100k.json)."""
HNSW_MID_GRAPH = 100_000
"""Graphs up to this many vectors (the size efSearch HNSW_EF_SEARCH was measured at) search with it."""
HNSW_EF_SEARCH_MID = 256
"""The candidate list from HNSW_MID_GRAPH to HNSW_LARGE_GRAPH vectors: it reached recall@10 0.9845 at 100,000 real
vectors (hnsw_params.json), the margin kept for graphs up to twice that size."""
HNSW_LARGE_GRAPH = 200_000
"""Graphs above this many vectors search deeper still."""
HNSW_EF_SEARCH_LARGE = 512
"""The candidate list above HNSW_LARGE_GRAPH: where HNSW32 reached recall@10 0.976 at 1M MiniLM vectors on a graph
built with efConstruction 80 (docs/benchmarks.md#1000000-vectors); not measured on the deeper-built graph."""
IVF_NPROBE_FRACTION = 2
"""IVF indexes search nlist / 2 lists (at least 1). Recall@10 of IVF types is bounded by the share of lists
searched, which rescoring cannot make up for: queries unlike the corpus (STS-B sentences against Wikipedia lines)
have neighbours spread over many lists. On real MiniLM vectors and noisy copies (200,000, 300 queries,
benchmarks/storage/results/ivf_pq_settings_200k.json) IVF1024,PQ96x4fs with 300 candidates rescored reached
0.953 searching a quarter of its lists and 0.975 (0.976 on the real vectors alone) searching half, 1.6 ms a query;
IVF1024,PQ48np searching a sixteenth, the old default, reached 0.83 with 1,000 rescored (_200k_pq48np.json)."""
IVF_SCANNED_CODES = 2_000_000
"""The most codes an IVF search probes, at the index's mean list size: nprobe is nlist / IVF_NPROBE_FRACTION up to
that. At 1M and 2M vectors (IVF2048, 488 and 977 a list) half the lists are 0.5M and 1M codes, under it; at 10M
(IVF8192, about 1,220 a list) half would be 5M codes a query, against the issue's 20 ms. At 10M (real MiniLM vectors
and noisy copies, STS-B queries, benchmarks/storage/results/memory_check_10m_default.json) probing 2M codes (1,639
lists, a fifth) with 1,000 candidates rescored (rescore_depth.LARGE_PRODUCT_QUANTIZATION_RESCORE) reached recall@10
0.967 (0.973 on the real vectors alone) at p50 13.6 ms; 1.2M codes reached 0.962 (0.952) at 10.7 ms, too thin a
margin on the real vectors (memory_check_10m_rescore.json); 30% of the lists (3M codes) with 300 rescored 0.902
(0.988) at 18.3 ms (memory_check_10m.json)."""
IVF_LEAST_PROBED_SHARE = 0.2
"""The share of its lists an IVF search probes at least, whatever IVF_SCANNED_CODES allows: recall@10 follows the
share of the codes scanned, not their number. At 2M vectors (IVF2048,PQ96x4fs, 300 rescored, STS-B queries,
benchmarks/storage/ivf_pq_settings.py) probing 6% of the lists reached 0.875 (0.832 on the real vectors alone), 12%
0.926 (0.899), 30% 0.966 (0.957) and half 0.977 (0.982) (results/ivf_pq_settings_2m_fraction.json,
ivf_pq_settings_2m.json); at 10M a fifth with 1,000 rescored reached 0.967 (0.973), the issue's 0.95 on both. It
binds past 10M vectors, where IVF_SCANNED_CODES alone would probe less than a fifth."""
FAST_SCAN_KERNEL = 10
"""The search kernel of FAISS's fast-scan IVF types (`implem`): 10, a heap per query. Left to choose itself, FAISS
switched to a kernel about ten times slower for a single query once nprobe passed several hundred lists
(IVF2048,PQ96x4fs at 200,000 vectors, one thread: nprobe 700 took 1.4 ms, 900 took 13 ms, 1,024 took 18 ms; 1.7 ms
with this kernel). It is set on every index created, and again on every one read, so that segments written before
it was chosen (with FAISS's automatic choice, 0) search the same way."""
DEEPER_FOR_EXCLUDED = 10
"""A type without id selectors leaves out up to k x this many excluded ids by searching deeper; more, by exact search
of the rest."""
TRAINING_PROBE = 2_000
"""Training vectors kept (evenly spread) to measure the trained template's quantization error on."""
EXACT_CHUNK = 65_536
"""Candidates scored per matrix product when a filtered search falls back to exact search."""


def default_factory(count: int | None, dimension: int = 384, budget: int | None = None) -> str:
    """What `--index auto` picks (indexer/vectors/index_choice.py): exact search for small corpora (and unknown
    sizes), HNSW32,SQ8 (index_choice.MID_SIZE_DEFAULT) for large ones, and within a memory `budget` (bytes), the
    first type whose vectors of `dimension` fit."""
    return choose_index_type(count, dimension, budget)


class VectorIndex:
    """A FAISS index whose ids are the document store's row ids."""

    def __init__(self, index: faiss.Index, factory: str) -> None:
        self.index = index
        self.factory = factory
        self.spool: OriginalsSpool | None = None
        """The vectors added, kept for the originals file of an index whose codes are approximate (a new one)."""
        self.originals: MappedOriginals | None = None
        """The exact vectors of a loaded segment whose codes are approximate (indexer/vectors/originals.py)."""
        self.training_probe: np.ndarray | None = None
        """Up to TRAINING_PROBE of the vectors this index was trained on, and how many there were
        (`trained_vectors`): what its template's quantization error is measured on (indexer/vectors/template.py)."""
        self.trained_vectors = 0
        self.binary = is_binary(factory)
        """Binary codes: FAISS gives Hamming distances, which `search` turns into scores (larger is nearer)."""

    @classmethod
    def create(cls, factory: str, dimension: int, originals: str | None = None) -> VectorIndex:
        """Build an empty index from a FAISS factory string ("Flat", "HNSW32", "IVF1024,PQ32", "HNSW32,SQ8",
        "LSH", ...). A type whose codes are approximate keeps the vectors it is given, as `originals` ("float16",
        the default, or "float32"), for the originals file written beside its segment."""
        # Binary codes (LSH) rank by Hamming distance, which FAISS builds under the L2 metric only; on normalised
        # vectors L2 and inner product rank alike.
        metric = faiss.METRIC_L2 if is_binary(factory) else faiss.METRIC_INNER_PRODUCT
        check_graph_degree(factory)
        try:
            inner = faiss.index_factory(dimension, factory, metric)
        except RuntimeError as exc:
            raise IndexerError(
                f"FAISS cannot build index type {factory!r} for dimension {dimension}: {_reason(exc)}. "
                'Use a factory string such as "Flat", "HNSW32" or "IVF1024,Flat"'
            ) from None
        _tune(inner)
        ivf = _ivf_of(inner)
        if ivf is not None:
            # IVF stores ids itself; a hashtable direct map lets it reconstruct and remove by id.
            ivf.set_direct_map_type(faiss.DirectMap.Hashtable)
            created = cls(inner, factory)
        else:
            created = cls(inner if isinstance(inner, faiss.IndexIDMap) else faiss.IndexIDMap2(inner), factory)
        if keeps_originals(factory):
            created.spool = OriginalsSpool(dimension, originals)
        return created

    @property
    def dimension(self) -> int:
        return int(self.index.d)

    @property
    def count(self) -> int:
        return int(self.index.ntotal)

    @property
    def needs_training(self) -> bool:
        return not self.index.is_trained

    def train(self, vectors: np.ndarray) -> None:
        """Train quantisers (IVF, PQ) on a sample of the vectors that will be added."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        try:
            self.index.train(vectors)
        except RuntimeError as exc:
            shortfall = training_shortfall(self.factory, len(vectors))
            raise IndexerError(
                shortfall
                or f"training index type {self.factory!r} on {len(vectors)} vectors failed: {_reason(exc)}. "
                "Index more documents or choose a smaller index (fewer IVF lists, or Flat/HNSW32)"
            ) from None
        self.training_probe = vectors[:: max(1, len(vectors) // TRAINING_PROBE)][:TRAINING_PROBE].copy()
        self.trained_vectors = len(vectors)

    def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        """Add `vectors` under `ids`; a type FAISS cannot add them to (an NSG graph of fewer than 100 vectors) is
        an IndexerError naming it, before anything is written."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        try:
            self.index.add_with_ids(vectors, np.asarray(ids, dtype=np.int64))
        except RuntimeError as exc:
            raise IndexerError(
                f"FAISS cannot add {len(vectors)} vectors to index type {self.factory!r}: {_reason(exc)}. "
                'Choose another --index, such as "Flat" or "HNSW32"'
            ) from None
        graph = _graph_of(self.index)
        if graph is not None:
            graph.efSearch = hnsw_ef_search(self.count)
        ivf = _ivf_of(self.index)
        if ivf is not None:
            ivf.nprobe = ivf_nprobe(ivf.nlist, self.count)
        if self.spool is not None:
            self.spool.add(vectors, ids)

    def search(
        self, queries: np.ndarray, k: int, allowed: np.ndarray | None = None, excluded: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k inner products and ids per query row, best first; missing results have id -1.

        `allowed` restricts the search to those ids and `excluded` leaves those out. The restriction runs inside
        the FAISS search (id selectors); where that comes back short of k while k candidates exist (a selective
        filter on an approximate index, or a type without selector support), the candidates are searched
        exactly instead, so a filtered query still returns k results when k match.
        """
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        selector = _selector(allowed, excluded)
        if selector is None:
            return self._searched(queries, k)
        try:
            scores, ids = self._searched(queries, k, self._search_parameters(selector))
        except RuntimeError:  # this index type takes no search parameters (PQ, LSH)
            scores, ids = None, None
            if allowed is None and len(excluded) <= k * DEEPER_FOR_EXCLUDED:
                scores, ids = self._searched_without(queries, k, np.asarray(excluded, dtype=np.int64))
        found = None if ids is None else (ids >= 0).sum(axis=1)
        if found is not None and bool((found >= k).all()):  # the usual case: no need to count the candidates
            return scores, ids
        excluded = np.zeros(0, dtype=np.int64) if excluded is None else np.asarray(excluded, dtype=np.int64)
        if allowed is None:
            # Excluded ids are stored ones (tombstones), so this counts the candidates without listing them; an
            # overestimate only sends the search to the exact path below, which is right either way.
            available = self.count - len(excluded)
        else:
            candidates = np.setdiff1d(np.asarray(allowed, dtype=np.int64), excluded)
            available = len(candidates)
        if found is not None and bool((found >= min(k, available)).all()):
            return scores, ids
        if allowed is None:
            candidates = np.setdiff1d(self.ids(), excluded)
        return self._exact_search(queries, k, candidates)

    def _searched(
        self, queries: np.ndarray, k: int, parameters: faiss.SearchParameters | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """FAISS's search, its scores larger-is-nearer (a Hamming distance negated)."""
        with scored_together(len(queries)):
            if parameters is None:
                scores, ids = self.index.search(queries, k)
            else:
                scores, ids = self.index.search(queries, k, params=parameters)
        return (-scores if self.binary else scores), ids

    def _searched_without(self, queries: np.ndarray, k: int, excluded: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The top k leaving out a few `excluded` ids, for a type without id selectors: a search as deep as k and
        every excluded id, the excluded dropped."""
        scores, ids = self._searched(queries, k + len(excluded))
        gone = np.isin(ids, excluded)
        ids, scores = np.where(gone, -1, ids), np.where(gone, -np.inf, scores).astype(np.float32)
        order = np.argsort(gone | (ids < 0), axis=1, kind="stable")[:, :k]
        return np.take_along_axis(scores, order, 1), np.take_along_axis(ids, order, 1)

    def _exact_search(self, queries: np.ndarray, k: int, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Brute-force top-k over the stored vectors of `candidates`, in chunks."""
        best_scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
        best_ids = np.full((len(queries), k), -1, dtype=np.int64)
        for start in range(0, len(candidates), EXACT_CHUNK):
            chunk = candidates[start : start + EXACT_CHUNK]
            scores = np.concatenate([best_scores, queries @ self.reconstruct(chunk).T], axis=1)
            ids = np.concatenate([best_ids, np.broadcast_to(chunk, (len(queries), len(chunk)))], axis=1)
            top = np.argsort(-scores, axis=1, kind="stable")[:, :k]
            best_scores, best_ids = np.take_along_axis(scores, top, 1), np.take_along_axis(ids, top, 1)
        best_ids[~np.isfinite(best_scores)] = -1
        return best_scores, best_ids

    def _search_parameters(self, selector: faiss.IDSelector) -> faiss.SearchParameters:
        ivf = _ivf_of(self.index)
        if ivf is not None:
            return faiss.SearchParametersIVF(sel=selector, nprobe=ivf.nprobe)
        inner = faiss.downcast_index(self.index.index)
        if hasattr(inner, "hnsw"):
            return faiss.SearchParametersHNSW(sel=selector, efSearch=inner.hnsw.efSearch)
        return faiss.SearchParameters(sel=selector)

    def reconstruct(self, ids: np.ndarray) -> np.ndarray:
        """The stored vectors of `ids`: the originals where the segment keeps them, else what the codes hold."""
        if self.originals is not None:
            return self.originals.vectors(ids)
        return self.index.reconstruct_batch(np.asarray(ids, dtype=np.int64))

    def remove(self, ids: np.ndarray) -> bool:
        """Remove vectors in place; False when the index type cannot (HNSW, PQ), so the caller must tombstone."""
        try:
            self.index.remove_ids(np.asarray(ids, dtype=np.int64))
        except RuntimeError:
            return False
        return True

    def ids(self) -> np.ndarray:
        """Every stored id: in insertion order, or by inverted list for IVF types."""
        ivf = _ivf_of(self.index)
        if ivf is None:
            return faiss.vector_to_array(self.index.id_map).astype(np.int64)
        lists = ivf.invlists
        return np.concatenate(
            [np.zeros(0, dtype=np.int64)]
            + [faiss.rev_swig_ptr(lists.get_ids(i), lists.list_size(i)).copy() for i in range(ivf.nlist)]
        ).astype(np.int64)

    def stored_vectors(self, batch_size: int = 65_536) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(ids, vectors) in batches: the originals where the segment keeps them, else read back from the index
        itself."""
        ids = self.ids()
        for start in range(0, len(ids), batch_size):
            stop = min(start + batch_size, len(ids))
            if self.originals is not None:
                yield ids[start:stop], self.originals.vectors(ids[start:stop])
            elif _ivf_of(self.index) is None:
                yield ids[start:stop], faiss.downcast_index(self.index.index).reconstruct_n(start, stop - start)
            else:
                yield ids[start:stop], self.index.reconstruct_batch(ids[start:stop])

    def stored_matrix(self) -> tuple[np.ndarray, np.ndarray]:
        """Every (id, vector) as two arrays, filled batch by batch into one preallocated matrix."""
        return collect_matrix(self.count, self.dimension, self.stored_vectors())

    def save(self, path: Path) -> None:
        """Write the index to `path` through Python's file object, so a full disk or an I/O error is an OSError
        here (FAISS's own writer only prints a failed close), and the bytes are fsynced before it returns."""
        with open(path, "wb") as handle:
            writer = faiss.PyCallbackIOWriter(handle.write)
            faiss.write_index(_on_cpu(self.index), writer)
            del writer
            handle.flush()
            os.fsync(handle.fileno())

    def to_bytes(self) -> np.ndarray:
        """The index serialized (FAISS's own format, as `save` writes it): what a trained empty index is shipped to
        other processes as, each of which adds its own vectors to a copy (`from_bytes`)."""
        return faiss.serialize_index(_on_cpu(self.index))

    @classmethod
    def from_bytes(cls, data: np.ndarray, factory: str, originals: str | None = None) -> VectorIndex:
        """An index from `to_bytes`'s output: the same type, training, search settings and vectors; one that keeps
        originals keeps those added from now on (as `originals`, as `create`)."""
        made = cls(_with_search_kernel(faiss.deserialize_index(np.asarray(data, dtype=np.uint8))), factory)
        if keeps_originals(factory):
            made.spool = OriginalsSpool(made.dimension, originals)
        return made

    @classmethod
    def load(cls, path: Path, factory: str, mapped: bool = False) -> VectorIndex:
        """Read an index written by `save`; a GPU copy is used for search when the GPU build finds a GPU.

        `mapped`: memory-map the file's vector codes instead of reading them (FAISS's IO_FLAG_MMAP_IFC), for files
        that never change (segments). Opening then costs what it reads of the structure, not the codes, many times
        less than reading them (docs/architecture.md#readers). The mapped pages are the page cache's, shared
        by every process that opens the index. The index must not be changed once loaded."""
        flags = getattr(faiss, "IO_FLAG_MMAP_IFC", 0) if mapped else 0
        try:
            index = faiss.read_index(str(path), flags)
        except RuntimeError:
            raise IndexerError(f"vector index file {path} is corrupt or truncated; rebuild the index") from None
        return cls(_on_gpu_when_present(_with_search_kernel(index)), factory)


def collect_matrix(
    count: int, dimension: int, batches: Iterator[tuple[np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray]:
    """`count` (id, vector) pairs from batches, as two arrays filled into preallocated memory."""
    ids = np.empty(count, dtype=np.int64)
    matrix = np.empty((count, dimension), dtype=np.float32)
    start = 0
    for batch_ids, batch in batches:
        ids[start : start + len(batch_ids)] = batch_ids
        matrix[start : start + len(batch_ids)] = batch
        start += len(batch_ids)
    return ids, matrix


def _selector(allowed: np.ndarray | None, excluded: np.ndarray | None) -> faiss.IDSelector | None:
    """An id selector for FAISS search; Python keeps the parts alive through the `referenced` attribute."""
    parts = []
    if allowed is not None:
        parts.append(_id_set(allowed))
    if excluded is not None and len(excluded):
        parts.append(faiss.IDSelectorNot(_id_set(excluded)))
    if not parts:
        return None
    selector = parts[0] if len(parts) == 1 else faiss.IDSelectorAnd(parts[0], parts[1])
    selector.referenced = parts
    return selector


BITMAP_BITS_PER_ID = 64
"""Ids this dense or denser (the largest id under this many bits per id) are selected through a bitmap."""


def _id_set(ids: np.ndarray) -> faiss.IDSelector:
    """A FAISS selector of `ids`: a bitmap where they are dense (row ids mostly are), built by numpy and probed
    with one bit test, where FAISS's hash set costs an insert per id and a lookup per vector scanned (a filtered
    search's time, docs/benchmarks.md "Writes"); the hash set where a bitmap would be mostly empty."""
    ids = np.asarray(ids, dtype=np.int64)
    if not len(ids) or ids.min() < 0 or ids.max() >= BITMAP_BITS_PER_ID * len(ids):
        return faiss.IDSelectorBatch(ids)
    bits = np.zeros(int(ids.max()) + 1, dtype=bool)
    bits[ids] = True
    packed = np.packbits(bits, bitorder="little")
    selector = faiss.IDSelectorBitmap(len(packed), faiss.swig_ptr(packed))  # its size is in bytes
    selector.bitmap_bytes = packed  # FAISS reads the array without owning it
    return selector


def training_shortfall(factory: str, count: int) -> str | None:
    """One sentence saying what to do when `count` vectors are too few for FAISS to train `factory` (an IVF
    with more lists than vectors, a PQ with more codes than vectors), or None when they are enough."""
    ivf = re.search(r"IVF(\d+)", factory)
    if ivf is not None and count < int(ivf.group(1)):
        lists = int(ivf.group(1))
        fewer = max(1, count // 39)
        return (
            f"IVF{lists} needs at least 39×{lists} training vectors (and never fewer than {lists}); this corpus has "
            f"{count}: use Flat or IVF{fewer}"
        )
    pq = re.search(r"PQ(\d+)(?:x(\d+))?", factory)
    if pq is not None and count < 2 ** int(pq.group(2) or 8):
        codes = 2 ** int(pq.group(2) or 8)
        return (
            f"{pq.group(0)} needs at least {codes} training vectors (one per code); this corpus has {count}: "
            "use Flat or HNSW32"
        )
    return None


def check_trainable(factory: str, count: int) -> None:
    """Refuse, before any embedding, an index type that `count` documents cannot train, or whose graph FAISS
    cannot build."""
    check_graph_degree(factory)
    shortfall = training_shortfall(factory, count)
    if shortfall is not None:
        raise IndexerError(shortfall)


def _reason(exc: RuntimeError) -> str:
    """The last line of a FAISS C++ error: the part that says what was wrong."""
    return str(exc).strip().splitlines()[-1]


def _ivf_of(index: faiss.Index) -> faiss.IndexIVF | None:
    try:
        return faiss.extract_index_ivf(index)
    except RuntimeError:
        return None


def hnsw_ef_search(count: int) -> int:
    """The efSearch a graph of `count` vectors is stored with: deeper for a large graph, whose walk to the nearest
    neighbours is longer."""
    if count <= HNSW_MID_GRAPH:
        return HNSW_EF_SEARCH
    return HNSW_EF_SEARCH_MID if count <= HNSW_LARGE_GRAPH else HNSW_EF_SEARCH_LARGE


def ivf_nprobe(lists: int, count: int) -> int:
    """The lists an IVF of `lists` lists holding `count` vectors probes, stored in its file: nlist /
    IVF_NPROBE_FRACTION, but no more than reach IVF_SCANNED_CODES codes at its mean list size, nor fewer than
    IVF_LEAST_PROBED_SHARE of the lists."""
    probed = max(1, lists // IVF_NPROBE_FRACTION)
    if count <= 0:
        return probed
    bounded = max(math.ceil(IVF_SCANNED_CODES * lists / count), math.ceil(IVF_LEAST_PROBED_SHARE * lists))
    return max(1, min(probed, bounded))


def _graph_of(index: faiss.Index) -> faiss.HNSW | None:
    """The HNSW graph of a graph index (under its id map), else None."""
    inner = faiss.downcast_index(index)
    if isinstance(inner, faiss.IndexIDMap):
        inner = faiss.downcast_index(inner.index)
    return inner.hnsw if isinstance(inner, faiss.IndexHNSW) else None


def _tune(index: faiss.Index) -> None:
    """Search-quality defaults stored inside the index file: HNSW efSearch/efConstruction, IVF nprobe."""
    if hasattr(index, "hnsw"):
        index.hnsw.efSearch = HNSW_EF_SEARCH
        index.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
    try:
        ivf = faiss.extract_index_ivf(index)
    except RuntimeError:
        return
    ivf.nprobe = ivf_nprobe(ivf.nlist, 0)
    _with_search_kernel(index)


def _with_search_kernel(index: faiss.Index) -> faiss.Index:
    """`index`, its fast-scan IVF (if it is one) set to search with FAST_SCAN_KERNEL."""
    ivf = _ivf_of(index)
    fast = None if ivf is None else faiss.downcast_index(ivf)
    if isinstance(fast, faiss.IndexIVFFastScan):
        fast.implem = FAST_SCAN_KERNEL
    return index


def _on_cpu(index: faiss.Index) -> faiss.Index:
    return faiss.index_gpu_to_cpu(index) if hasattr(faiss, "GpuIndex") and _is_gpu(index) else index


def _is_gpu(index: faiss.Index) -> bool:
    return "Gpu" in type(faiss.downcast_index(index)).__name__


def _on_gpu_when_present(index: faiss.Index) -> faiss.Index:
    """Move to all GPUs with the faiss GPU build; HNSW and other CPU-only types stay on the CPU."""
    if not hasattr(faiss, "index_cpu_to_all_gpus") or faiss.get_num_gpus() == 0:
        return index
    try:
        return faiss.index_cpu_to_all_gpus(index)
    except RuntimeError:
        return index
