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

from benchmarks.harness.machine import command_line, machine_record
from benchmarks.harness.results import write_results
from benchmarks.scale.synthetic import DEFAULT_NOISE, noisy_copies
from benchmarks.storage.rescoring import cached_queries, cached_wiki

K = 10
DEFAULT_CACHE = Path.home() / ".cache" / "searchengine-bench" / "blocks"


def exact_top(vectors: np.ndarray, queries: np.ndarray) -> np.ndarray:
    flat = faiss.IndexFlatIP(vectors.shape[1])
    flat.add(vectors)
    return flat.search(queries, K)[1]


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
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    real = cached_wiki(args.cache_dir, min(args.real, args.vectors))
    vectors = noisy_copies(real, args.vectors, args.noise)
    queries = cached_queries(args.cache_dir, args.queries)
    truth, truth_real = exact_top(vectors, queries), exact_top(real, queries)
    originals = vectors.astype(np.float16)
    sample = vectors[np.sort(np.random.default_rng(0).permutation(len(vectors))[: args.train])]
    results, threads = [], faiss.omp_get_max_threads()
    for factory in args.factories:
        started = time.perf_counter()
        index = faiss.index_factory(vectors.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
        index.train(sample)
        index.add(vectors)
        built = round(time.perf_counter() - started, 1)
        print(f"{factory}: built in {built} s", flush=True)
        faiss.omp_set_num_threads(1)
        runs = sweep(index, queries, truth, truth_real, len(real), originals, args.nprobe, args.rescore)
        faiss.omp_set_num_threads(threads)
        results.append({"factory": factory, "build_s": built, "runs": runs})
        if args.out:
            write_results(args.out, {
                "machine": machine_record(load_average=os.getloadavg()), "command": command_line(), "vectors": len(vectors),
                "real_vectors": len(real), "noise": args.noise, "queries": len(queries), "train": len(sample),
                "what": "recall@10 against exact search (and on the real vectors alone), p50/p99 of one query alone "
                        "on one thread with rescoring from float16 originals, encoding left out",
                "results": results,
            })


if __name__ == "__main__":
    main()
