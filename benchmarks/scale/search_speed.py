"""Search speed and size (issue 4): FAISS index types at 100k and 1M vectors, with and without whitening-k.

Vectors. The Wikipedia sentences (unsup/wiki_sentences.txt.gz, 100,000 lines) embedded with the engine's
Encoder (the bundled all-MiniLM-L6-v2, 384-d), cached as .npy blocks of 5,000 under --cache-dir so a rerun
skips the encoding. Sizes above the real count are made by benchmarks/scale/synthetic.py (also used by the
clustering benchmark): the real vectors, then copies of them plus Gaussian noise (sigma --noise per dimension),
L2-normalised again. Those copies are synthetic; their texts are the original's plus " [copy j]".

Queries. Held-out real sentences: the first --queries distinct sentences of STS-B test (no Wikipedia line).
Ground truth is exact inner-product top-10 (faiss IndexFlatIP) over the same vectors the index holds (whitened
or not); recall@10 = |approximate top-10 & exact top-10| / 10, averaged over the queries.

Whitening-k is fitted like the engine fits it (CovarianceAccumulator over the indexed vectors in chunks of
2,048, Whitening.fit), then vectors are L2-normalised (searchengine.engine.embedding.to_index_vectors).

Per configuration: build seconds (train on at most 100,000 sampled vectors, as the engine does, then add),
RSS growth during the build, the size of the index file, recall@10, QPS with one query per search call (the
first queries, as many as fit in --single-budget seconds) and with all queries in one call; each timing is the
median of --runs runs after a warm-up, with the 1-minute load average beside it. Indexes are made with
indexer.vectors.vector_index.VectorIndex (the engine's wrapper: IDMap2 ids, IVF direct map, its efSearch/nprobe
defaults), then efSearch/nprobe are swept; `engine_default` marks the setting the engine would use.

End to end: SearchEngine.build writes a real index directory (SQLite store + FAISS index) of the texts; its
encoder hands back the cached vectors of the indexed texts (same model, so the stored vectors are what a fresh
build would store), while queries are encoded live by the real Encoder through SearchEngine.search: encode +
search + fetch, per query, p50/p99. The parts (encode alone, search + fetch alone) are timed separately.
--query-precision/--query-backend/--query-threads choose how that query encoder runs (e.g. ONNX Runtime int8).

Single queries are timed twice: with faiss's default threads and with one thread (torch and faiss), since on
this 2-core machine OpenMP's thread hand-offs cost more than a one-query search when other processes are running.

Usage:
  .venv/bin/python benchmarks/scale/search_speed.py --quick          # ~30 s with a warm cache: correctness checks only
  .venv/bin/python benchmarks/scale/search_speed.py --sizes 100000 --runs 3 --single-budget 2 --e2e-queries 100 \
      --runs-e2e 1
  .venv/bin/python benchmarks/scale/search_speed.py --sizes 1000000 --whiten none,128 --factories "Flat;HNSW32" \
      --e2e default --e2e-queries 100 --runs-e2e 1 --runs 3 --single-budget 2 \
      --out benchmarks/scale/results/search_speed_1m.json --plot docs/search_speed_1m.png
  .venv/bin/python benchmarks/scale/search_speed.py --tables benchmarks/scale/results/search_speed.json   # markdown tables
The first full run encodes the 100,000 sentences (about 11 minutes at 150 sentences/s on the quiet machine).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from importlib.metadata import version
from itertools import islice
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import torch

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from scipy.stats import spearmanr
from searchengine.indexer.commit.index_directory import IndexDirectory
from searchengine.indexer.vectors.vector_index import HNSW_EF_SEARCH, IVF_NPROBE_FRACTION, VectorIndex, default_factory
from searchengine.indexer.vectors.whitening import CovarianceAccumulator, Whitening

from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import command_line, machine_record
from benchmarks.harness.results import write_results
from benchmarks.scale.synthetic import DEFAULT_NOISE, noisy_copies
from searchengine import BuildSettings, Encoder, SearchEngine
from searchengine.engine.embedding import to_index_vectors
from searchengine.engine.indexing import CHUNK, TRAINING_SAMPLE
from searchengine.engine.search import dense_rankings, hits_of

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "scale" / "results"
K = 10
BLOCK = 5_000
"""Sentences per cached embedding block."""

FULL_SWEEPS: list[tuple[str, str | None, list[int]]] = [
    ("Flat", None, []),
    ("HNSW32", "efSearch", [16, 32, 64, 128, 256, 512]),
    ("IVF1024,Flat", "nprobe", [4, 16, 64, 128]),
    ("IVF4096,Flat", "nprobe", [16, 64, 256]),
    ("IVF4096,PQ32np", "nprobe", [16, 64, 256]),
    ("SQ8", None, []),
    ("HNSW32,SQ8", "efSearch", [128, 256, 512]),
]
"""SQ8 (8-bit scalar quantization, 4x smaller than float32) is the size alternative to whitening-k."""
OPTIONAL_SWEEPS: list[tuple[str, str | None, list[int]]] = [
    ("IVF4096,PQ64np", "nprobe", [16, 64, 256]),
]
"""Only with --factories: training 64 sub-quantizers took 259 s on 10,000 vectors at load 8."""
"""PQ types carry "np": FAISS's factory otherwise adds polysemous training to "PQm", which no search here uses
(no polysemous_ht) and which is slow: at load 7 here, IVF64,PQ16 on 3,000 vectors trained in about 150 s,
IVF64,PQ16np in 17 s."""
QUICK_SWEEPS: list[tuple[str, str | None, list[int]]] = [
    ("Flat", None, []),
    ("HNSW32", "efSearch", [16, 64, 128, 512]),
    ("IVF64,Flat", "nprobe", [1, 4, 16]),
    ("IVF64,PQ16x4np", "nprobe", [4, 16]),
]


# ---------------------------------------------------------------------------------------------------- data


def read_wiki(data: Path, count: int) -> list[str]:
    with gzip.open(data / "unsup" / "wiki_sentences.txt.gz", "rt", encoding="utf-8") as handle:
        texts = [line.strip() for line in islice(handle, count)]
    return [text for text in texts if text]


def read_stsb_test(data: Path, pairs: int | None) -> tuple[list[str], list[str], np.ndarray]:
    rows = [line.split("\t") for line in (data / "stsb" / "test.tsv").read_text(encoding="utf-8").splitlines()[1:]]
    rows = rows[:pairs] if pairs else rows
    return [r[1].strip() for r in rows], [r[2].strip() for r in rows], np.array([float(r[0]) for r in rows])


def block_path(encoder: Encoder, block: Sequence[str], start: int, cache_dir: Path, tag: str) -> Path:
    """Where cached_embeddings keeps the vectors of `block`, the texts from position `start` on: a key made of the
    model fingerprint, the block's position and a hash of its texts."""
    digest = hashlib.sha1("\n".join(block).encode("utf-8")).hexdigest()[:12]
    return cache_dir / f"{tag}-{encoder.fingerprint[:12]}-{start}-{start + len(block)}-{digest}.npy"


def cached_embeddings(encoder: Encoder, texts: Sequence[str], cache_dir: Path, tag: str) -> tuple[np.ndarray, dict]:
    """Encoder output for `texts`, block by block; each block is cached as .npy under a key made of the model
    fingerprint, the block's position and a hash of its texts. Returns the vectors and what was encoded now."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    blocks, encoded, seconds = [], 0, 0.0
    for start in range(0, len(texts), BLOCK):
        block = list(texts[start : start + BLOCK])
        path = block_path(encoder, block, start, cache_dir, tag)
        if path.is_file():
            blocks.append(np.load(path))
            continue
        started = time.perf_counter()
        vectors = encoder.encode(block)
        seconds += time.perf_counter() - started
        encoded += len(block)
        partial = path.with_suffix(".partial.npy")
        np.save(partial, vectors)
        os.replace(partial, path)
        blocks.append(vectors)
        print(
            f"  encoded {tag} {start + len(block):,}/{len(texts):,} ({len(block) / (time.perf_counter() - started):.0f}"
            " sentences/s)",
            flush=True,
        )
    matrix = np.concatenate(blocks) if blocks else np.zeros((0, encoder.dimension), dtype=np.float32)
    return matrix, {"encoded_now": encoded, "encode_seconds": round(seconds, 1)}


class CachedEncoder:
    """The real encoder, except that `encode` returns the cached vectors of the texts it is given (all of which
    must be known), so SearchEngine.build stores exactly what it would store after encoding them itself."""

    def __init__(self, encoder: Encoder, texts: Sequence[str], vectors: np.ndarray) -> None:
        self._encoder = encoder
        self._row = {text: row for row, text in enumerate(texts)}
        self._vectors = vectors

    def __getattr__(self, name: str) -> Any:  # noqa: ANN401 (whatever the real encoder has)
        return getattr(self._encoder, name)

    def encode(self, texts: Sequence[str], batch_size: int | None = None, **_: Any) -> np.ndarray:  # noqa: ARG002
        return self._vectors[[self._row[text] for text in texts]]


def fit_whitening(vectors: np.ndarray, k: int) -> Whitening:
    """Whitening-k fitted as the engine fits it on a corpus: chunks of CHUNK rows in order, then SVD."""
    statistics_ = CovarianceAccumulator(vectors.shape[1])
    for start in range(0, len(vectors), CHUNK):
        statistics_.update(vectors[start : start + CHUNK])
    return Whitening.fit(statistics_, k)


def index_vectors(vectors: np.ndarray, whitening: Whitening | None) -> np.ndarray:
    """to_index_vectors in chunks, into one preallocated matrix."""
    dimension = whitening.k if whitening is not None else vectors.shape[1]
    out = np.empty((len(vectors), dimension), dtype=np.float32)
    for start in range(0, len(vectors), 65_536):
        out[start : start + 65_536] = to_index_vectors(vectors[start : start + 65_536], whitening)
    return out


# ---------------------------------------------------------------------------------------------- measuring


def load() -> float:
    return round(os.getloadavg()[0], 2)


def rss_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def exact_top_k(base: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, float]:
    index = faiss.IndexFlatIP(base.shape[1])
    index.add(base)
    started = time.perf_counter()
    _, ids = index.search(queries, K)
    return ids, time.perf_counter() - started


def recall_at_k(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean over queries of |found top-k & exact top-k| / k (ids -1, i.e. missing, never count)."""
    hits = [len(set(row[row >= 0].tolist()) & set(exact.tolist())) for row, exact in zip(found, truth)]
    recall = float(np.mean(hits)) / truth.shape[1]
    assert 0.0 <= recall <= 1.0, recall
    return recall


def median_seconds(action: Callable[[], object], runs: int) -> tuple[float, list[float]]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times), times


def percentile_ms(samples: Sequence[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(samples) * 1000, q)), 3)


@contextmanager
def threads(count: int | None) -> Iterator[None]:
    """Run with `count` torch and faiss threads (None: leave them), restoring them afterwards."""
    torch_before, faiss_before = torch.get_num_threads(), faiss.omp_get_max_threads()
    if count is not None:
        torch.set_num_threads(count)
        faiss.omp_set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(torch_before)
        faiss.omp_set_num_threads(faiss_before)


def single_queries(index: VectorIndex, queries: np.ndarray, runs: int, budget: float) -> dict:
    """One query per search call: a warm-up pass fixes how many queries fit in `budget` seconds (at least 20),
    then `runs` timed passes over those; QPS from the median pass, latency percentiles over every call."""
    started, count = time.perf_counter(), 0
    while count < len(queries) and (count < 20 or time.perf_counter() - started < budget):
        index.search(queries[count : count + 1], K)
        count += 1
    latencies, run_seconds = [], []
    for _ in range(runs):
        run_started = time.perf_counter()
        for row in range(count):
            query_started = time.perf_counter()
            index.search(queries[row : row + 1], K)
            latencies.append(time.perf_counter() - query_started)
        run_seconds.append(time.perf_counter() - run_started)
    return {
        "qps": round(count / statistics.median(run_seconds), 1),
        "queries": count,
        "ms_p50": percentile_ms(latencies, 50),
        "ms_p99": percentile_ms(latencies, 99),
    }


def measure_search(index: VectorIndex, queries: np.ndarray, truth: np.ndarray, runs: int, budget: float) -> dict:
    """Recall@10, batched QPS (all queries in one call, default threads) and single-query QPS (one query per
    call) with the default faiss threads and with one thread."""
    load_before = load()
    _, ids = index.search(queries, K)  # warm-up, and the results recall is computed on
    recall = recall_at_k(ids, truth)
    batched, batched_runs = median_seconds(lambda: index.search(queries, K), runs)
    single = single_queries(index, queries, runs, budget)
    with threads(1):
        single_1 = single_queries(index, queries, runs, budget)
    return {
        "recall_at_10": round(recall, 4),
        "qps_batched": round(len(queries) / batched, 1),
        "batched_seconds_runs": [round(t, 4) for t in batched_runs],
        "qps_single": single["qps"],
        "single_queries": single["queries"],
        "single_search_ms_p50": single["ms_p50"],
        "single_search_ms_p99": single["ms_p99"],
        "qps_single_1_thread": single_1["qps"],
        "single_1_thread_search_ms_p50": single_1["ms_p50"],
        "single_1_thread_search_ms_p99": single_1["ms_p99"],
        "load_average_1min": [load_before, load()],
    }


def set_parameter(index: VectorIndex, name: str | None, value: int | None) -> None:
    if name == "efSearch":
        faiss.downcast_index(index.index.index).hnsw.efSearch = value
    elif name == "nprobe":
        faiss.extract_index_ivf(index.index).nprobe = value


def engine_default(factory: str, name: str | None, value: int | None) -> bool:
    if name == "efSearch":
        return value == HNSW_EF_SEARCH
    if name == "nprobe":
        nlist = int(factory.split(",")[0][3:])
        return value == max(1, nlist // IVF_NPROBE_FRACTION)
    return True


def build_raw(factory: str, vectors: np.ndarray, path: Path) -> tuple[VectorIndex, dict]:
    """Train (on the engine's sample: at most TRAINING_SAMPLE random rows, seed 0) and add, timed; then save."""
    rss_before, load_before = rss_bytes(), load()
    started = time.perf_counter()
    index = VectorIndex.create(factory, vectors.shape[1])
    if index.needs_training:
        rows = np.sort(np.random.default_rng(0).permutation(len(vectors))[:TRAINING_SAMPLE])
        index.train(vectors[rows])
    trained = time.perf_counter()
    for start in range(0, len(vectors), CHUNK * 8):
        stop = min(start + CHUNK * 8, len(vectors))
        index.add(vectors[start:stop], np.arange(start, stop, dtype=np.int64))
    seconds = time.perf_counter() - started
    rss_growth = rss_bytes() - rss_before
    index.save(path)
    return index, {
        "built_by": "VectorIndex (train + add)",
        "build_seconds": round(seconds, 2),
        "train_seconds": round(trained - started, 2),
        "rss_growth_mib": round(rss_growth / 2**20, 1),
        "index_file_bytes": path.stat().st_size,
        "build_load_average_1min": [load_before, load()],
    }


# ------------------------------------------------------------------------------------------------ engine


def build_engine(
    encoder: Encoder, texts: list[str], vectors: np.ndarray, factory: str, whiten_k: int | None, path: Path
) -> dict:
    rss_before, load_before = rss_bytes(), load()
    started = time.perf_counter()
    SearchEngine.build(
        texts,
        path,
        BuildSettings(index=factory, whiten_k=whiten_k),
        encoder=CachedEncoder(encoder, texts, vectors),
    )
    seconds = time.perf_counter() - started
    with SearchEngine.open(path, encoder=encoder) as engine:
        info = engine.info()
        sizes = {role: stored.size for role, stored in engine.manifest.own_files.items()}
        sizes["vectors"] = sum(stored.size for stored in engine.manifest.segment_files.values())
    return {
        "built_by": "SearchEngine.build (store + whitening fit + index; embeddings from the cache)",
        "build_seconds": round(seconds, 2),
        "rss_growth_mib": round((rss_bytes() - rss_before) / 2**20, 1),
        "index_dir_bytes": info.size_bytes,
        "file_bytes": sizes,
        "build_load_average_1min": [load_before, load()],
    }


def vectors_file(path: Path) -> Path:
    """The FAISS file of an engine's index directory: its one segment (a fresh build writes one)."""
    directory = IndexDirectory(path)
    manifest = directory.read_manifest()
    segments = list(manifest.segment_files)
    if len(segments) != 1:
        raise SystemExit(f"{path} has {len(segments)} segments; build it afresh (one segment) to measure it")
    return directory.file(manifest, segments[0])


def measure_end_to_end(
    engine: SearchEngine, queries: list[str], truth: np.ndarray, runs: int, warmup: int = 10
) -> dict:
    """SearchEngine.search per query (encode + search + fetch), and its parts timed on their own; with the default
    torch/faiss threads and with one thread each."""
    found: list[list[int]] = []
    row: dict[str, Any] = {"queries": len(queries), "runs": runs}
    for label, count in (("", None), ("1_thread_", 1)):
        with threads(count):
            for text in queries[:warmup]:
                engine.search(text, k=K, mode="dense")
            load_before = load()
            total, encode, search_fetch = [], [], []
            for _ in range(runs):
                for text in queries:
                    started = time.perf_counter()
                    hits = engine.search(text, k=K, mode="dense")
                    total.append(time.perf_counter() - started)
                    if len(found) < len(queries):
                        found.append([hit.id for hit in hits] + [-1] * (K - len(hits)))
                    started = time.perf_counter()
                    vector = engine.encode([text])
                    encode.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    reader = engine.reader  # timing the parts: the dense search and the documents read
                    hits_of(reader.store, dense_rankings(reader.vectors, reader.store, vector, K))
                    search_fetch.append(time.perf_counter() - started)
        row.update(
            {
                f"{label}end_to_end_ms_p50": percentile_ms(total, 50),
                f"{label}end_to_end_ms_p99": percentile_ms(total, 99),
                f"{label}encode_ms_p50": percentile_ms(encode, 50),
                f"{label}encode_ms_p99": percentile_ms(encode, 99),
                f"{label}search_fetch_ms_p50": percentile_ms(search_fetch, 50),
                f"{label}search_fetch_ms_p99": percentile_ms(search_fetch, 99),
                f"{label}load_average_1min": [load_before, load()],
            }
        )
    row["recall_at_10"] = round(recall_at_k(np.array(found), truth), 4)
    return row


def encoding_throughput(encoder: Encoder, texts: list[str], runs: int) -> dict:
    encoder.encode(texts[:64])
    load_before = load()
    seconds, times = median_seconds(lambda: encoder.encode(texts), runs)
    return {
        "sentences": len(texts),
        "batch_size": encoder.batch_size,
        "sentences_per_s": round(len(texts) / seconds, 1),
        "runs_seconds": [round(t, 2) for t in times],
        "load_average_1min": [load_before, load()],
    }


# -------------------------------------------------------------------------------------------------- main


def spearman(left: np.ndarray, right: np.ndarray, gold: np.ndarray, whitening: Whitening | None) -> float:
    a, b = to_index_vectors(left, whitening), to_index_vectors(right, whitening)
    return round(float(spearmanr((a * b).sum(1), gold).statistic * 100), 2)


def run_group(
    args: argparse.Namespace,
    encoder: Encoder,
    n: int,
    whiten_k: int | None,
    raw: np.ndarray,
    texts: list[str],
    query_texts: list[str],
    query_raw: np.ndarray,
    sts: tuple[np.ndarray, np.ndarray, np.ndarray],
    scratch: Path,
) -> dict:
    label = f"n={n:,}, whitening {whiten_k or 'none'}"
    print(f"\n== {label} (load {load()})", flush=True)
    whitening = fit_whitening(raw, whiten_k) if whiten_k else None
    group: dict[str, Any] = {
        "n": n,
        "whitening_k": whiten_k,
        "dimension": whitening.k if whitening else raw.shape[1],
        "stsb_test_spearman": spearman(*sts, whitening),
    }
    e2e_factories = []
    for name in args.e2e:
        factory = default_factory(n) if name == "default" else name
        if factory not in e2e_factories:
            e2e_factories.append(factory)
    engines: dict[str, Path] = {}
    end_to_end = []
    for factory in e2e_factories:
        path = scratch / f"engine-{n}-{whiten_k}-{factory.replace(',', '_')}"
        built = build_engine(encoder, texts, raw, factory, whiten_k, path)
        engines[factory] = path
        if whiten_k:
            with SearchEngine.open(path, encoder=encoder) as engine:
                theirs = engine.reader.whitening
            assert np.array_equal(theirs.matrix, whitening.matrix), "our whitening differs from the engine's"
        end_to_end.append({"factory": factory, "engine_default": factory == default_factory(n), **built})
        print(
            f"  engine {factory}: built in {built['build_seconds']} s, {built['index_dir_bytes'] / 2**20:.1f} MiB",
            flush=True,
        )
    base = index_vectors(raw, whitening)
    queries = index_vectors(query_raw, whitening)
    truth, exact_seconds = exact_top_k(base, queries)
    group["exact_search_seconds_batched"] = round(exact_seconds, 3)
    for row, factory in zip(end_to_end, e2e_factories):
        with SearchEngine.open(engines[factory], encoder=args.query_encoder) as engine:
            count = len(query_texts) if args.e2e_queries is None else args.e2e_queries
            row.update(measure_end_to_end(engine, query_texts[:count], truth[:count], args.runs_e2e))
        for label, name in (("", "default threads"), ("1_thread_", "1 thread")):
            print(
                f"  end to end {factory}, {name}: p50 {row[label + 'end_to_end_ms_p50']} ms, "
                f"p99 {row[label + 'end_to_end_ms_p99']} ms (encode p50 {row[label + 'encode_ms_p50']}, "
                f"search+fetch p50 {row[label + 'search_fetch_ms_p50']})",
                flush=True,
            )
        print(f"  end to end {factory}: recall@10 {row['recall_at_10']}", flush=True)
    group["end_to_end"] = end_to_end
    configurations = []
    for factory, parameter, values in args.sweeps:
        if factory in engines:
            index = VectorIndex.load(vectors_file(engines[factory]), factory)
            built = {
                key: value
                for key, value in end_to_end[e2e_factories.index(factory)].items()
                if key in ("built_by", "build_seconds", "rss_growth_mib", "build_load_average_1min")
            }
            built["index_file_bytes"] = vectors_file(engines[factory]).stat().st_size
        else:
            index, built = build_raw(factory, base, scratch / "index.faiss")
        assert index.count == n
        print(
            f"  {factory}: built in {built['build_seconds']} s, {built['index_file_bytes'] / 2**20:.1f} MiB", flush=True
        )
        for value in values or [None]:
            set_parameter(index, parameter, value)
            measured = measure_search(index, queries, truth, args.runs, args.single_budget)
            if factory == "Flat":
                assert measured["recall_at_10"] == 1.0, f"Flat recall {measured['recall_at_10']}, not 1.0"
            configurations.append(
                {
                    "factory": factory,
                    "parameter": parameter,
                    "value": value,
                    "engine_default": engine_default(factory, parameter, value),
                    **built,
                    **measured,
                }
            )
            print(
                f"    {parameter or '-'}={value if value is not None else '-'}: recall {measured['recall_at_10']:.3f}"
                f"  single {measured['qps_single']:,.0f} q/s (1 thread {measured['qps_single_1_thread']:,.0f})"
                f"  batched {measured['qps_batched']:,.0f} q/s"
                f"  (load {measured['load_average_1min'][1]})",
                flush=True,
            )
        del index
    group["configurations"] = configurations
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True, exist_ok=True)
    return group


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    panels = [
        ("qps_single", "one query per call, default faiss threads"),
        ("qps_single_1_thread", "one query per call, 1 faiss thread"),
        ("qps_batched", "all queries in one call"),
    ]
    sizes = sorted({group["n"] for group in results["groups"]})
    figure, axes = plt.subplots(len(sizes), len(panels), figsize=(18, 5.5 * len(sizes)), squeeze=False)
    markers = {None: "o", 128: "s", 256: "^"}
    factories = list(dict.fromkeys(c["factory"] for g in results["groups"] for c in g["configurations"]))
    colours = {factory: plt.cm.tab10(i % 10) for i, factory in enumerate(factories)}
    for row, n in enumerate(sizes):
        for column, (key, title) in enumerate(panels):
            axis = axes[row][column]
            for group in (g for g in results["groups"] if g["n"] == n):
                for factory in factories:
                    points = [c for c in group["configurations"] if c["factory"] == factory]
                    if points:
                        axis.plot(
                            [c[key] for c in points],
                            [c["recall_at_10"] for c in points],
                            marker=markers.get(group["whitening_k"], "x"),
                            color=colours[factory],
                            linestyle="-" if group["whitening_k"] is None else ":",
                            label=f"{factory}, whitening {group['whitening_k'] or 'none'}",
                        )
            axis.set_xscale("log")
            axis.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            axis.set_xlabel(f"queries/second (log), {title}")
            axis.set_ylabel("recall@10 against exact search")
            axis.set_title(f"{n:,} vectors")
            axis.grid(True, which="both", alpha=0.3)
        axes[row][0].legend(fontsize=7, loc="lower left")
    machine = results["machine"]
    figure.suptitle(
        f"Recall@10 against QPS: {machine['cpu']}, {machine['cores']} cores, load average "
        f"{machine['load_average_1min_at_start']} at the start, {machine.get('load_average_1min_at_end')} "
        "at the end (up and right is better)"
    )
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)


def markdown(results: dict) -> str:
    """The result tables as markdown (for docs/benchmarks.md)."""
    mib = 2**20
    lines = [
        "| n | whitening | index | setting | build s | index file MiB | recall@10 | QPS 1 query/call "
        "| QPS 1 query/call, 1 thread | QPS batched | load |",
        "|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for group in results["groups"]:
        for c in group["configurations"]:
            setting = f"{c['parameter']} {c['value']}" if c["parameter"] else "-"
            setting += " (default)" if c["engine_default"] and c["parameter"] else ""
            lines.append(
                f"| {group['n']:,} | {group['whitening_k'] or 'none'} | {c['factory']} | {setting} | "
                f"{c['build_seconds']:.1f} | {c['index_file_bytes'] / mib:.1f} | {c['recall_at_10']:.3f} | "
                f"{c['qps_single']:,.0f} | {c['qps_single_1_thread']:,.0f} | {c['qps_batched']:,.0f} | "
                f"{c['load_average_1min'][0]}–{c['load_average_1min'][1]} |"
            )
    lines += [
        "",
        "| n | whitening | index | threads | end to end p50 / p99 ms | encode p50 ms | search + fetch p50 ms "
        "| recall@10 | build s (no encoding) | index dir MiB | load |",
        "|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for group in results["groups"]:
        for e in group["end_to_end"]:
            for label, name in (("", "default"), ("1_thread_", "1")):
                load_range = e[f"{label}load_average_1min"]
                lines.append(
                    f"| {group['n']:,} | {group['whitening_k'] or 'none'} | {e['factory']} | {name} | "
                    f"{e[label + 'end_to_end_ms_p50']:.1f} / {e[label + 'end_to_end_ms_p99']:.1f} | "
                    f"{e[label + 'encode_ms_p50']:.1f} | {e[label + 'search_fetch_ms_p50']:.2f} | "
                    f"{e['recall_at_10']:.3f} | {e['build_seconds']:.1f} | {e['index_dir_bytes'] / mib:.1f} | "
                    f"{load_range[0]}–{load_range[1]} |"
                )
    lines += [
        "",
        "| n | whitening | dimension | Flat file MiB | × smaller | HNSW32 file MiB | × smaller "
        "| engine index dir MiB (default index) | × smaller | STS-B test Spearman | Δ |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n in dict.fromkeys(g["n"] for g in results["groups"]):
        groups = [g for g in results["groups"] if g["n"] == n]
        plain = next((g for g in groups if g["whitening_k"] is None), None)

        def size(group: dict | None, factory: str) -> int | None:
            rows = [c for c in (group or {}).get("configurations", []) if c["factory"] == factory]
            return rows[0]["index_file_bytes"] if rows else None

        def directory(group: dict | None) -> int | None:
            rows = [e for e in (group or {}).get("end_to_end", []) if e["engine_default"]]
            return rows[0]["index_dir_bytes"] if rows else None

        def cells(value: int | None, reference: int | None) -> str:
            if value is None:
                return "– | –"
            ratio = f"{reference / value:.2f}" if reference else "–"
            return f"{value / mib:.1f} | {ratio}"

        for g in groups:
            delta = g["stsb_test_spearman"] - plain["stsb_test_spearman"] if plain else float("nan")
            lines.append(
                f"| {n:,} | {g['whitening_k'] or 'none'} | {g['dimension']} | "
                f"{cells(size(g, 'Flat'), size(plain, 'Flat'))} | {cells(size(g, 'HNSW32'), size(plain, 'HNSW32'))} | "
                f"{cells(directory(g), directory(plain))} | {g['stsb_test_spearman']:.2f} | {delta:+.2f} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="about a minute: few vectors, few settings; checks only")
    parser.add_argument("--sizes", help="comma-separated vector counts (default 100000; --quick: 3000)")
    parser.add_argument("--whiten", help="comma-separated whitening k, 'none' for none (default none,128,256)")
    parser.add_argument(
        "--factories",
        help="sweep these factory strings instead, ';' between (from the quick, full "
        "and optional lists, e.g. 'Flat;HNSW32;IVF4096,PQ64np')",
    )
    parser.add_argument("--queries", type=int, help="query sentences (default 1000; --quick 100)")
    parser.add_argument("--runs", type=int, help="timed runs per measurement, median reported (default 5; --quick 2)")
    parser.add_argument(
        "--single-budget",
        type=float,
        help="seconds of single-query warm-up that fixes how many "
        "queries a single-query run times (at least 20; default 3; --quick 0.3)",
    )
    parser.add_argument(
        "--e2e",
        help="factories to measure end to end through SearchEngine ('default' = what the "
        "engine picks for the size; '' for none; default 'default,HNSW32'; --quick 'default')",
    )
    parser.add_argument("--e2e-queries", type=int, help="queries per end-to-end run (default 200; --quick 20)")
    parser.add_argument("--runs-e2e", type=int, help="end-to-end runs over the queries (default 3; --quick 1)")
    parser.add_argument("--query-precision", default="auto", help="Encoder precision for the end-to-end queries")
    parser.add_argument("--query-backend", default="auto", help="Encoder backend for the end-to-end queries")
    parser.add_argument(
        "--query-threads",
        type=int,
        help="Encoder threads for the end-to-end queries (ONNX Runtime's "
        "are fixed when its session starts, so the 1-thread rows need this for --query-backend onnx)",
    )
    parser.add_argument("--torch-threads", type=int, help="torch.set_num_threads (default: torch's own choice)")
    parser.add_argument("--faiss-threads", type=int, help="faiss.omp_set_num_threads (default: faiss's own choice)")
    parser.add_argument("--noise", type=float, default=DEFAULT_NOISE, help="sigma of the synthetic copies' noise")
    parser.add_argument("--cache-dir", type=Path, default=Path("/tmp/searchengine-bench-cache"))
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--plot", type=Path)
    parser.add_argument("--tables", type=Path, help="print the markdown tables of this results file and stop")
    args = parser.parse_args()
    if args.tables:
        print(markdown(json.loads(args.tables.read_text(encoding="utf-8"))), end="")
        return
    quick = args.quick
    sizes = [int(s) for s in (args.sizes or ("3000" if quick else "100000")).split(",")]
    whiten = [
        None if w == "none" else int(w) for w in (args.whiten or ("none,128" if quick else "none,128,256")).split(",")
    ]
    args.queries = args.queries or (100 if quick else 1000)
    args.runs = args.runs or (2 if quick else 5)
    args.runs_e2e = args.runs_e2e or (1 if quick else 3)
    args.single_budget = args.single_budget if args.single_budget is not None else (0.3 if quick else 3.0)
    args.e2e = [
        f for f in (args.e2e if args.e2e is not None else ("default" if quick else "default,HNSW32")).split(",") if f
    ]
    args.e2e_queries = args.e2e_queries or (20 if quick else 200)
    args.sweeps = QUICK_SWEEPS if quick else FULL_SWEEPS
    if args.factories:
        wanted = args.factories.split(";")
        known = (QUICK_SWEEPS + FULL_SWEEPS if quick else FULL_SWEEPS + QUICK_SWEEPS) + OPTIONAL_SWEEPS
        args.sweeps = [s for s in known if s[0] in wanted]
        args.sweeps = [s for i, s in enumerate(args.sweeps) if s[0] not in [t[0] for t in args.sweeps[:i]]]
    args.out = args.out or RESULTS / ("search_speed_quick.json" if quick else "search_speed.json")
    args.plot = args.plot or (
        args.out.parent / "search_speed_quick.png" if quick else ROOT / "docs" / "search_speed.png"
    )

    started = time.perf_counter()
    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    if args.faiss_threads:
        faiss.omp_set_num_threads(args.faiss_threads)
    faiss_threads = faiss.omp_get_max_threads()
    results: dict[str, Any] = {
        "command": command_line(),
        "quick": quick,
        "machine": machine_record(
            torch_threads=torch.get_num_threads(), faiss_threads=faiss_threads, load_average_1min_at_start=load()
        ),
        "versions": {name: version(name) for name in ("torch", "transformers", "faiss-cpu", "numpy")},
        "settings": {
            "sizes": sizes,
            "whitening": whiten,
            "queries": args.queries,
            "runs": args.runs,
            "single_budget_s": args.single_budget,
            "e2e": args.e2e,
            "e2e_queries": args.e2e_queries,
            "runs_e2e": args.runs_e2e,
            "noise_sigma": args.noise,
            "k": K,
            "query_precision": args.query_precision,
            "query_backend": args.query_backend,
            "query_threads": args.query_threads,
            "training_sample": TRAINING_SAMPLE,
        },
    }
    print(f"{results['machine']}", flush=True)
    encoder = Encoder()
    args.query_encoder = Encoder(precision=args.query_precision, backend=args.query_backend, threads=args.query_threads)
    real_count = min(max(sizes), 100_000)
    wiki = read_wiki(args.data, real_count)
    sts_pairs = 250 if quick else None
    left, right, gold = read_stsb_test(args.data, sts_pairs)
    distinct = list(dict.fromkeys(left + right))
    wiki_set = set(wiki)
    query_texts = [text for text in distinct if text not in wiki_set][: args.queries]
    sts_raw, _ = cached_embeddings(encoder, distinct, args.cache_dir, f"stsb-test-{len(left)}")
    row_of = {text: row for row, text in enumerate(distinct)}
    query_raw = sts_raw[[row_of[t] for t in query_texts]]
    sts = (sts_raw[[row_of[t] for t in left]], sts_raw[[row_of[t] for t in right]], gold)
    real, encoding = cached_embeddings(encoder, wiki, args.cache_dir, "wiki")
    results["data"] = {
        "real_vectors": len(real),
        "queries": len(query_texts),
        "query_source": "STS-B test sentences (distinct, none of them a Wikipedia line)",
        "stsb_test_pairs": len(gold),
        "wiki_encoding_this_run": encoding,
    }
    spread = float(real.std(axis=0).mean())
    results["data"]["real_per_dimension_std_mean"] = round(spread, 4)
    sample = real[:2000]  # fewer where --sizes asks for fewer real vectors
    copy = noisy_copies(sample, 2 * len(sample), args.noise)[len(sample) :]
    results["data"]["copy_cosine_to_original_mean"] = round(float((copy * sample).sum(1).mean()), 4)
    throughput_texts = wiki[:200] if quick else wiki[:1000]
    results["encoding"] = encoding_throughput(encoder, throughput_texts, 2 if quick else 3)
    print(f"encoding: {results['encoding']['sentences_per_s']} sentences/s", flush=True)

    results["groups"] = []
    scratch_root = Path(tempfile.mkdtemp(prefix="search-speed-", dir=args.cache_dir))
    try:
        for n in sizes:
            raw = noisy_copies(real, n, args.noise)
            texts = wiki[:n] + [f"{wiki[i % len(wiki)]} [copy {i // len(wiki)}]" for i in range(len(wiki), n)]
            for whiten_k in whiten:
                results["groups"].append(
                    run_group(args, encoder, n, whiten_k, raw, texts, query_texts, query_raw, sts, scratch_root)
                )
                _write(args.out, results)
            del raw, texts
    finally:
        shutil.rmtree(scratch_root, ignore_errors=True)
    results["machine"]["load_average_1min_at_end"] = load()
    results["seconds"] = round(time.perf_counter() - started, 1)
    results["checks"] = checks(results)
    _write(args.out, results)
    plot(results, args.plot)
    print("\n" + markdown(results))
    print(f"wrote {args.out} and {args.plot} in {results['seconds']} s", flush=True)


def checks(results: dict) -> dict:
    """What --quick asserts: correctness only, never speed."""
    flat = [c["recall_at_10"] for g in results["groups"] for c in g["configurations"] if c["factory"] == "Flat"]
    recalls = [c["recall_at_10"] for g in results["groups"] for c in g["configurations"]]
    recalls += [e["recall_at_10"] for g in results["groups"] for e in g["end_to_end"]]
    found = {
        "flat_recall_is_1": all(r == 1.0 for r in flat) if flat else None,  # None: no Flat index in this run
        "recalls_in_0_1": all(0.0 <= r <= 1.0 for r in recalls),
    }
    assert found["flat_recall_is_1"] is not False and found["recalls_in_0_1"], found
    return found


def _write(path: Path, results: dict) -> None:
    write_results(path, results)


if __name__ == "__main__":
    main()
