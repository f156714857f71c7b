"""What a small segment costs a query: `--count` vectors encoded with an IVF template (a copy of the trained empty
index, as a write in a trained index makes it) against the same vectors kept exact (Flat), per query, for each
--nlist. Why a write of fewer vectors than the template's IVF lists stays exact (indexer/vectors/template.encodes):
every IVF segment searches its coarse quantizer (nlist·d multiply-adds a query) before its few codes.

Vectors: the cached real MiniLM vectors of the shared Wikipedia sentences (benchmarks/storage/rescoring.py's
cached_wiki), the first --train training the template (its PQ with 4-bit codes, to train fast: the quantizer's cost
is what is measured), queries the STS-B sentences' vectors. One FAISS thread, batches of --queries, best of
--rounds (the machine is shared).

Usage:
  .venv/bin/python benchmarks/storage/small_segment_cost.py --nlist 256,1024,4096
Writes benchmarks/storage/results/small_segment_cost.json (or --out).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import faiss
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from searchengine.indexer.vectors.template import encoder_of, template_of  # noqa: E402
from searchengine.indexer.vectors.vector_index import VectorIndex  # noqa: E402

from benchmarks.storage.memory_check import DEFAULT_CACHE  # noqa: E402
from benchmarks.storage.rescoring import cached_queries, cached_wiki  # noqa: E402


def per_query_ms(index: VectorIndex, queries: np.ndarray, rounds: int) -> float:
    """Milliseconds a query of a batch search of `queries` (k 100), best of `rounds`."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        index.search(queries, 100)
        best = min(best, time.perf_counter() - started)
    return best / len(queries) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nlist", default="256,1024,4096")
    parser.add_argument("--count", type=int, default=10, help="vectors in the small segment")
    parser.add_argument("--train", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "storage" / "results" / "small_segment_cost.json")
    args = parser.parse_args()
    faiss.omp_set_num_threads(1)
    vectors = cached_wiki(args.cache_dir, args.train + args.count)
    queries = cached_queries(args.cache_dir, args.queries)
    small, ids = vectors[args.train :], np.arange(args.count)
    exact = VectorIndex.create("Flat", vectors.shape[1])
    exact.add(small, ids)
    rows = [{"segment": f"Flat, {args.count} vectors", "ms_per_query": round(per_query_ms(exact, queries, args.rounds), 4)}]
    for lists in (int(n) for n in args.nlist.split(",")):
        factory = f"IVF{lists},PQ48x4"
        trained = VectorIndex.create(factory, vectors.shape[1])
        trained.train(vectors[: args.train])
        segment = encoder_of(template_of(trained), None)
        segment.add(small, ids)
        ivf = faiss.extract_index_ivf(segment.index)
        row = {"segment": f"{factory} (nprobe {ivf.nprobe}), {args.count} vectors"}
        row["ms_per_query"] = round(per_query_ms(segment, queries, args.rounds), 4)
        rows.append(row)
        print(json.dumps(row), flush=True)
    result = {"command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]), "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
