"""The driver's peak memory of a cluster build (issue 41's build row: "the driver's peak memory flat in N").

For each --sizes N, a fresh process (so its peak is that build's alone) starts a simulated Ray cluster
(ray.cluster_utils.Cluster, --nodes nodes of one CPU, each named by its `searchengine_node_<name>` resource) and
runs `build_cluster(..., vectors=blocks)` with --shards shards and --copies copies. The documents and their vectors
are made as the build reads them, a block at a time, so nothing of size N is held by this script itself: document i
is `d{i}`, its text the i-th Wikipedia sentence (cycling, a copy's with " [copy j]"), its vector the sentence's
cached real vector (~/.cache/searchengine-bench/blocks, as the scale benchmarks cached them; nothing is encoded)
or, past the --real sentences, a noisy copy of it (benchmarks/scale/synthetic.py's rule, drawn block by block).

Each size's record: the process's resident memory when the build starts (Ray connected, the real vectors and
sentences read; the peak, VmHWM, is reset to it there through /proc/self/clear_refs), its peak during the build,
the growth the build caused, the resident memory after it (VmRSS), and getrusage's ru_maxrss (the whole process's
peak, loading included). Flat in N means the growth does not grow with N. The documents and vector blocks are
also made and dropped once without a build first, and what that alone grew the peak by is recorded beside it.
The last stdout line is one JSON object.

Usage:
  .venv/bin/python benchmarks/scale/cluster_build_memory.py --sizes 20000 80000 200000 \
      --out benchmarks/scale/results/cluster_build_memory.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results
from benchmarks.scale.synthetic import DEFAULT_NOISE

CACHE = Path.home() / ".cache" / "searchengine-bench" / "blocks"
CACHED_BLOCK = 5_000
"""Sentences per cached block (benchmarks/scale/search_speed.py's BLOCK)."""
BLOCK = 10_000
"""Rows of each vector block given to the build."""
OUT = Path(__file__).resolve().parent / "results" / "cluster_build_memory.json"


def kib(field: str) -> int:
    """A field of /proc/self/status (VmHWM, VmRSS), in KiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise SystemExit(f"/proc/self/status has no {field}: this check needs Linux")


def cached_real_vectors(cache: Path, model: str, count: int) -> np.ndarray:
    """The cached vectors of the first `count` Wikipedia sentences (whole cached blocks), found by the model's
    fingerprint without loading the model."""
    from searchengine.encoding.model_source import locate_model

    fingerprint = locate_model(model).fingerprint()[:12]
    blocks = []
    for start in range(0, count, CACHED_BLOCK):
        found = sorted(cache.glob(f"wiki-{fingerprint}-{start}-{start + CACHED_BLOCK}-*.npy"))
        if not found:
            raise SystemExit(
                f"no cached vectors of Wikipedia sentences {start}-{start + CACHED_BLOCK} in {cache}: run "
                "benchmarks/scale/search_speed.py or benchmarks/storage/memory_check.py once to cache them"
            )
        blocks.append(np.load(found[0]))
    return np.ascontiguousarray(np.concatenate(blocks)[:count], dtype=np.float32)


def vector_blocks(real: np.ndarray, count: int, noise: float, seed: int = 0) -> Iterator[np.ndarray]:
    """`count` rows, BLOCK at a time: the real vectors, then noisy re-normalised copies of them (row i copies row
    i mod len(real)), each block's noise drawn from its own seeded generator, in float32 and in place, so a block
    of copies costs about what a block of real vectors does."""
    for start in range(0, count, BLOCK):
        rows = np.arange(start, min(start + BLOCK, count))
        block = real[rows % len(real)]
        first_copy = int(np.searchsorted(rows, len(real)))
        if first_copy < len(rows):
            copies = block[first_copy:]
            copies += noise * np.random.default_rng((seed, start)).standard_normal(copies.shape, dtype=np.float32)
            copies /= np.linalg.norm(copies, axis=1, keepdims=True)
        yield block


def documents(sentences: list[str], count: int) -> Iterator[Any]:
    """Document i: `d{i}`, the i-th sentence (cycling; a copy's text marked with its copy number)."""
    from searchengine.indexer.tables.documents import Document

    for row in range(count):
        copy, sentence = divmod(row, len(sentences))
        text = sentences[sentence] if copy == 0 else f"{sentences[sentence]} [copy {copy}]"
        yield Document(text, external_id=f"d{row}")


def one_size(args: argparse.Namespace) -> dict:
    """Build a cluster index of `args.one` documents in this process and measure its peak memory."""
    import ray

    from benchmarks.scale.search_speed import read_wiki
    from benchmarks.scale.simulated_nodes import simulated_cluster
    from searchengine.cluster import ClusterBuildSettings, build_cluster

    sentences = read_wiki(args.data, args.real)
    real = cached_real_vectors(args.cache_dir, args.model, len(sentences))
    names = ["head", *(f"n{number}" for number in range(1, args.nodes))]
    with tempfile.TemporaryDirectory(prefix="cluster-build-memory-") as scratch:
        cluster, _ = simulated_cluster(names)
        try:
            Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) starts again from what is resident now
            alone = kib("VmHWM")
            for made in (documents(sentences, args.one), vector_blocks(real, args.one, args.noise)):
                for _ in made:  # the inputs alone, made and dropped as the build will read them
                    pass
            inputs_growth = kib("VmHWM") - alone
            Path("/proc/self/clear_refs").write_text("5")
            before = kib("VmHWM")
            settings = ClusterBuildSettings(
                shards=args.shards, copies=args.copies, model=args.model, local_root=str(Path(scratch) / "nodes"),
                nodes=names,
            )  # fmt: skip
            blocks = vector_blocks(real, args.one, args.noise)
            index, report = build_cluster(Path(scratch) / "cluster.json", documents(sentences, args.one), settings,
                                          vectors=blocks)  # fmt: skip
            peak, resident = kib("VmHWM"), kib("VmRSS")
            for states in index.copies:
                for state in states:
                    ray.kill(state.handle)
        finally:
            ray.shutdown()
            cluster.shutdown()
    return {
        "documents": report.documents,
        "shard_documents": report.shard_documents,
        "driver_rows_written": report.driver_rows_written,
        "build_s": round(report.seconds, 1),
        "resident_at_build_start_mib": round(before / 1024, 1),
        "peak_mib": round(peak / 1024, 1),
        "build_growth_mib": round((peak - before) / 1024, 1),
        "inputs_alone_growth_mib": round(inputs_growth / 1024, 1),
        "resident_after_build_mib": round(resident / 1024, 1),
        "ru_maxrss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 80_000, 200_000])
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--model", default="default", help="The model whose cached vectors are used.")
    parser.add_argument("--real", type=int, default=100_000, help="Real Wikipedia vectors before the noisy copies.")
    parser.add_argument("--noise", type=float, default=DEFAULT_NOISE)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache-dir", type=Path, default=CACHE)
    parser.add_argument("--out", type=Path, default=OUT, help="Where the JSON record goes ('-': nowhere).")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # one size, in this process (the runs below)
    args = parser.parse_args(argv)
    if args.one is not None:
        print(json.dumps(one_size(args)))
        return
    load_before = os.getloadavg()
    started = time.perf_counter()
    record: dict[str, Any] = {"shards": args.shards, "nodes": args.nodes, "copies": args.copies, "real": args.real,
                              "sizes": []}  # fmt: skip
    passed = ["--shards", str(args.shards), "--nodes", str(args.nodes), "--copies", str(args.copies), "--model",
              args.model, "--real", str(args.real), "--noise", str(args.noise), "--data", str(args.data),
              "--cache-dir", str(args.cache_dir)]  # fmt: skip
    for size in args.sizes:
        run = subprocess.run(
            [sys.executable, __file__, "--one", str(size), *passed], capture_output=True, text=True, check=False
        )
        if run.returncode != 0:
            raise SystemExit(f"the build of {size} documents failed:\n{run.stderr[-3000:]}")
        record["sizes"].append(json.loads(run.stdout.strip().splitlines()[-1]))
        print(json.dumps(record["sizes"][-1]), flush=True)
    growth = [size["build_growth_mib"] for size in record["sizes"]]
    record["build_growth_mib_range"] = [min(growth), max(growth)]
    record["total_s"] = round(time.perf_counter() - started, 1)
    record.update(run_record(load_before))
    if str(args.out) != "-":
        write_results(args.out, record)
    print(json.dumps(record))


if __name__ == "__main__":
    main()
