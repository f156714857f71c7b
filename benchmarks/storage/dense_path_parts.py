"""Where a dense query's time goes through the engine, beyond FAISS's own search (issue 42, the default at 100k).

Given index directories built by benchmarks/storage/default_index.py --keep (the 100,000 real Wikipedia vectors, or
any other), each query of the STS-B test sentences (their cached vectors, --cache-dir) is searched alone, layer by
layer, and the CPU time of each layer is taken (time.thread_time: on a loaded machine the wall time of a query of a
few milliseconds mostly measures waiting for a core):

- faiss: the segment's FAISS index searched directly (its id map included), as deep as the engine asks (k, or the
  rescore depth for a segment that keeps originals);
- rescore: the candidates rescored from the float16 originals (MappedOriginals.rescore), for such a segment;
- segments: SegmentSet.search, which does both, with the per-segment filter and tombstone routing and the merge;
- rankings: dense_rankings (passages, Scored records) over it;
- rows: hits_of, the hits' rows read from the store (SQLite) and their clusters.

Each variant runs its queries in turn with the others, over --rounds rounds after a warm-up round; the medians are
over every query of every round. Recall@10 is against exact search over the vectors the index holds (read back
from it: the originals where it keeps them).

Usage:
  .venv/bin/python benchmarks/storage/dense_path_parts.py --index /tmp/default-index/HNSW32_SQ8 \
      --index /tmp/default-index/HNSW32 --ef 192 --rescore 20,100
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

from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import command_line, machine_record
from benchmarks.harness.results import write_results
from benchmarks.scale.search_speed import cached_embeddings, read_stsb_test, read_wiki
from searchengine import Encoder, SearchEngine
from searchengine.engine.search import dense_rankings, hits_of

K = 10
PARTS = ("faiss", "rescore", "segments", "rankings", "rows")


def query_vectors(encoder: Encoder, data: Path, cache_dir: Path, count: int) -> np.ndarray:
    """The first `count` distinct STS-B test sentences that are no Wikipedia line, as cached vectors."""
    left, right, _ = read_stsb_test(data, None)
    wiki = set(read_wiki(data, 100_000))
    queries = [text for text in dict.fromkeys(left + right) if text not in wiki]
    vectors, _ = cached_embeddings(encoder, queries, cache_dir, "stsb-queries")
    return np.ascontiguousarray(vectors[:count])


def exact_ids(engine: SearchEngine, queries: np.ndarray) -> np.ndarray:
    """The exact top k ids of each query over the vectors the index holds."""
    ids, matrix = engine.reader.vectors.stored_matrix()
    flat = faiss.IndexFlatIP(matrix.shape[1])
    flat.add(matrix)
    return ids[flat.search(queries, K)[1]]


def timed_parts(engine: SearchEngine, ef: int, rescore: int | None, query: np.ndarray) -> tuple[dict, list[int]]:
    """CPU seconds of each layer for one query, and the ids the engine found."""
    reader = engine.reader
    vectors = reader.vectors.rescoring(rescore)
    depth, rescored = vectors.candidates(vectors.segments[0], K)  # as SegmentSet.search decides it
    segment = vectors.segments[0].index
    faiss.downcast_index(segment.index.index).hnsw.efSearch = ef
    row = query[None, :]
    seconds = {}
    begin = time.thread_time()
    candidates = segment.index.search(row, depth)[1]
    seconds["faiss"] = time.thread_time() - begin
    if rescored:
        begin = time.thread_time()
        segment.originals.rescore(row, candidates, K)
        seconds["rescore"] = time.thread_time() - begin
    begin = time.thread_time()
    vectors.search(row, K)
    seconds["segments"] = time.thread_time() - begin
    begin = time.thread_time()
    rankings = dense_rankings(vectors, reader.store, row, K)
    seconds["rankings"] = time.thread_time() - begin
    begin = time.thread_time()
    hits = hits_of(reader.store, rankings)[0]
    seconds["rows"] = time.thread_time() - begin
    return seconds, [hit.id for hit in hits]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, action="append", required=True, help="an index directory (repeat)")
    parser.add_argument("--ef", default="192", help="HNSW efSearch values, ','-separated")
    parser.add_argument("--rescore", default="", help="rescore depths for indexes that keep originals")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "searchengine-bench" / "blocks")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    faiss.omp_set_num_threads(1)
    encoder = Encoder()
    queries = query_vectors(encoder, args.data, args.cache_dir, args.queries)
    variants, truths, engines = [], {}, {}
    for path in args.index:
        engines[path] = SearchEngine.open(path, encoder=encoder)
        if len(engines[path].reader.vectors.segments) != 1:
            raise SystemExit(f"{path}: this breakdown reads an index of one segment")
        truths[path] = exact_ids(engines[path], queries)
        keeps = engines[path].reader.vectors.has_originals
        depths = [int(depth) for depth in args.rescore.split(",") if depth] if keeps else []
        for ef in (int(ef) for ef in args.ef.split(",")):
            variants += [(path, ef, depth) for depth in depths or [None]]
    times = {variant: {part: [] for part in PARTS} for variant in variants}
    found = {variant: [] for variant in variants}
    for round_number in range(args.rounds + 1):
        for query in queries:
            for variant in variants:
                seconds, ids = timed_parts(engines[variant[0]], variant[1], variant[2], query)
                if round_number == 0:
                    found[variant].append(ids)
                    continue
                for part, value in seconds.items():
                    times[variant][part].append(value)
    results = {"machine": machine_record(), "command": command_line(), "load_average_end": os.getloadavg()}
    results["variants"] = {}
    for variant in variants:
        path, ef, depth = variant
        truth = truths[path]
        recall = np.mean([len(set(f) & set(map(int, t))) / K for f, t in zip(found[variant], truth, strict=True)])
        record = {"index": str(path), "ef_search": ef, "rescore": depth, "recall_at_10": round(float(recall), 4)}
        for part, values in times[variant].items():
            if values:
                record[f"{part}_cpu_p50_ms"] = round(statistics.median(values) * 1000, 3)
        record["beyond_faiss_cpu_p50_ms"] = round(
            statistics.median(
                np.add(times[variant]["rankings"], times[variant]["rows"]) - np.asarray(times[variant]["faiss"])
            )
            * 1000,
            3,
        )
        name = f"{path.name} ef{ef}" + ("" if depth is None else f" rescore{depth}")
        results["variants"][name] = record
        print(name, json.dumps(record), flush=True)
    for engine in engines.values():
        engine.close()
    if args.out:
        write_results(args.out, results)


if __name__ == "__main__":
    main()
