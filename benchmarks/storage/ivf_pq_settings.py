"""What bounds IVF-PQ's recall@10 with exact rescoring: the list count, nprobe, the code size and the rescore depth.

Vectors: the real all-MiniLM-L6-v2 vectors of the shared Wikipedia sentences (the first --real of them, as cached in
blocks by benchmarks/scale/search_speed.py) and noisy copies of them up to --vectors (benchmarks/scale/synthetic.py,
sigma --noise, renormalised), as benchmarks/storage/memory_check.py makes them; queries: the STS-B test sentences'
vectors from the same cache (none of them in the corpus). Each factory is built with FAISS directly as the engine
builds a segment (inner product, trained on a seeded sample of --train vectors, the engine's TRAINING_SAMPLE), its
float16 originals kept beside it as the engine keeps them. For each nprobe and rescore depth: recall@10 against
exact search over every vector, recall@10 on the real vectors alone (an id selector of them, against exact search
over them), and p50/p99 of one query alone on one thread (the codes' search and the rescoring from the float16
originals, as indexer/vectors/segments.py does it), encoding left out.

Usage:
  .venv/bin/python benchmarks/storage/ivf_pq_settings.py --vectors 200000 --out benchmarks/storage/results/x.json
  .venv/bin/python benchmarks/storage/ivf_pq_settings.py --vectors 10000000 --scratch /tmp/ivf10m --train 320000 \
      --factories IVF8192_HNSW32,PQ96x4fs --nprobe 256 512 1024 --rescore 300 --out results/x.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import faiss
import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`

from searchengine.indexer.vectors.vector_index import FAST_SCAN_KERNEL

from benchmarks.harness.machine import command_line, machine_record
from benchmarks.harness.results import write_results
from benchmarks.scale.synthetic import DEFAULT_NOISE, noisy_copies
from benchmarks.storage.rescoring import cached_queries, cached_wiki
from benchmarks.storage.vectors_on_disk import exact_top_blocks, noisy_copies_file

K = 10
DEFAULT_CACHE = Path.home() / ".cache" / "searchengine-bench" / "blocks"
ADD_BLOCK = 500_000
"""Vectors added to an index at a time."""


def peak_rss_mb() -> float:
    """This process's peak resident set (VmHWM) in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def scratch_vectors(path: Path, real: np.ndarray, count: int, noise: float) -> np.ndarray:
    """The first `count` rows of the float16 vectors' file at `path`: the one a run kept (--keep-scratch) when it
    holds that many, made from these real vectors with this noise (the same generator makes the same rows whatever
    the count), else a new one."""
    if path.exists():
        kept = np.load(path, mmap_mode="r")
        probe = noisy_copies(real, len(real) + 10, noise)
        if len(kept) >= max(count, len(probe)) and np.array_equal(kept[: len(probe)], probe.astype(np.float16)):
            return kept[:count]
    return noisy_copies_file(real, count, noise, path, "float16")


def built_index(factory: str, sample: np.ndarray, vectors: np.ndarray) -> tuple[faiss.Index, dict]:
    """`factory` trained on `sample` and given every row of `vectors` (ids = row numbers) ADD_BLOCK rows at a time;
    with the seconds training and adding took."""
    index = faiss.index_factory(vectors.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
    started = time.perf_counter()
    index.train(np.ascontiguousarray(sample, dtype=np.float32))
    trained = time.perf_counter()
    for start in range(0, len(vectors), ADD_BLOCK):
        index.add(np.ascontiguousarray(vectors[start : start + ADD_BLOCK], dtype=np.float32))
    added = time.perf_counter()
    fast = faiss.downcast_index(faiss.extract_index_ivf(index))
    if isinstance(fast, faiss.IndexIVFFastScan):
        fast.implem = FAST_SCAN_KERNEL
    return index, {"train_s": round(trained - started, 1), "add_s": round(added - trained, 1)}


def rescored(query: np.ndarray, ids: np.ndarray, originals: np.ndarray) -> np.ndarray:
    """The K best of candidate `ids` by their exact inner product with `query` from the float16 originals."""
    ids = ids[ids >= 0]
    scores = originals[ids].astype(np.float32) @ query
    best = np.argpartition(-scores, min(K, len(ids) - 1))[:K] if len(ids) > K else np.arange(len(ids))
    return ids[best[np.argsort(-scores[best], kind="stable")]]


def recall(found: list[np.ndarray], truth: np.ndarray) -> float:
    return round(float(np.mean([len(set(map(int, f)) & set(map(int, t))) / K for f, t in zip(found, truth)])), 4)


def sweep(index: faiss.Index, queries: np.ndarray, truth: np.ndarray, truth_real: np.ndarray, real: int,
          originals: np.ndarray, nprobes: list[int], depths: list[int]) -> list[dict]:
    """Every (nprobe, rescore depth) of `index`: recall over all, over the real vectors alone, and per-query time."""
    ivf = faiss.extract_index_ivf(index)
    runs = []
    for nprobe in nprobes:
        ivf.nprobe = nprobe
        deepest = max(max(depths), K)
        _, candidates = index.search(queries, deepest)
        real_only = faiss.SearchParametersIVF(sel=faiss.IDSelectorRange(0, real), nprobe=nprobe)
        _, candidates_real = index.search(queries, deepest, params=real_only)
        for depth in depths:
            if depth == 0:
                found = [row[:K] for row in candidates]
                found_real = [row[:K] for row in candidates_real]
            else:
                found = [rescored(q, row[: max(depth, K)], originals) for q, row in zip(queries, candidates)]
                found_real = [rescored(q, row[: max(depth, K)], originals) for q, row in zip(queries, candidates_real)]
            times = []
            for query in queries[:200]:
                begin = time.perf_counter()
                _, ids = index.search(query[None], max(depth, K))
                if depth:
                    rescored(query, ids[0], originals)
                times.append((time.perf_counter() - begin) * 1000)
            runs.append({"nprobe": nprobe, "rescore": depth, "recall_at_10": recall(found, truth),
                         "recall_at_10_real": recall(found_real, truth_real),
                         "p50_ms": round(statistics.median(times), 3),
                         "p99_ms": round(float(np.percentile(times, 99)), 3)})
            print(json.dumps(runs[-1]), flush=True)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vectors", type=int, default=200_000)
    parser.add_argument("--real", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--noise", type=float, default=DEFAULT_NOISE)
    parser.add_argument("--train", type=int, default=100_000, help="training sample (the engine's TRAINING_SAMPLE)")
    parser.add_argument("--factories", nargs="+", default=["IVF1024,PQ48np", "IVF1024,PQ96np"])
    parser.add_argument("--nprobe", type=int, nargs="+", default=[16, 32, 64, 128])
    parser.add_argument("--rescore", type=int, nargs="+", default=[0, 100, 200, 500, 1000])
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--scratch", type=Path, help="past memory: a folder for the vectors' float16 file")
    parser.add_argument("--keep-scratch", action="store_true", help="keep the vectors' file for another run")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    real = cached_wiki(args.cache_dir, min(args.real, args.vectors))
    queries = cached_queries(args.cache_dir, args.queries)
    started = time.perf_counter()
    if args.scratch is None:
        vectors = noisy_copies(real, args.vectors, args.noise)
        originals = vectors.astype(np.float16)
    else:
        args.scratch.mkdir(parents=True, exist_ok=True)
        vectors = originals = scratch_vectors(args.scratch / "vectors.npy", real, args.vectors, args.noise)
    made = time.perf_counter()
    truth, truth_real = exact_top_blocks(vectors, queries, K), exact_top_blocks(real, queries, K)
    print(f"made {len(vectors):,} vectors in {made - started:.0f} s, exact top {K} in {time.perf_counter() - made:.0f} s",
          flush=True)
    sample = vectors[np.sort(np.random.default_rng(0).permutation(len(vectors))[: args.train])]
    results, threads = [], faiss.omp_get_max_threads()
    try:
        for factory in args.factories:
            index, seconds = built_index(factory, sample, vectors)
            built = round(sum(seconds.values()), 1)
            print(f"{factory}: built in {built} s ({seconds})", flush=True)
            faiss.omp_set_num_threads(1)
            runs = sweep(index, queries, truth, truth_real, len(real), originals, args.nprobe, args.rescore)
            faiss.omp_set_num_threads(threads)
            results.append({"factory": factory, "build_s": built, **seconds, "peak_rss_mb": peak_rss_mb(),
                            "runs": runs})
            del index
            if args.out:
                write_results(args.out, {
                    "machine": machine_record(load_average=os.getloadavg()), "command": command_line(),
                    "vectors": len(vectors), "real_vectors": len(real), "noise": args.noise, "queries": len(queries),
                    "train": len(sample),
                    "what": "recall@10 against exact search (and on the real vectors alone), p50/p99 of one query "
                            "alone on one thread with rescoring from float16 originals, encoding left out",
                    "results": results,
                })
    finally:
        if args.scratch is not None and not args.keep_scratch:
            del vectors, originals
            (args.scratch / "vectors.npy").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
