"""What the driver must do after the Ray workers finish, with parts capped at an exact segment (before) and with
parts just over it (after, `searchengine index --ray`'s default for a non-Flat index), on a local Ray cluster.

The workers' side runs on Ray: one task per part (the corpus cut for --workers actors by
searchengine.engine.ray_embedding.segment_parts, or capped at 50,000 documents as before) writes its part's
vectors as a segment (write_worker_segment: exact up to 50,000 vectors, else the index's type, HNSW32 here).
The driver's side is then what turns the segments into the index's type: merging every exact segment into one
segment of that type (indexer/commit/merge_policy's copy: reconstruct, add), which `compact` or later merges do on the
one machine that writes. Vectors: the first --real Wikipedia sentences embedded by the bundled model, then noisy
copies of them up to --vectors (benchmarks/scale/synthetic.py). The store's rows are left out: they are the same both
ways (benchmarks/scale/ray_driver.py times them). Search latency and recall@10 (against exact search, 200 queries) of
the segments the workers leave are reported beside. Variants alternate within each round.

Usage: .venv/bin/python benchmarks/scale/ray_parts.py [--vectors 104000] [--real 2000] [--workers 2] [--rounds 1]
       [--out benchmarks/scale/results/ray_parts.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results
from benchmarks.scale.synthetic import noisy_copies

ROOT = Path(__file__).resolve().parents[2]
INDEX_TYPE = "HNSW32"


def vectors_of(data: Path, real: int, count: int) -> np.ndarray:
    """`count` vectors: `real` Wikipedia sentences embedded by the bundled model, then noisy copies."""
    from searchengine import Encoder

    with gzip.open(data / "unsup" / "wiki_sentences.txt.gz", "rt", encoding="utf-8") as handle:
        lines = [line.strip() for line in islice(handle, real)]
    return noisy_copies(Encoder().encode(lines), count)


def parts_of(count: int, workers: int, capped: bool) -> list[int]:
    """The documents of each part: as `--ray` cuts a corpus of `count` for `workers` actors now, or (capped) as it
    did before, at most SMALL_SEGMENT_LIMIT documents a part."""
    from searchengine.indexer.vectors.segments import SMALL_SEGMENT_LIMIT

    from searchengine.engine.ray_embedding import PARTS_PER_WORKER, WORKER_BATCH, merge_parts, segment_parts
    from searchengine.reading.corpus import CorpusPart

    planned = [CorpusPart("c.txt", 0, 1 + s, min(WORKER_BATCH, count - s)) for s in range(0, count, WORKER_BATCH)]
    if capped:
        wanted = -(-count // (workers * PARTS_PER_WORKER))
        batches = max(1, min(-(-wanted // WORKER_BATCH), SMALL_SEGMENT_LIMIT // WORKER_BATCH))
        parts = merge_parts(planned, batches * WORKER_BATCH)
    else:
        parts = segment_parts(planned, workers, INDEX_TYPE)
    return [part.documents for part in parts]


def one_build(vectors: np.ndarray, sizes: list[int], folder: Path, queries: np.ndarray, truth: np.ndarray) -> dict:
    """The workers write the parts' segments on Ray; then the driver's merge of the exact ones into the index's
    type, timed, with the search quality of what the workers left."""
    import ray
    from searchengine.indexer.vectors.segments import load_segment_set, reserve_segment_numbers
    from searchengine.indexer.vectors.vector_index import VectorIndex

    from searchengine.engine.ray_embedding import SegmentTarget, write_worker_segment

    folder.mkdir()
    target = SegmentTarget(str(folder), reserve_segment_numbers(len(vectors)), INDEX_TYPE)
    shared = ray.put(vectors)
    write = ray.remote(num_cpus=1)(
        lambda matrix, start, stop: write_worker_segment(target, matrix[start:stop], np.arange(start, stop))
    )
    starts = np.cumsum([0, *sizes])
    started = time.perf_counter()
    records = ray.get([write.remote(shared, int(a), int(b)) for a, b in zip(starts[:-1], starts[1:])])
    workers_s = time.perf_counter() - started
    segments = load_segment_set(folder, records, INDEX_TYPE, vectors.shape[1])
    found = segments.search(queries, 10)[1]  # warm
    started = time.perf_counter()
    for _ in range(3):
        found = segments.search(queries, 10)[1]
    search_ms = (time.perf_counter() - started) / 3 / len(queries) * 1000
    recall = float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(found.tolist(), truth.tolist())]))
    exact = [record for record in records if record.factory == "Flat"]
    started = time.perf_counter()
    if exact:  # what a merge of them into the index's type does (indexer/commit/merge_policy._merge_into)
        flat = load_segment_set(folder, exact, INDEX_TYPE, vectors.shape[1])
        live = np.sort(flat.ids())
        merged = VectorIndex.create(INDEX_TYPE, vectors.shape[1])
        for start in range(0, len(live), 65_536):
            merged.add(flat.reconstruct(live[start : start + 65_536]), live[start : start + 65_536])
    driver_s = time.perf_counter() - started
    return {
        "segments": [f"{r.factory}:{r.vectors}" for r in records],
        "workers_writing_s": round(workers_s, 2),
        "driver_merge_to_index_type_s": round(driver_s, 2),
        "vectors_the_driver_rebuilds": sum(r.vectors for r in exact),
        "search_ms_per_query_as_left": round(search_ms, 3),
        "recall_at_10_as_left": round(recall, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vectors", type=int, default=104_000)
    parser.add_argument("--real", type=int, default=2000, help="Wikipedia sentences embedded (the rest are copies)")
    parser.add_argument("--workers", type=int, default=2, help="Ray actors the corpus is cut for (and CPUs)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--data", type=Path, default=DATA, help="the data folder (benchmarks/datasets/get_data.py)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "scale" / "results" / "ray_parts.json")
    args = parser.parse_args()
    load_before = os.getloadavg()
    import logging

    import faiss
    import ray

    vectors = vectors_of(args.data, args.real, args.vectors)
    queries = noisy_copies(vectors[: args.real], args.real + 200, seed=1)[args.real :]
    exact = faiss.IndexFlatIP(vectors.shape[1])
    exact.add(vectors)
    truth = exact.search(queries, 10)[1]
    ray.init(num_cpus=args.workers, include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
    variants = {"capped_at_50000": True, "default_parts": False}
    rounds = []
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for number in range(args.rounds):
                names = list(variants)[number % 2 :] + list(variants)[: number % 2]
                row = {}
                for name in names:
                    sizes = parts_of(args.vectors, args.workers, variants[name])
                    row[name] = one_build(vectors, sizes, Path(scratch) / f"{number}-{name}", queries, truth)
                    print(name, json.dumps(row[name]), flush=True)
                rounds.append(row)
    finally:
        ray.shutdown()

    def median(name: str, key: str) -> float:
        return round(statistics.median(r[name][key] for r in rounds), 3)

    keys = ["workers_writing_s", "driver_merge_to_index_type_s", "search_ms_per_query_as_left"]
    summary = {name: {key: median(name, key) for key in keys} for name in variants}
    result = {
        **run_record(load_before),  # the load averages at start and end (os.getloadavg)
        "vectors": args.vectors,
        "real": args.real,
        "workers": args.workers,
        "index_type": INDEX_TYPE,
        "summary": summary,
        "rounds": rounds,
    }
    write_results(args.out, result, indent=1)
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
