"""What a Ray Serve setting does to the cluster's fan-out cost (issue 41): one small cluster index and one index of
the same documents are built once; then, for each variant (a set of environment variables the simulated cluster's
processes start with), a fresh simulated cluster (ray.cluster_utils.Cluster, the same named nodes, so the copies
are found again in their folders) serves it with `serve_cluster`, and a hybrid query and an add of 10 documents are
timed through the cluster's HTTP ingress and through one index's server, alternately, in the same run. Each
variant's line gives the medians and their ratios (cluster over one index), so variants compare as ratios even on a
loaded machine.

Usage: .venv/bin/python benchmarks/scale/cluster_overhead.py [--documents 400] [--queries 60] [--adds 5]
       [--variant NAME=VAR=VALUE,VAR=VALUE ...]  (access_log=1: Serve's access log on) [--out benchmarks/scale/results/cluster_overhead.json]
"""

from __future__ import annotations

import argparse
import json
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
from benchmarks.scale.cluster_check import K, corpus, free_port, one_index_server, post, served_ingress

OUT = Path(__file__).resolve().parent / "results" / "cluster_overhead.json"


def timed(url: str, path: str, body: dict) -> float:
    started = time.perf_counter()
    post(url + path, body)
    return time.perf_counter() - started


def measure(url: str, one: str, queries: list[str], adds: int, tag: str) -> dict[str, Any]:
    """Hybrid queries and 10-document adds, cluster and one index alternately (which goes first alternates too)."""
    times: dict[str, list[float]] = {"cluster": [], "one": []}
    for number, query in enumerate(queries[:5] * 2):  # warm both
        timed(url if number % 2 else one, "/search", {"queries": [query], "k": K, "mode": "hybrid"})
    for number, query in enumerate(queries):
        pair = [("cluster", url), ("one", one)][:: 1 if number % 2 else -1]
        for side, where in pair:
            times[side].append(timed(where, "/search", {"queries": [query], "k": K, "mode": "hybrid"}))
    writes: dict[str, list[float]] = {"cluster": [], "one": []}
    for turn in range(adds):
        batch = [{"id": f"{tag}-{turn}-{n}", "text": f"an added document {n} about {queries[(turn + n) % len(queries)]}"}
                 for n in range(10)]  # fmt: skip
        pair = [("cluster", url), ("one", one)][:: 1 if turn % 2 else -1]
        for side, where in pair:
            writes[side].append(timed(where, "/documents", {"documents": batch, "id_field": "id"}))
    query_ms = {side: 1000 * statistics.median(values) for side, values in times.items()}
    add_s = {side: statistics.median(values) for side, values in writes.items()}
    return {
        "query_p50_ms": {side: round(value, 2) for side, value in query_ms.items()},
        "query_ratio": round(query_ms["cluster"] / query_ms["one"], 3),
        "add10_s": {side: round(value, 4) for side, value in add_s.items()},
        "add_ratio": round(add_s["cluster"] / add_s["one"], 3),
    }


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    """NAME=VAR=VALUE,... : environment variables, except `access_log=1`, serve_cluster's own option."""
    name, _, settings = text.partition("=")
    env = dict(item.split("=", 1) for item in settings.split(",") if item)
    return name, env


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=400)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--copies", type=int, default=2)
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--adds", type=int, default=5)
    parser.add_argument("--model", default="default")
    parser.add_argument("--variant", action="append", default=[], help="NAME=VAR=VALUE,VAR=VALUE (repeatable).")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    variants = [parse_variant(text) for text in args.variant] or [("default", {})]
    load_before = os.getloadavg()

    import ray
    from ray import serve
    from searchengine.indexer.commit.index_directory import IndexDirectory

    from benchmarks.scale.simulated_nodes import simulated_cluster
    from searchengine.cluster import ClusterBuildSettings, build_cluster
    from searchengine.encoding.encoder import Encoder
    from searchengine.engine.indexing import IndexSettings, build_index, document_chunks
    from searchengine.server.cluster.serve_app import serve_cluster

    documents, queries, _ = corpus(args.documents, args.data)
    texts = list(queries.values())[: args.queries]
    options = {"precision": "fp32"}
    names = ["head", *(f"n{number}" for number in range(1, args.nodes))]
    record: dict[str, Any] = {"documents": len(documents), "shards": args.shards, "nodes": args.nodes,
                              "copies": args.copies, "queries": len(texts), "adds": args.adds, "variants": {}}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="cluster-overhead-") as scratch:
        folder = Path(scratch)
        cluster, _ = simulated_cluster(names)
        settings = ClusterBuildSettings(
            shards=args.shards, copies=args.copies, model=args.model, local_root=str(folder / "nodes"),
            encoder_options=options, nodes=names,
        )  # fmt: skip
        index, _ = build_cluster(folder / "cluster.json", documents, settings)
        ray.shutdown()
        cluster.shutdown()
        encoder = Encoder(args.model, **options)
        build_index(
            IndexDirectory(folder / "one"), document_chunks(documents), encoder,
            IndexSettings(index_type="Flat", passages=False), total=len(documents),
        )  # fmt: skip
        with one_index_server(folder / "one", encoder) as one:
            for name, env in variants:
                access_log = env.get("access_log") == "1"
                env = {key: value for key, value in env.items() if key != "access_log"}
                saved = {key: os.environ.get(key) for key in env}
                os.environ.update(env)
                clock = time.perf_counter()
                cluster, _ = simulated_cluster(names)
                try:
                    url = served_ingress(
                        serve_cluster(folder / "cluster.json", port=free_port(), heal_every_s=3600.0, access_log=access_log)
                    )
                    started_s = time.perf_counter() - clock
                    result = {
                        "env": env,
                        "access_log": access_log,
                        "start_s": round(started_s, 1),
                        "load": os.getloadavg()[0],
                    }
                    try:
                        result.update(measure(url, one, texts, args.adds, name))
                    except OSError as error:  # urllib's errors: a setting that breaks a route is noted, not fatal
                        result["failed"] = f"{type(error).__name__}: {error}"
                    record["variants"][name] = result
                    print(json.dumps({name: result}), flush=True)
                finally:
                    serve.shutdown()
                    ray.shutdown()
                    cluster.shutdown()
                    for key, value in saved.items():
                        if value is None:
                            os.environ.pop(key, None)
                        else:
                            os.environ[key] = value
    record.update(run_record(load_before))
    if str(args.out) != "-":
        write_results(args.out, record)
    print(json.dumps(record))


if __name__ == "__main__":
    main()
