"""HNSW's build and search parameters at 100,000 MiniLM vectors, in FAISS alone (issue 42): which neighbour count
(M), construction depth (efConstruction) and storage (float32, or 8-bit codes rescored from the originals) reach
recall@10 >= 0.98 at the lowest single-query latency, and what each costs to build.

Vectors: the first --real Wikipedia sentences' cached vectors (benchmarks/storage/default_index.py's
real_vectors), then noisy copies to --docs (benchmarks/scale/synthetic.py); queries: the first --queries held-out
STS-B test sentences. Ground truth: exact inner-product top-10. Each --builds entry "FACTORY:EFC" is built with
FAISS's index_factory (inner product), efConstruction EFC, on --build-threads OpenMP threads (the build's seconds
are recorded); an entry ending ",SQ8" is searched --rescore deep and its candidates rescored exactly from float16
originals, as the engine's compressed segments are. Searches run one query at a time on one thread, every
(build, efSearch) pair taking turns in each of --rounds rounds in a rotating order (benchmarks/harness/rounds.py),
so load falls on all alike; p50/p99 are over every query of every round. FAISS alone: no store, no engine.

Usage:
  .venv/bin/python benchmarks/storage/hnsw_params.py --out benchmarks/storage/results/hnsw_params.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import faiss
import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import command_line, machine_record
from benchmarks.harness.results import write_results
from benchmarks.harness.rounds import percentile_ms, rotation
from benchmarks.scale.synthetic import DEFAULT_NOISE, noisy_copies
from benchmarks.storage.default_index import K, exact_top, real_vectors, recall
from searchengine import Encoder


def built(
    factory: str, ef_construction: int, vectors: np.ndarray, threads: int
) -> tuple[faiss.Index, float, float]:
    """An HNSW index of `factory` over `vectors`, built with `ef_construction` on `threads` threads; its seconds,
    and the CPU seconds of the process meanwhile (what compares on a loaded machine)."""
    index = faiss.index_factory(vectors.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
    faiss.downcast_index(index).hnsw.efConstruction = ef_construction
    faiss.omp_set_num_threads(threads)
    started, cpu = time.perf_counter(), time.process_time()
    index.train(vectors)
    index.add(vectors)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu
    faiss.omp_set_num_threads(1)
    return index, seconds, cpu_seconds


def searched(index: faiss.Index, query: np.ndarray, ef: int, rescore: int, originals: np.ndarray | None) -> np.ndarray:
    """The top-k ids of one query at efSearch `ef`; rescored exactly from `originals` when given."""
    depth = max(K, rescore) if originals is not None else K
    _, ids = index.search(query, depth, params=faiss.SearchParametersHNSW(efSearch=max(ef, depth)))
    if originals is None:
        return ids[0]
    found = ids[0][ids[0] >= 0]
    scores = originals[found].astype(np.float32) @ query[0]
    return found[np.argsort(-scores, kind="stable")[:K]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--real", type=int, default=100_000, help="real vectors (the rest are noisy copies)")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--builds", default="HNSW32:40;HNSW32:80;HNSW32:200;HNSW16:200;HNSW32,SQ8:200")
    parser.add_argument("--ef", default="16,32,48,64,96,128,192,256,512")
    parser.add_argument("--rescore", type=int, default=50, help="candidates rescored for an SQ8 build")
    parser.add_argument("--build-threads", type=int, default=2)
    parser.add_argument("--noise", type=float, default=DEFAULT_NOISE)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "searchengine-bench" / "blocks")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    _, real, query_vectors = real_vectors(Encoder(), args.data, args.real, args.cache_dir)
    vectors = noisy_copies(real, args.docs, args.noise)
    queries = np.ascontiguousarray(query_vectors[: args.queries])
    truth = exact_top(vectors, queries)
    originals = vectors.astype(np.float16)
    efs = [int(ef) for ef in args.ef.split(",")]
    results: dict = {
        "machine": machine_record(),
        "command": command_line(),
        "data": {
            "docs": len(vectors),
            "real_vectors": len(real),
            "noisy_copies": len(vectors) - len(real),
            "noise_sigma": args.noise,
            "queries": len(queries),
            "model": "bundled all-MiniLM-L6-v2",
        },
        "rounds": args.rounds,
        "search_threads": 1,
        "build_threads": args.build_threads,
        "builds": {},
    }
    indexes, variants = {}, []
    for entry in args.builds.split(";"):
        factory, ef_construction = entry.rsplit(":", 1)
        indexes[entry], seconds, cpu_seconds = built(factory, int(ef_construction), vectors, args.build_threads)
        results["builds"][entry] = {"factory": factory, "ef_construction": int(ef_construction),
                                    "build_s": round(seconds, 1), "build_cpu_s": round(cpu_seconds, 1),
                                    "search": {}}  # fmt: skip
        print(f"{entry} built in {seconds:.1f} s", flush=True)
        variants += [(entry, ef) for ef in efs]
    seconds: dict = {variant: [] for variant in variants}
    found: dict = {}
    for round_number in range(args.rounds):
        for entry, ef in rotation(variants, round_number):
            rescored = originals if entry.split(":")[0].endswith(",SQ8") else None
            rows = []
            for query in queries:
                begin = time.perf_counter()
                rows.append(searched(indexes[entry], query[None, :], ef, args.rescore, rescored))
                seconds[(entry, ef)].append(time.perf_counter() - begin)
            found[(entry, ef)] = rows
        print(f"round {round_number + 1}/{args.rounds} done", flush=True)
    for (entry, ef), times in seconds.items():
        record = {"recall_at_10": round(recall(found[(entry, ef)], truth), 4), "p50_ms": percentile_ms(times, 50, 3),
                  "p99_ms": percentile_ms(times, 99, 3)}  # fmt: skip
        results["builds"][entry]["search"][f"ef{ef}"] = record
        print(f"{entry:>18} ef{ef:<4} recall@10 {record['recall_at_10']:.4f}  p50 {record['p50_ms']} ms", flush=True)
    if args.out:
        write_results(args.out, results)
    print(json.dumps({entry: {"build_s": b["build_s"]} for entry, b in results["builds"].items()}))


if __name__ == "__main__":
    main()
