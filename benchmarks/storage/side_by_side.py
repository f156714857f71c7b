"""Issue 42's side-by-side: this engine's compressed index, LanceDB's IVF-PQ with refine, and FAISS Flat (the exact
reference) on the same vectors and queries, searched in one run: memory, recall@10 and per-query p50/p99.

The vectors and queries are benchmarks/storage/memory_check.py's (real Wikipedia vectors and noisy copies, STS-B
queries), made again here by its own `corpus`; ours is the index a `memory_check.py --keep DIR` run built and
measured (checked to hold the same queries), searched again here through memory_check's measuring process (the
engine's dense path less encoding, the hits' rows read from the store) without its adds. That index holds the
30 documents memory_check's adds put in it too, which recall (against exact search over the vectors alone) counts
against it. Each system runs in a process of its own, one query at a time, FAISS on one thread:
  faiss_flat  IndexFlatIP over every vector in memory (this script, `--flat`): exact, recall 1 by definition
  lancedb     benchmarks/storage/lancedb_peer.py in --peer-python's environment (its own dependencies): the table
              and its IVF-PQ index written to --work (built once, kept), then searched in a fresh process at each
              NPROBES:REFINE_FACTOR of --lance-settings; it selects the ids only
  ours        memory_check.py --measure DIR --add-runs 0
Memory: the process's VmRSS after its queries (vm_rss_mb), less what it held after its imports (index_mb). For ours,
resident_mb also leaves out the pages of its memory-mapped files (codes and originals: page cache, reported apart
as mapped_cache_mb), as memory_check reports it.

Usage (after `memory_check.py --vectors 1000000 --memory-budget 300MB --keep /tmp/mc1m`):
  .venv/bin/python benchmarks/storage/side_by_side.py --index /tmp/mc1m --work /tmp/side \
      --out benchmarks/storage/results/side_by_side_1m.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT))  # the repository root, for `benchmarks.*`

from benchmarks.datasets.data_folder import DATA  # noqa: E402
from benchmarks.harness.machine import command_line, machine_record  # noqa: E402
from benchmarks.harness.results import write_results  # noqa: E402

K = 10
PEER_PYTHON = ROOT.parent / "peers-venv" / "bin" / "python"
DEFAULT_CACHE = Path.home() / ".cache" / "searchengine-bench" / "blocks"


def vm_mib(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def flat_process(vectors_path: Path, queries_path: Path, warmup: int) -> None:
    """FAISS Flat's side, in its own process: one JSON line with the seconds and ids of each query and the memory."""
    import faiss

    faiss.omp_set_num_threads(1)
    baseline = vm_mib("VmRSS")
    queries = np.load(queries_path)
    flat = faiss.IndexFlatIP(queries.shape[1])
    flat.add(np.load(vectors_path))
    for query in queries[:warmup]:
        flat.search(query[None], K)
    seconds, ids = [], []
    for query in queries:
        begin = time.perf_counter()
        ids.append(flat.search(query[None], K)[1][0].tolist())
        seconds.append(time.perf_counter() - begin)
    print(json.dumps({"seconds": seconds, "ids": ids, "baseline_mb": baseline, "vm_rss_mb": vm_mib("VmRSS")}))


def summary(seconds: list[float], ids: list[list[int]], truth: np.ndarray) -> dict:
    recall = float(np.mean([len(set(found) & set(map(int, row))) / K for found, row in zip(ids, truth, strict=True)]))
    return {"recall_at_10": round(recall, 4), "p50_ms": round(statistics.median(seconds) * 1000, 3),
            "p99_ms": round(float(np.percentile(seconds, 99)) * 1000, 3)}


def lines(command: list[str]) -> list[dict]:
    """The JSON lines a measuring process prints (its other output is left out)."""
    answer = subprocess.run(command, check=True, capture_output=True, text=True)
    return [json.loads(line) for line in answer.stdout.splitlines() if line.startswith("{")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True, help="a memory_check.py --keep folder")
    parser.add_argument("--work", type=Path, required=True, help="where the vectors and LanceDB's table are written")
    parser.add_argument("--peer-python", type=Path, default=PEER_PYTHON)
    parser.add_argument("--lance-partitions", type=int, default=1024)
    parser.add_argument("--lance-sub-vectors", type=int, default=48, help="bytes a vector (8-bit codes)")
    parser.add_argument("--lance-settings", nargs="+", default=["32:10", "256:30", "512:30"])
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--model", help="the model (default: the bundled default)")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--flat", nargs=2, type=Path, help=argparse.SUPPRESS)  # FAISS Flat's process
    args = parser.parse_args()
    if args.flat:
        flat_process(*args.flat, args.warmup)
        return
    built = json.loads((args.index / "build.json").read_text(encoding="utf-8"))
    args.work.mkdir(parents=True, exist_ok=True)
    vectors_path, queries_path = args.work / "vectors.npy", args.work / "queries.npy"
    if not vectors_path.exists():
        from benchmarks.storage.memory_check import corpus
        from searchengine import Encoder

        made = argparse.Namespace(data=args.data, cache_dir=args.cache_dir, real=built["real_vectors"],
                                  vectors=built["vectors"], noise=built.get("noise", 0.02), queries=built["queries"])
        _, _, _, queries = corpus(made, Encoder(args.model) if args.model else Encoder(), vectors_path)
        np.save(queries_path, queries)
    queries = np.load(queries_path)
    if not np.allclose(queries, np.load(args.index / "queries.npy")):
        raise SystemExit(f"{args.index} was built for other queries than {queries_path}")
    truth = np.load(args.index / "truth.npy") - built["first_id"]  # row numbers, as the peers' ids
    report = {"machine": machine_record(), "command": command_line(), "vectors": built["vectors"],
              "real_vectors": built["real_vectors"], "queries": len(queries), "systems": {}}

    flat = lines([sys.executable, __file__, "--index", str(args.index), "--work", str(args.work),
                  "--warmup", str(args.warmup), "--flat", str(vectors_path), str(queries_path)])[0]
    report["systems"]["faiss_flat"] = {**summary(flat["seconds"], flat["ids"], truth),
                                       "vm_rss_mb": flat["vm_rss_mb"],
                                       "index_mb": round(flat["vm_rss_mb"] - flat["baseline_mb"], 1)}
    print(json.dumps({"faiss_flat": report["systems"]["faiss_flat"]}), flush=True)

    table = args.work / "lance"
    peer = [str(args.peer_python), str(Path(__file__).with_name("lancedb_peer.py"))]
    if not (table / "bench.lance").exists():
        started = time.perf_counter()
        lance_build = lines([*peer, "build", "--table-dir", str(table), "--vectors", str(vectors_path),
                             "--partitions", str(args.lance_partitions), "--sub-vectors", str(args.lance_sub_vectors)])
        (args.work / "lance_build.json").write_text(json.dumps(lance_build[0]), encoding="utf-8")
        print(f"LanceDB built in {time.perf_counter() - started:.0f} s", flush=True)
    lance = {"build": json.loads((args.work / "lance_build.json").read_text(encoding="utf-8")), "settings": []}
    for run in lines([*peer, "search", "--table-dir", str(table), "--queries", str(queries_path),
                      "--warmup", str(args.warmup), "--settings", *args.lance_settings]):
        lance["settings"].append({"nprobes": run["nprobes"], "refine_factor": run["refine_factor"],
                                  **summary(run["seconds"], run["ids"], truth), "vm_rss_mb": run["vm_rss_mb"],
                                  "rss_anon_mb": run["rss_anon_mb"],
                                  "index_mb": round(run["vm_rss_mb"] - run["baseline_mb"], 1)})
        print(json.dumps({"lancedb": lance["settings"][-1]}), flush=True)
    report["systems"]["lancedb"] = lance

    ours = lines([sys.executable, str(Path(__file__).with_name("memory_check.py")), "--measure", str(args.index),
                  "--warmup", str(args.warmup), "--add-runs", "0"])[-1]
    report["systems"]["ours"] = {"index_type": built["index_type"], **ours}
    print(json.dumps({"ours": report["systems"]["ours"]}), flush=True)
    if args.out:
        write_results(args.out, report)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
