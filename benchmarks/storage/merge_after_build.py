"""What the first small write after a build of several large segments costs: the merges the policy then plans,
with the build's merge limit (now) and without it (before), each in a fresh process.

A build with --shards segments of --per-shard vectors each (random unit vectors of 384 dimensions, stored with
one-word texts; the index type --index, HNSW32 by default), as `--shards` or the Ray workers' parts leave it.
Then one document is written in place and the merges the policy plans run (`merge_as_needed`, what an `add`
runs after its commit), timed. "before" runs the same code with the build's merge limit switched off, which is
the policy as it was.

    .venv/bin/python benchmarks/storage/merge_after_build.py --shards 10 --per-shard 51000 \\
        --out benchmarks/storage/results/merge_after_build.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.harness.machine import machine_record
from benchmarks.harness.results import write_results

DIMENSION = 384


def build_and_write(path: Path, shards: int, per_shard: int, index_type: str, limit: bool) -> dict:
    """Build the index at `path`, write one document, run the planned merges; their seconds and what they did."""
    from searchengine.indexer.commit import rewrite
    from searchengine.indexer.commit.index_directory import IndexDirectory
    from searchengine.indexer.commit.live_write import writing_in_place
    from searchengine.indexer.commit.merge_policy import merge_as_needed
    from searchengine.indexer.tables.store import Document

    from searchengine.encoding.encoder import Encoder
    from searchengine.engine.indexing import Chunk, IndexSettings, build_index

    if not limit:
        rewrite.build_merge_limit = lambda _records: None  # the policy before: no merge limit
    rng = np.random.default_rng(0)

    def unit(count: int) -> np.ndarray:
        vectors = rng.normal(size=(count, DIMENSION)).astype(np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    total = shards * per_shard
    chunks = (
        Chunk(
            [Document(f"document {i}") for i in range(start, min(start + 4096, total))], unit(min(4096, total - start))
        )
        for start in range(0, total, 4096)
    )
    directory = IndexDirectory(path)
    started = time.perf_counter()
    build_index(directory, chunks, Encoder(), IndexSettings(index_type=index_type, shards=shards), total)
    built = time.perf_counter() - started
    started = time.perf_counter()
    with writing_in_place(directory) as write:
        change = write.store.add([Document("one more document")])
        write.vectors.add(unit(1), np.asarray(change.ids))
    written = time.perf_counter() - started
    started = time.perf_counter()
    merges = merge_as_needed(directory)
    merged = time.perf_counter() - started
    return {
        "build_s": round(built, 1),
        "write_s": round(written, 4),
        "merges_s": round(merged, 4),
        "merges": len(merges),
        "vectors_merged": sum(result.segment.vectors for result in merges if result.segment is not None),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shards", type=int, default=10)
    parser.add_argument("--per-shard", type=int, default=51_000, help="vectors a segment (> 50,000: not exact)")
    parser.add_argument("--index", default="HNSW32")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--measure", choices=("now", "before"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        with tempfile.TemporaryDirectory() as work:
            result = build_and_write(
                Path(work) / "index", args.shards, args.per_shard, args.index, args.measure == "now"
            )
        print(json.dumps(result))
        return
    results = {}
    for policy in ("now", "before"):
        command = [sys.executable, __file__, "--measure", policy, "--shards", str(args.shards)]
        command += ["--per-shard", str(args.per_shard), "--index", args.index]
        answer = subprocess.run(command, check=True, capture_output=True, text=True)
        results[policy] = json.loads(answer.stdout.strip().splitlines()[-1])
        print(policy, json.dumps(results[policy]))
    record = {
        "machine": machine_record(load_after=os.getloadavg()),
        "shards": args.shards,
        "per_shard": args.per_shard,
        "index": args.index,
        "results": results,
    }
    if args.out:
        write_results(args.out, record)


if __name__ == "__main__":
    main()
