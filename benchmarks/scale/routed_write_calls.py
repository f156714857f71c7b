"""What a routed write's calls cost (issue 41's target: a routed add of 10 documents within 2x the same add to one
local index): a cluster index is built on a simulated 3-node Ray cluster and its copies served as Ray Serve
deployments; this process opens the cluster (ClusterIndex over ServeCalls, as the ingress does) and one local index
of the same documents, and adds 10 new documents at a time, in turn, to the cluster with its copies' `apply` calls
by value (over Serve's gRPC channel, ServeCalls' default), to the cluster with every call by reference (Ray actor
tasks, `ServeCalls(by_value=False)`), and to the one index; which goes first alternates. No HTTP: the ingress's own
route is the same for every variant. Also the median time of one `placement.live_nodes()` (Ray's node list), which
a write waiting for its copies reads to see whether a copy's node was lost.

Usage: .venv/bin/python benchmarks/scale/routed_write_calls.py [--documents 1000] [--adds 20] [--shards 4]
       [--copies 2] [--out benchmarks/scale/results/routed_write_calls.json]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results
from benchmarks.scale.cluster_check import corpus

OUT = Path(__file__).resolve().parent / "results" / "routed_write_calls.json"
WARM_ADDS = 3


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--adds", type=int, default=20, help="Timed adds of 10 documents per variant (median).")
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--copies", type=int, default=2)
    parser.add_argument("--model", default="default")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    load_before = os.getloadavg()

    import ray
    from ray import serve
    from searchengine.indexer.tables.documents import Document

    from benchmarks.scale.simulated_nodes import simulated_cluster
    from searchengine.cluster import ClusterBuildSettings, build_cluster
    from searchengine.cluster.cluster_index import ClusterIndex
    from searchengine.cluster.placement import live_nodes
    from searchengine.engine.search_engine import SearchEngine
    from searchengine.server.cluster.copy_deployments import SERVE_LOGGING, ServeCalls, start_copy_deployment

    documents, queries, _ = corpus(args.documents, args.data)
    texts = list(queries.values())

    def batch(tag: str, turn: int) -> list[Document]:
        return [
            Document(f"an added document {n} about {texts[(turn + n) % len(texts)]}", external_id=f"{tag}-{turn}-{n}")
            for n in range(10)
        ]

    record: dict[str, Any] = {"documents": len(documents), "shards": args.shards, "copies": args.copies,
                              "nodes": 3, "adds": args.adds}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="routed-write-calls-") as scratch:
        folder = Path(scratch)
        cluster, _ = simulated_cluster(["head", "a", "b"], {"worker_niceness": 0})
        try:
            settings = ClusterBuildSettings(
                shards=args.shards, copies=args.copies, model=args.model, local_root=str(folder / "nodes")
            )
            build_cluster(folder / "cluster.json", documents, settings)
            serve.start(proxy_location="HeadOnly", logging_config=SERVE_LOGGING)
            by_value, by_reference = ServeCalls(), ServeCalls(by_value=False)
            index = ClusterIndex.open(folder / "cluster.json", calls=by_value, starter=start_copy_deployment)
            one = SearchEngine.build(documents, folder / "one", encoder=index.encoder)
            variants = {"cluster_by_value": by_value, "cluster_by_reference": by_reference, "one_index": None}
            times: dict[str, list[float]] = {name: [] for name in variants}
            for turn in range(WARM_ADDS + args.adds):
                order = list(variants)[:: 1 if turn % 2 else -1]
                for name in order:
                    documents_added = batch(name, turn)
                    started = time.perf_counter()
                    if variants[name] is None:
                        one.add(documents_added)
                    else:
                        index.calls = variants[name]
                        index.add(documents_added)
                    if turn >= WARM_ADDS:
                        times[name].append(time.perf_counter() - started)
            node_reads = []
            for _ in range(50):
                started = time.perf_counter()
                live_nodes()
                node_reads.append(time.perf_counter() - started)
            serve.shutdown()
        finally:
            ray.shutdown()
            cluster.shutdown()
    median_ms = {name: round(1000 * statistics.median(values), 1) for name, values in times.items()}
    record["add10_ms"] = median_ms
    record["by_value_over_one_index"] = round(median_ms["cluster_by_value"] / median_ms["one_index"], 3)
    record["by_reference_over_one_index"] = round(median_ms["cluster_by_reference"] / median_ms["one_index"], 3)
    record["by_value_over_by_reference"] = round(median_ms["cluster_by_value"] / median_ms["cluster_by_reference"], 3)
    record["live_nodes_ms"] = round(1000 * statistics.median(node_reads), 3)
    record.update(run_record(load_before))
    write_results(args.out, record)
    print(record)


if __name__ == "__main__":
    main()
