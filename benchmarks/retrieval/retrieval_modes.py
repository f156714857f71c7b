"""Query time of dense, keyword and hybrid search, measured in the same run on the same index and queries.

- Indexes: ones built from the BEIR sets in ../shared/data/retrieval with the bundled model and exact (Flat)
  search, as docs/retrieval.md builds them (`searchengine index corpus.jsonl --id-field _id --title-field title
  --index-type Flat -d DIR`). Each is named NAME=DIR; its queries are DATA/NAME/queries.jsonl, judged ones only.
- Timing: warm (each mode runs --warmup queries first), one `engine.search(query, k=10, mode=...)` call at a
  time, the modes in rotating order for each query so that they share whatever else runs on the machine. Each
  query's time is its median over --runs calls; the table gives the median (p50) and p90 over the queries, and
  the median over queries of each query's time over its dense time (the cost a mode adds, as a ratio that
  the machine's load affects alike in both).
- Hybrid runs with the engine's default fusion (searchengine.engine.modes.DEFAULT_FUSION).

Usage: .venv/bin/python benchmarks/retrieval/retrieval_modes.py --index nfcorpus=/tmp/nfcorpus-index
       --index arguana=/tmp/arguana-index [--data ../shared/data/retrieval] [--queries 300] [--runs 5]
       [--out benchmarks/retrieval/results/retrieval_modes.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from importlib.metadata import version
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results
from benchmarks.harness.rounds import rotation
from searchengine import SearchEngine
from searchengine.engine.mode_registry import mode_names
from searchengine.engine.modes import DEFAULT_FUSION
from searchengine.evaluation.retrieval import read_queries

ROOT = Path(__file__).resolve().parents[2]
K = 10
SEARCH_MODES = mode_names()
"""Every registered retrieval mode: the built-in ones, here."""


def judged_queries(data: Path, name: str, limit: int) -> list[str]:
    """The first `limit` queries of the set that have a judgement in its test qrels."""
    ids, texts = read_queries(data / name / "queries.jsonl")
    lines = (data / name / "qrels_test.tsv").read_text(encoding="utf-8").splitlines()[1:]
    judged = {line.split("\t")[0] for line in lines if line.strip()}
    return [text for query, text in zip(ids, texts) if query in judged][:limit]


def time_modes(engine: SearchEngine, queries: list[str], runs: int, warmup: int) -> dict[str, list[float]]:
    """Each query's median time (ms) over `runs` calls, per mode; the modes interleaved query by query."""
    for mode in SEARCH_MODES:
        for query in queries[:warmup]:
            engine.search(query, k=K, mode=mode)
    per_query: dict[str, list[float]] = {mode: [] for mode in SEARCH_MODES}
    for number, query in enumerate(queries):
        times: dict[str, list[float]] = {mode: [] for mode in SEARCH_MODES}
        for run in range(runs):
            for mode in rotation(SEARCH_MODES, number + run):
                started = time.perf_counter()
                engine.search(query, k=K, mode=mode)
                times[mode].append((time.perf_counter() - started) * 1000)
        for mode in SEARCH_MODES:
            per_query[mode].append(statistics.median(times[mode]))
    return per_query


def summary(per_query: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    dense = per_query["dense"]
    result = {}
    for mode, times in per_query.items():
        ordered = sorted(times)
        result[mode] = {
            "p50_ms": round(statistics.median(times), 3),
            "p90_ms": round(ordered[int(0.9 * (len(ordered) - 1))], 3),
            "median_ratio_to_dense": round(statistics.median(t / d for t, d in zip(times, dense)), 3),
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", action="append", required=True, help="NAME=DIR, NAME a set under --data")
    parser.add_argument("--data", type=Path, default=DATA / "retrieval")
    parser.add_argument("--queries", type=int, default=300, help="Judged queries timed per set (the first N).")
    parser.add_argument("--runs", type=int, default=5, help="Calls per query and mode; its median counts.")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "retrieval" / "results" / "retrieval_modes.json")
    args = parser.parse_args()
    load_before = os.getloadavg()
    sets = {}
    for item in args.index:
        name, _, directory = item.partition("=")
        engine = SearchEngine.open(directory)
        queries = judged_queries(args.data, name, args.queries)
        started = time.perf_counter()
        per_query = time_modes(engine, queries, args.runs, args.warmup)
        sets[name] = {
            "index": directory,
            "documents": len(engine),
            "queries_timed": len(queries),
            "mean_query_words": round(statistics.mean(len(q.split()) for q in queries), 1),
            "modes": summary(per_query),
            "seconds": round(time.perf_counter() - started, 1),
        }
        print(name, json.dumps(sets[name]["modes"]), file=sys.stderr)
    results = {
        **run_record(load_before),
        "fusion": DEFAULT_FUSION.describe(),
        "k": K,
        "runs": args.runs,
        "versions": {name: version(name) for name in ("searchengine", "faiss-cpu", "onnxruntime", "torch")},
        "sets": sets,
    }
    write_results(args.out, results)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
