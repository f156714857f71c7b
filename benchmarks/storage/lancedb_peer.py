"""LanceDB's side of benchmarks/storage/side_by_side.py, run in a separate virtual environment that has lancedb
(never this project's: `../peers-venv/bin/pip install lancedb`). It imports nothing of this project.

`build`: writes the vectors (.npy, row i gets id i) to a LanceDB table in --table-dir and trains its IVF-PQ index
(inner product, --partitions lists, --sub-vectors bytes a vector), printing one JSON line with the seconds and the
folder's bytes. `search` (a fresh process): reads VmRSS after importing lancedb (the baseline), opens the table and,
for each (nprobes, refine_factor) asked, searches every query alone after a warm-up, printing one JSON line each
with the seconds of every query, the ids found, and the process's VmRSS and RssAnon after it. refine_factor r reads
the k·r best candidates' full vectors back from the table and ranks them exactly (LanceDB's rescoring).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import lancedb
import numpy as np
import pyarrow as pa
from lancedb.index import IvfPq

TABLE = "bench"


def vm_mib(field: str) -> float:
    """A field of /proc/self/status (VmRSS, RssAnon) in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def build(args: argparse.Namespace) -> dict:
    vectors = np.load(args.vectors, mmap_mode="r")
    dimension = vectors.shape[1]
    started = time.perf_counter()
    db = lancedb.connect(str(args.table_dir))
    schema = pa.schema([("id", pa.int64()), ("vector", pa.list_(pa.float32(), dimension))])

    def batches():
        for start in range(0, len(vectors), 100_000):
            part = np.ascontiguousarray(vectors[start : start + 100_000], dtype=np.float32)
            flat = pa.array(part.reshape(-1))
            yield pa.record_batch(
                [pa.array(np.arange(start, start + len(part), dtype=np.int64)),
                 pa.FixedSizeListArray.from_arrays(flat, dimension)],
                schema=schema,
            )

    table = db.create_table(TABLE, data=pa.RecordBatchReader.from_batches(schema, batches()), mode="overwrite")
    written = time.perf_counter() - started
    config = IvfPq(distance_type="dot", num_partitions=args.partitions, num_sub_vectors=args.sub_vectors)
    table.create_index("vector", config=config)
    seconds = time.perf_counter() - started
    size = sum(path.stat().st_size for path in Path(args.table_dir).rglob("*") if path.is_file())
    return {"build_s": round(seconds, 1), "write_s": round(written, 1), "disk_bytes": size,
            "lancedb": lancedb.__version__, "partitions": args.partitions, "sub_vectors": args.sub_vectors}


def nearest(table: object, vector: np.ndarray, k: int, nprobes: int, refine: int) -> list[int]:
    """The ids of the k best rows for `vector` by inner product, searching `nprobes` lists and reading k·`refine`
    candidates' full vectors back to rank them exactly (0: no refinement)."""
    query = table.search(vector).distance_type("dot").nprobes(nprobes).limit(k).select(["id"])
    if refine:
        query = query.refine_factor(refine)
    return query.to_arrow().column("id").to_pylist()


def search(args: argparse.Namespace) -> None:
    queries = np.load(args.queries)
    baseline = vm_mib("VmRSS")
    table = lancedb.connect(str(args.table_dir)).open_table(TABLE)
    for setting in args.settings:
        nprobes, refine = (int(part) for part in setting.split(":"))
        for vector in queries[: args.warmup]:
            nearest(table, vector, args.k, nprobes, refine)
        seconds, ids = [], []
        for vector in queries:
            begin = time.perf_counter()
            ids.append(nearest(table, vector, args.k, nprobes, refine))
            seconds.append(time.perf_counter() - begin)
        print(json.dumps({"nprobes": nprobes, "refine_factor": refine, "seconds": seconds, "ids": ids,
                          "baseline_mb": baseline, "vm_rss_mb": vm_mib("VmRSS"), "rss_anon_mb": vm_mib("RssAnon")}),
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("step", choices=["build", "search"])
    parser.add_argument("--table-dir", type=Path, required=True)
    parser.add_argument("--vectors", type=Path)
    parser.add_argument("--queries", type=Path)
    parser.add_argument("--partitions", type=int, default=1024)
    parser.add_argument("--sub-vectors", type=int, default=48)
    parser.add_argument("--settings", nargs="*", default=["64:10"], help="NPROBES:REFINE_FACTOR pairs to search with")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    if args.step == "build":
        print(json.dumps(build(args)), flush=True)
    else:
        search(args)


if __name__ == "__main__":
    main()
