"""chroma's side of benchmarks/storage/default_index.py, run in a separate virtual environment that has chromadb
(never this project's: `python3 -m venv ../peers-venv && ../peers-venv/bin/pip install chromadb`).

It imports nothing of this project. Given the vectors and the queries as .npy files, it adds the vectors to an
in-memory collection (chroma's defaults: HNSW, M 16, construction ef 100, search ef 10; inner product space),
prints `ready <seconds>` and then, for each line `round` read from stdin, searches every query alone and prints
one JSON line: the seconds of each query, the CPU seconds of this process during it (all its threads), and, on
the first round, the ids found.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import chromadb
import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--vectors", required=True)
    parser.add_argument("--queries", required=True)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    vectors = np.load(args.vectors)
    queries = np.load(args.queries)
    client = chromadb.EphemeralClient()
    collection = client.create_collection("bench", metadata={"hnsw:space": "ip"})
    batch = client.get_max_batch_size()
    started = time.perf_counter()
    for start in range(0, len(vectors), batch):
        stop = min(start + batch, len(vectors))
        collection.add(ids=[str(i) for i in range(start, stop)], embeddings=vectors[start:stop])
    print(f"ready {time.perf_counter() - started:.2f} {chromadb.__version__}", flush=True)
    first = True
    for line in sys.stdin:
        if line.strip() != "round":
            break
        seconds, cpu_seconds, found = [], [], []
        for query in queries:
            begin, cpu = time.perf_counter(), time.process_time()
            result = collection.query(query_embeddings=[query], n_results=args.k, include=["distances"])
            seconds.append(time.perf_counter() - begin)
            cpu_seconds.append(time.process_time() - cpu)
            found.append([int(i) for i in result["ids"][0]])
        print(json.dumps({"seconds": seconds, "cpu_seconds": cpu_seconds, "ids": found if first else None}), flush=True)
        first = False


if __name__ == "__main__":
    main()
