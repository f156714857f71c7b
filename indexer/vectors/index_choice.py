"""Which FAISS index type `--index auto` picks: from the number of documents and, given one, a memory budget.

The memory model. A query process holds, per document, what its index type keeps resident (measured with the
process's resident set on 100,000 and 30,000 unit vectors of 384 dimensions, FAISS 1.15, on this project's
machine; `benchmarks/storage/memory_check.py` measures whole indexes the same way):

| type | codes | graph | ids | about, at 384 dims |
|---|---|---|---|---|
| Flat (float32, exact) | 4·d | - | 56 | 1,590 B |
| HNSW32 (float32) | 4·d | 280 | 56 | 1,870 B |
| HNSW32,SQ8 (8-bit scalar) | d | 280 | 56 | 720 B |
| IVF{n},PQ{2m}x4fs (product quantization, 4-bit fast scan) | m | - | 72 | 120 B for m = 48 |

"ids" is FAISS's id map (an IndexIDMap2's array and reverse map, or an IVF's stored ids and its hashtable direct
map); an IVF's centroids (n·d·4 bytes) and a quantizer's tables are counted once. The full vectors of a compressed
type lie beside it on disk, memory-mapped, for exact rescoring: they are page cache, shared and evictable, so they
are not counted against the budget (`info` and the memory check report them apart). The store's page cache and
the model are not counted either.

The choice. Without a budget: exact search (Flat) up to EXACT_SEARCH_LIMIT documents, MID_SIZE_DEFAULT (HNSW32,SQ8)
above. With a budget, that same type when it fits, so that giving a budget never costs more memory than giving
none; else the first of the candidates' order that fits: Flat (while small enough for exact search), HNSW32,
HNSW32,SQ8, then IVF-PQ with d/8 and then d/16 bytes a vector. (HNSW32 holds more than HNSW32,SQ8 at every size, so
past exact search a budget never picks it; it stays a candidate for the memory model that `info` reads.) The budget is recorded in the index, so later merges
pick again for the size the index has grown to (indexer/commit/merge_policy.py).

Why 4-bit fast-scan product quantization: recall@10 is bounded by the share of IVF lists searched, not by the codes,
and fast scan reads its 4-bit codes several times faster (FAISS's SIMD kernels), so it can search many more of
them. On 200,000 vectors (real MiniLM vectors of the Wikipedia sentences and noisy copies, STS-B queries;
benchmarks/storage/ivf_pq_settings.py, results/ivf_pq_settings_200k.json and _200k_pq48np.json) IVF1024,PQ48np
reached 0.887 with 1,000 candidates rescored while searching 1/8 of its lists, IVF1024,PQ96x4fs (the same 48
bytes) 0.975 searching half of them with 300 rescored, 1.6 ms a query; twice the bytes (PQ192x4fs) gained nothing
(0.976). The search depth that buys this is IVF_NPROBE_FRACTION (indexer/vectors/vector_index.py).

Larger indexes. Past TRAINING_SAMPLE vectors the list count grows as 2·sqrt(count) (8,192 lists at 10M), trained on
39 points a list, and a query probes at most IVF_SCANNED_CODES codes (vector_index.ivf_nprobe) rather than half the
lists, but at least a fifth of them (vector_index.IVF_LEAST_PROBED_SHARE: recall follows the share scanned), about
2M codes at 10M, where a product-quantized segment rescores 1,000 candidates (rescore_depth.default_rescore).
The coarse quantizer stays flat: FAISS's graph quantizer (`IVF{n}_HNSW32`), which would assign vectors faster, crashed
FAISS 1.15 (a segmentation fault) in 3 of 5 trainings of IVF16_HNSW32,PQ16x4fs on 2 threads, and in none on one thread
or with residual codes; a flat one assigns 10M vectors to 8,192 lists in count·lists·d multiply-adds (6·10^13).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from searchengine.indexer.errors import IndexerError

MEMORY_BUDGET = "memory_budget"
"""The build setting (indexer/tables/settings_table.py) that records the budget, in bytes, an index was built with."""

EXACT_SEARCH_LIMIT = 50_000
"""Up to this many vectors the default index is exact ("Flat"); beyond it, graph search (MID_SIZE_DEFAULT). The
segments' own limit (indexer/vectors/segments.SMALL_SEGMENT_LIMIT): at 100,000 vectors (70,000 real Wikipedia
vectors and noisy copies) a dense query took 38.1 ms at p50 through exact search and 10.1 ms through HNSW32 at
efSearch 256, recall@10 0.991 (benchmarks/storage/results/default_index.json, a loaded 2-core machine)."""
MID_SIZE_DEFAULT = "HNSW32,SQ8"
"""The default above EXACT_SEARCH_LIMIT without a memory budget: the HNSW32 graph over 8-bit scalar codes, its
candidates rescored from the float16 originals on disk (indexer/vectors/rescore_depth.DEFAULT_RESCORE). On the
100,000 real MiniLM vectors at efSearch 192 it reached recall@10 0.984 where HNSW32's float32 vectors reached
0.982, in about a fifth less search time, holding 720 bytes a vector in memory against 1,870
(benchmarks/storage/results/default_index_100k.json, docs/benchmarks.md#the-default-index-at-100000-beside-chroma).
With a budget the order of `candidates` decides instead."""

ID_BYTES = 56
"""An IndexIDMap2's id array (8 bytes a vector) and reverse hash map (measured: about 48 more)."""
IVF_ID_BYTES = 72
"""An IVF's stored ids (8 bytes a vector) and its hashtable direct map (measured: about 64 more)."""
TRAINING_SAMPLE = 100_000
"""The vectors an IVF or PQ type is trained on (all of them when there are fewer), unless it has more lists than that
trains (training_sample_size): a build's sample (searchengine/engine/indexing.training_rows) and a merge's
(indexer/commit/merge_policy.py)."""
TRAINING_POINTS_PER_LIST = 39
"""FAISS's k-means asks for at least 39 training points a centroid (it warns below that, and the lists it trains
then split the data badly)."""
LARGE_LISTS_PER_ROOT = 2
"""Past TRAINING_SAMPLE vectors the list count follows 2·sqrt(count) (a power of two near it), the ratio the 1M check
measured (2,048 lists), so that a query, which probes a bounded number of codes (vector_index.IVF_SCANNED_CODES),
still probes lists of about the same size as the index grows; such an index is trained on 39 points a list."""
HNSW_GRAPH_BYTES = 280
"""HNSW32's links: 2·32 neighbours of 4 bytes on level 0, about 1/32 of that above, and each node's level and
offset (measured: 274)."""

UNITS = {
    "": 1,
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
}
"""Decimal (KB, MB, GB, TB) and binary (KiB, MiB, GiB, TiB) units, any case; a bare number is bytes."""
_IVF_LISTS = re.compile(r"IVF(\d+)")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-z]*)\s*$")
SMALLEST_BUDGET = 10**6
"""A budget under 1 MB is a mistake (a number without its unit is bytes), not a plan."""


def parse_memory_size(text: str | int) -> int:
    """Bytes in a size such as "8GB", "300MB", "1.5GiB" or 4096 (bytes); a one-line error names what is wrong."""
    if isinstance(text, bool):
        raise IndexerError(f"memory budget {text!r} is not a size: write one such as 8GB or 300MB")
    if isinstance(text, int):
        value = text
    else:
        match = _SIZE.match(str(text))
        unit = match.group(2).upper() if match else None
        number = float(match.group(1)) * UNITS[unit] if match and unit in UNITS else math.nan
        if not math.isfinite(number):  # not a size, or more digits than a float holds (inf)
            raise IndexerError(
                f"memory budget {text!r} is not a size: write a number and a unit, such as 8GB, 300MB or 1.5GiB"
            )
        value = int(number)
    if value < SMALLEST_BUDGET:
        raise IndexerError(f"memory budget {text!r} is {value} bytes, under 1 MB: give a unit, such as 300MB or 8GB")
    return value


def format_size(size: int) -> str:
    """A byte count as people read it: 1.2 GB, 300 MB, 12 kB."""
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}" if size < 100 * scale else f"{size / scale:.0f} {unit}"
    return f"{size} B"


@dataclass(frozen=True)
class Candidate:
    """An index type `auto` may pick, and what it keeps in memory."""

    factory: str
    bytes_per_vector: int
    fixed_bytes: int = 0
    """Held once whatever the count: an IVF's centroids, a quantizer's tables."""
    exact: bool = False

    def resident_bytes(self, count: int) -> int:
        """What `count` vectors of this type hold in memory (the mapped full vectors not counted)."""
        return self.fixed_bytes + self.bytes_per_vector * count


def ivf_lists(count: int) -> int:
    """IVF lists for `count` vectors: a power of two near 4·sqrt(count), at least 64, and at most what
    TRAINING_SAMPLE vectors (all of them when fewer) give 39 training points each, as FAISS's k-means asks, so up to
    2,048; past TRAINING_SAMPLE vectors, at least a power of two near 2·sqrt(count) (LARGE_LISTS_PER_ROOT), trained
    on 39 points each (training_sample_size)."""
    wanted = 4 * math.sqrt(max(count, 1))
    lists = 2 ** round(math.log2(max(wanted, 1)))
    trained_on = min(count, TRAINING_SAMPLE)
    while lists > 64 and lists * TRAINING_POINTS_PER_LIST > trained_on:
        lists //= 2
    if count > TRAINING_SAMPLE:
        lists = max(lists, 2 ** round(math.log2(LARGE_LISTS_PER_ROOT * math.sqrt(count))))
    return max(64, lists)


def training_sample_size(factory: str) -> int:
    """The vectors an index of FAISS type `factory` is trained on (at most: all of them when there are fewer):
    TRAINING_SAMPLE, or 39 a list for an IVF of more lists than that trains."""
    match = _IVF_LISTS.search(factory)
    lists = int(match.group(1)) if match else 0
    return max(TRAINING_SAMPLE, TRAINING_POINTS_PER_LIST * lists)


def fast_scan_pq(bytes_per_code: int) -> str:
    """The 4-bit fast-scan product quantizer of `bytes_per_code` bytes a vector (two sub-quantizers a byte)."""
    return f"PQ{2 * bytes_per_code}x4fs"


def candidates(count: int, dimension: int) -> list[Candidate]:
    """The types `auto` chooses from for `count` vectors of `dimension`, best first (quality, then speed)."""
    found = [
        Candidate("Flat", 4 * dimension + ID_BYTES, exact=True),
        Candidate("HNSW32", 4 * dimension + HNSW_GRAPH_BYTES + ID_BYTES),
        Candidate("HNSW32,SQ8", dimension + HNSW_GRAPH_BYTES + ID_BYTES, fixed_bytes=2 * 4 * dimension),
    ]
    lists = ivf_lists(count)
    for bytes_per_code in (dimension // 8, dimension // 16):
        if bytes_per_code >= 1 and dimension % (2 * bytes_per_code) == 0:
            tables = 16 * dimension * 4  # PQ centroids: 16 of each sub-vector
            found.append(
                Candidate(
                    f"IVF{lists},{fast_scan_pq(bytes_per_code)}",
                    bytes_per_code + IVF_ID_BYTES,
                    fixed_bytes=lists * dimension * 4 + tables,
                )
            )
    return found


def choose_index_type(count: int | None, dimension: int, budget: int | None = None) -> str:
    """The FAISS type `auto` picks for `count` vectors (None: not known) of `dimension` within `budget` bytes."""
    if count is None:
        return "Flat"
    default = "Flat" if count <= EXACT_SEARCH_LIMIT else MID_SIZE_DEFAULT
    if budget is None:
        return default
    options = candidates(count, dimension)
    for candidate in [option for option in options if option.factory == default] + options:
        if candidate.exact and count > EXACT_SEARCH_LIMIT:
            continue
        if candidate.resident_bytes(count) <= budget:
            return candidate.factory
    smallest = options[-1]
    raise IndexerError(
        f"no index type fits {count:,} vectors of {dimension} dimensions in a memory budget of {format_size(budget)}: "
        f"the smallest ({smallest.factory}) needs {format_size(smallest.resident_bytes(count))}; "
        "raise --memory-budget, or index fewer documents per index"
    )


def estimated_resident_bytes(factory: str, count: int, dimension: int) -> int | None:
    """The memory model's estimate for `count` vectors of `factory` when it is one of the candidates, else None."""
    for candidate in candidates(count, dimension):
        if candidate.factory == factory:
            return candidate.resident_bytes(count)
    return None


def recorded_budget(setting: object) -> int | None:
    """The budget a store's setting holds: None unless it is a whole number of bytes as a build records it, so a
    setting changed by hand never breaks a write."""
    if isinstance(setting, int) and not isinstance(setting, bool) and setting >= SMALLEST_BUDGET:
        return setting
    return None


def type_for_growth(index_type: str, count: int, dimension: int, budget_setting: object) -> str:
    """The type a merge writes into an index of `index_type` that holds `count` vectors: its own, or, where the
    index records a memory budget, what `auto` picks for `count` within it (the smallest candidate when none fits,
    so a merge never fails for memory it cannot measure)."""
    budget = recorded_budget(budget_setting)
    if budget is None:
        return index_type
    try:
        return choose_index_type(count, dimension, budget)
    except IndexerError:
        return candidates(count, dimension)[-1].factory


def choice_reason(factory: str, count: int | None, dimension: int, budget: int | None) -> str:
    """Why `auto` picked `factory`, in the words the build's summary uses."""
    if budget is None:
        return f"chosen for this corpus size (exact search up to {EXACT_SEARCH_LIMIT:,} documents)"
    estimate = None if count is None else estimated_resident_bytes(factory, count, dimension)
    held = "" if estimate is None else f", about {format_size(estimate)} resident"
    return f"chosen for {count or 0:,} vectors within a memory budget of {format_size(budget)}{held}"
