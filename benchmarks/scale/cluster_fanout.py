"""The fan-out cost of a cluster index served by Ray Serve (issue 41), against one index of the same documents
served by `searchengine serve` on the same machine, in the same run:

- query p50 through the cluster's ingress (at its own port: Serve's direct ingress, serve_app.ServedAddresses) and
  through one index's server, by mode (dense, keyword, hybrid),
  each query sent to both, one after the other, which goes first alternating; each mode twice: queries whose words
  the ingress has not seen (`new`), then the same queries again (`seen`: the ingress keeps each shard's term
  statistics between writes, so their keyword and hybrid searches skip the statistics round);
- the ingress's own work a query: the time its app handled /search (its own /metrics, measured in the ingress
  replica) less the time it waited for the shards and the time it encoded the query (ClusterIndex's perf_counter
  spans, read through the ingress deployment's handle), with the encoding and the shards' wait reported apart, and
  the calls to shards a search made;
- dense p50 at the ingress's own port and through Serve's HTTP proxy (which forwards to the same ingress),
  alternating: what the proxy's hop costs;
- throughput: 1 and 8 concurrent clients searching (hybrid) for a fixed time, searches/s and the ratio, against
  the cluster and against one index.

The documents' vectors are encoded once and cached under --cache-dir, as cluster_check.py caches them (the 100,000
Wikipedia sentences' as the scale benchmarks cached them), and both builds are given them, so a larger run (e.g.
--documents 20000) builds without encoding. One index is `searchengine serve` in a process of its own (so the
clients' threads here do not share its GIL), started as serve_load.py starts it (benchmarks/serving/serve_load.py's
start_server: no access log, as the cluster's ingress keeps none); its own /metrics give its route's time outside
the search, the same FastAPI code the ingress runs.
The simulated cluster (ray.cluster_utils.Cluster, one CPU a node, workers at the driver's priority) shares this
machine's cores with it and with the clients; on 2 cores 8 clients can at best keep both cores busy, so what they
gain over one client is bounded by the idle time one client leaves. The last line on stdout is one JSON object; the
same record goes to --out.

Usage: .venv/bin/python benchmarks/scale/cluster_fanout.py [--documents 1000] [--shards 4] [--nodes 3] [--copies 2]
       [--queries 40] [--seconds 15] [--model default]
       [--cache-dir ~/.cache/searchengine-bench/blocks] [--out benchmarks/scale/results/cluster_fanout.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results
from benchmarks.scale.cluster_check import (
    CACHE,
    K,
    corpus,
    document_vectors,
    free_port,
    given_chunks,
    post,
    read_jsonl,
    served_ingress,
    vector_blocks,
)
from benchmarks.serving.serve_load import start_server

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "scale" / "results" / "cluster_fanout.json"
MODES = ("dense", "keyword", "hybrid")


def handled(url: str, mode: str) -> tuple[float, int, float]:
    """The seconds the server's app spent on POST /search requests, how many, and the seconds its /search route
    waited for the reader threads' answers to searches in `mode` (its /metrics)."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url + "/metrics", timeout=60) as response:
        text = response.read().decode()
    seconds, count, searching = 0.0, 0, 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "searchengine_search_seconds_sum" and sample.labels.get("mode") == mode:
                searching = sample.value
            if sample.labels.get("route") == "/search" and sample.labels.get("method") == "POST":
                if sample.name == "searchengine_request_seconds_sum":
                    seconds = sample.value
                elif sample.name == "searchengine_request_seconds_count":
                    count = int(sample.value)
    return seconds, count, searching


def ingress_spans() -> dict[str, dict[str, float]]:
    """ClusterIndex's spans in the ingress replica, summed by mode (ClusterIngress.spans)."""
    from ray import serve

    from searchengine.server.cluster.serve_app import INGRESS_APP

    return serve.get_deployment_handle("ingress", app_name=INGRESS_APP).spans.remote().result(timeout_s=60)


def timed(url: str, body: dict) -> float:
    started = time.perf_counter()
    post(url + "/search", body)
    return time.perf_counter() - started


def latencies(cluster: str, one: str, queries: list[str], mode: str) -> dict[str, Any]:
    """Each query in `mode` to both servers, alternating which goes first: medians, the ingress's spans and
    handling time over the cluster's searches, and one index's handling time (its route outside the search is the
    same code as the ingress's)."""
    spans_before, handled_before, one_before = ingress_spans().get(mode, {}), handled(cluster, mode), handled(one, mode)
    times: dict[str, list[float]] = {"cluster": [], "one_index": []}
    for number, query in enumerate(queries):
        body = {"queries": [query], "k": K, "mode": mode}
        for side, url in [("cluster", cluster), ("one_index", one)][:: 1 if number % 2 else -1]:
            times[side].append(timed(url, body))
    spans_after, handled_after, one_after = ingress_spans()[mode], handled(cluster, mode), handled(one, mode)
    one_handler_s, one_requests = one_after[0] - one_before[0], one_after[1] - one_before[1]
    one_searching_s = one_after[2] - one_before[2]
    spent = {key: spans_after[key] - spans_before.get(key, 0) for key in spans_after}
    handler_s, requests = handled_after[0] - handled_before[0], handled_after[1] - handled_before[1]
    searching_s = handled_after[2] - handled_before[2]
    searches = spent["searches"]
    p50 = {side: statistics.median(values) for side, values in times.items()}
    return {
        "p50_ms": {side: round(1000 * value, 2) for side, value in p50.items()},
        "p50_ratio": round(p50["cluster"] / p50["one_index"], 3),
        "ingress_ms_a_query": {
            "handler": round(1000 * handler_s / requests, 2),
            "own_work": round(1000 * (handler_s - spent["shards_s"] - spent["encode_s"]) / searches, 2),
            "own_work_less_starting_calls": round(
                1000 * (handler_s - spent["shards_s"] - spent["encode_s"] - spent["starting_s"]) / searches, 2
            ),
            "in_cluster_index": round(1000 * spent["seconds"] / searches, 2),
            "outside_cluster_index": round(1000 * (handler_s - spent["seconds"]) / searches, 2),
            "route_outside_reader": round(1000 * (handler_s - searching_s) / searches, 2),
            "reader_outside_cluster_index": round(1000 * (searching_s - spent["seconds"]) / searches, 2),
            "encode": round(1000 * spent["encode_s"] / searches, 2),
            "starting_shard_calls": round(1000 * spent["starting_s"] / searches, 2),
            "waiting_for_shards": round(1000 * spent["shards_s"] / searches, 2),
            "outside_handler": round(1000 * statistics.mean(times["cluster"]) - 1000 * handler_s / requests, 2),
        },
        "one_index_ms_a_query": {
            "handler": round(1000 * one_handler_s / one_requests, 2),
            "route_outside_reader": round(1000 * (one_handler_s - one_searching_s) / one_requests, 2),
            "outside_handler": round(1000 * statistics.mean(times["one_index"]) - 1000 * one_handler_s / one_requests, 2),
        },
        "calls_a_search": round(spent["calls"] / searches, 2),
        "statistics_rounds_a_search": round(spent["statistics_rounds"] / searches, 2),
        "searches": searches,
    }


def ingress_or_proxy(ingress: str, proxy: str, queries: list[str]) -> dict[str, Any]:
    """Dense queries to the ingress itself (Serve's direct ingress) and through Serve's HTTP proxy to the same
    ingress, alternating which goes first: medians, and the proxy's over the ingress's."""
    times: dict[str, list[float]] = {"ingress": [], "proxy": []}
    for number, query in enumerate(queries):
        body = {"queries": [query], "k": K, "mode": "dense"}
        for side, where in [("ingress", ingress), ("proxy", proxy)][:: 1 if number % 2 else -1]:
            times[side].append(timed(where, body))
    p50 = {side: statistics.median(values) for side, values in times.items()}
    return {
        "p50_ms": {side: round(1000 * value, 2) for side, value in p50.items()},
        "proxy_over_ingress": round(p50["proxy"] / p50["ingress"], 3),
    }


def throughput(url: str, queries: list[str], clients: int, seconds: float) -> dict[str, Any]:
    """`clients` threads each sending one hybrid query after another for `seconds`: searches a second."""
    stop = threading.Event()
    done = [0] * clients
    failed = [0] * clients

    def client(number: int) -> None:
        turn = number
        while not stop.is_set():
            body = {"queries": [queries[turn % len(queries)]], "k": K, "mode": "hybrid"}
            turn += clients
            try:
                post(url + "/search", body, timeout=60)
                done[number] += 1
            except (urllib.error.URLError, OSError):
                failed[number] += 1

    threads = [threading.Thread(target=client, args=(number,)) for number in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    return {"searches_per_s": round(sum(done) / elapsed, 2), "searches": sum(done), "failed": sum(failed)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--copies", type=int, default=2)
    parser.add_argument("--queries", type=int, default=40, help="Queries timed in each mode and pass.")
    parser.add_argument("--seconds", type=float, default=15.0, help="Seconds of each throughput measure.")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--model", default="default")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache-dir", type=Path, default=CACHE, help="Where the documents' vectors are cached.")
    parser.add_argument("--out", type=Path, default=OUT, help="Where the JSON record goes ('-': nowhere).")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    started = time.perf_counter()

    import ray
    from searchengine.indexer.commit.index_directory import IndexDirectory

    from benchmarks.scale.simulated_nodes import simulated_cluster
    from searchengine.cluster import ClusterBuildSettings, build_cluster
    from searchengine.encoding.encoder import Encoder
    from searchengine.engine.indexing import IndexSettings, build_index
    from searchengine.server.cluster.serve_app import serve_cluster

    documents, _, _ = corpus(args.documents, args.data)
    options = {"precision": "fp32"}
    encoder = Encoder(args.model, **options)
    vectors, encoding = document_vectors(documents, encoder, args.data, args.cache_dir)
    every_query = [row["text"] for row in read_jsonl(args.data / "retrieval" / "nfcorpus" / "queries.jsonl")]
    groups = {mode: every_query[n * args.queries : (n + 1) * args.queries] for n, mode in enumerate(MODES)}
    warm = [document.text[:100] for document in documents[:6]]
    names = ["head", *(f"n{number}" for number in range(1, args.nodes))]
    record: dict[str, Any] = {"documents": len(documents), "shards": args.shards, "nodes": args.nodes,
                              "copies": args.copies, "queries": args.queries, "clients": args.clients,
                              "seconds": args.seconds, "cpus": os.cpu_count(),
                              "encoding": {**encoding, "left_out_of_builds": True}}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="cluster-fanout-") as scratch:
        folder = Path(scratch)
        cluster, _ = simulated_cluster(names, {"worker_niceness": 0})
        one_server = None
        try:
            settings = ClusterBuildSettings(
                shards=args.shards, copies=args.copies, model=args.model, local_root=str(folder / "nodes"),
                encoder_options=options, nodes=names, workers=1,
            )  # fmt: skip
            index, _ = build_cluster(folder / "cluster.json", documents, settings, vectors=vector_blocks(vectors))
            for states in index.copies:  # the build's actors go: the Serve deployments open the copies
                for state in states:
                    ray.kill(state.handle)
            build_index(
                IndexDirectory(folder / "one"), given_chunks(documents, vectors), encoder,
                IndexSettings(index_type="Flat", passages=False), total=len(documents),
            )  # fmt: skip
            served = serve_cluster(folder / "cluster.json", port=free_port(), heal_every_s=3600.0)
            url = served_ingress(served)
            one_server, one = start_server(folder / "one", folder / "one-server.log", ["--precision", "fp32"])
            for mode in MODES:  # warm both, with words no timed query is built from
                for query in warm:
                    timed(url, {"queries": [query], "k": K, "mode": mode})
                    timed(one, {"queries": [query], "k": K, "mode": mode})
            record["load_at_start"] = os.getloadavg()[0]
            record["latency"] = {
                mode: {run: latencies(url, one, groups[mode], mode) for run in ("new", "seen")} for mode in MODES
            }
            record["ingress_or_proxy"] = ingress_or_proxy(url, served.proxy_url, groups["dense"])
            print(json.dumps({"latency": record["latency"], "ingress_or_proxy": record["ingress_or_proxy"]}), flush=True)
            every = [query for mode in MODES for query in groups[mode]]
            record["throughput"] = {}
            for side, where in (("cluster", url), ("one_index", one)):
                one_client = throughput(where, every, 1, args.seconds)
                many = throughput(where, every, args.clients, args.seconds)
                record["throughput"][side] = {
                    "1_client": one_client,
                    f"{args.clients}_clients": many,
                    "ratio": round(many["searches_per_s"] / one_client["searches_per_s"], 3),
                }
            record["load_at_end"] = os.getloadavg()[0]
        finally:
            if one_server is not None:
                one_server.terminate()
                one_server.wait(timeout=30)
            # No serve.shutdown(): stopping the Ray cluster stops Serve's processes with it, without Serve's graceful
            # wait (as the teardown of tests/searchengine/server/cluster/test_ray_serve.py does).
            ray.shutdown()
            cluster.shutdown()
    record["total_s"] = round(time.perf_counter() - started, 1)
    record.update(run_record(load_before))
    if str(args.out) != "-":
        write_results(args.out, record)
    print(json.dumps(record))


if __name__ == "__main__":
    main()
