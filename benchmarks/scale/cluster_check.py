"""The quick check of a cluster index (issue 41), the whole story small: a simulated multi-node Ray cluster
(ray.cluster_utils.Cluster, one CPU per node, each node named by its own `searchengine_node_<name>` resource and
keeping its shard copies in its own folder), a build, Ray Serve, searches in every mode against one index of the
same documents (served by `searchengine serve`'s app in this process, over HTTP too), routed writes, and a node
removed under search and write load (benchmarks/scale/node_loss.py: --clients searching threads and one writer
through the HTTP ingress for --load-seconds, the node removed at a seeded random point; Ray declares a lost node
dead after about 3 s here); then, with one copy per shard, a node lost under the same load (answers flagged
partial) and brought back (answers whole again).

The documents are real: NFCorpus's corpus (its judged test queries give nDCG@10), then ArguAna's, then Wikipedia
sentences, up to --documents; each keeps its own id, which picks its shard. Their vectors are encoded once and
cached under --cache-dir (the Wikipedia sentences' as the scale benchmarks cached them), and both builds, the
cluster's (`build_cluster(..., vectors=)`) and the one index's, are given them: encoding is left out of both builds
(the record's `encoding` says what was encoded now, if anything). Every simulated node shares this machine's cores,
so the latencies compare the cluster with one index on the same machine in the same run: each query (and each add)
goes to both, one after the other, which goes first alternating. The simulated nodes run their workers at the
driver's priority (Ray's worker_niceness 0; Ray's default, 15, lets every other process on a shared machine, the
one index's server among them, go first).

The last line on stdout is one JSON object: same_top10 (exact dense search: the fraction of queries whose top 10
equals one index's, ids and scores within 1e-5), keyword_ndcg_diff and hybrid_ndcg_diff (absolute, against one
index), p50_ratio (a hybrid query's median time through the cluster's ingress over one index's server; add10_ratio
the same for an add of 10 documents), failed_searches (during the node's loss, two copies), acknowledged_writes_lost
(each acknowledged write looked for by its own word afterwards), partial_flagged (one copy per shard, its node lost
under load: answers flagged partial, none failed), partial_recovered (the node back: every answer whole and the same
as before the loss) and driver_rows_written (0: each copy wrote its own rows); node_loss and one_copy hold each
load's searches, failed and partial ones, full_again_s (how long until full answers were back), p50/p99 before,
during and after, and the writes acknowledged, refused and lost, with the acknowledged ones' p50/p99 before, during
and after (write_latency_*; write_latency_during_loss: node_loss's during); with each phase's seconds
(cluster_start_s, cluster_build_s, one_index_build_s, serve_start_s, compare_s, node_loss_s, one_copy_loss_s). The
same record goes to --out.

Usage: .venv/bin/python benchmarks/scale/cluster_check.py --documents 20000 --shards 4 --nodes 3 --copies 2
       [--model default] [--queries 200] [--latency-queries 100] [--adds 20] [--load-seconds 60] [--clients 8]
       [--seed 0] [--one-copy-documents 2000] [--cache-dir ~/.cache/searchengine-bench/blocks]
       [--out benchmarks/scale/results/cluster_check.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results
from benchmarks.scale.node_loss import node_away_and_back, node_loss
from benchmarks.scale.search_speed import BLOCK, block_path, cached_embeddings, read_wiki

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "scale" / "results" / "cluster_check.json"
CACHE = Path.home() / ".cache" / "searchengine-bench" / "blocks"
K = 10
ADD_WARM_UP = 3
"""Untimed adds of 10 sent to both first: the first writes of each open its writers and warm its write path."""


def read_jsonl(path: Path) -> Iterator[dict]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def named_documents(count: int, data: Path) -> list[Any]:
    """Up to `count` documents of NFCorpus's corpus, then ArguAna's, each with its own id."""
    from searchengine.indexer.tables.documents import Document

    documents: list[Document] = []
    for name in ("nfcorpus", "arguana"):
        for row in read_jsonl(data / "retrieval" / name / "corpus.jsonl"):
            if len(documents) == count:
                break
            text = f"{row.get('title', '')}. {row['text']}".strip(". ") if row.get("title") else row["text"]
            documents.append(Document(text, metadata={"source": name}, external_id=f"{name}:{row['_id']}"))
    return documents


def corpus(count: int, data: Path) -> tuple[list[Any], dict[str, str], dict[str, dict[str, int]]]:
    """`count` documents (NFCorpus, then ArguAna, then Wikipedia sentences), NFCorpus's judged test queries whose
    judged documents are among them, and their judgements."""
    from searchengine.indexer.tables.documents import Document

    documents = named_documents(count, data)
    if len(documents) < count:
        with gzip.open(data / "unsup" / "wiki_sentences.txt.gz", "rt", encoding="utf-8") as handle:
            for number, line in enumerate(islice(handle, count - len(documents))):
                documents.append(Document(line.strip(), metadata={"source": "wiki"}, external_id=f"wiki:{number}"))
    held = {document.external_id for document in documents}
    qrels: dict[str, dict[str, int]] = {}
    with (data / "retrieval" / "nfcorpus" / "qrels_test.tsv").open(encoding="utf-8") as handle:
        next(handle)
        for line in handle:
            query, document, grade = line.rstrip("\n").split("\t")
            if f"nfcorpus:{document}" in held:
                qrels.setdefault(query, {})[f"nfcorpus:{document}"] = int(grade)
    queries = {
        row["_id"]: row["text"]
        for row in read_jsonl(data / "retrieval" / "nfcorpus" / "queries.jsonl")
        if any(grade > 0 for grade in qrels.get(row["_id"], {}).values())
    }
    return documents, queries, qrels


def document_vectors(
    documents: list[Any], encoder: Any, data: Path, cache: Path  # noqa: ANN401
) -> tuple[np.ndarray, dict]:
    """Every document's vector, encoded once and cached as .npy blocks under `cache` (search_speed's
    cached_embeddings), so both builds are given them and neither embeds: NFCorpus's and ArguAna's documents under a
    tag of their own, the Wikipedia sentences as the scale benchmarks cached them (whole blocks of BLOCK read, the
    rows needed kept; NFCorpus's and ArguAna's too, when their whole blocks are cached already). Returns the vectors
    in the documents' order and what was encoded now."""
    named = [document.text for document in documents if not document.external_id.startswith("wiki:")]
    wiki = [document.text for document in documents[len(named) :]]
    tag = f"cluster-check-{encoder.precision}"
    whole = [document.text for document in named_documents(BLOCK * -(-len(named) // BLOCK), data)]
    cached = all(
        block_path(encoder, whole[start : start + BLOCK], start, cache, tag).is_file()
        for start in range(0, len(whole), BLOCK)
    )
    if cached and whole[: len(named)] == named:  # e.g. the first 1,000 of the first cached 5,000
        named_vectors, encoding = cached_embeddings(encoder, whole, cache, tag)
        named_vectors = named_vectors[: len(named)]
    else:
        named_vectors, encoding = cached_embeddings(encoder, named, cache, tag)
    blocks = [named_vectors]
    if wiki:
        sentences = read_wiki(data, BLOCK * -(-len(wiki) // BLOCK))
        if sentences[: len(wiki)] != wiki:
            raise SystemExit("the Wikipedia sentences read differ from the documents': cannot use their cached vectors")
        wiki_vectors, wiki_encoding = cached_embeddings(encoder, sentences, cache, "wiki")
        blocks.append(wiki_vectors[: len(wiki)])
        encoding = {key: encoding[key] + wiki_encoding[key] for key in encoding}
    return np.ascontiguousarray(np.concatenate(blocks), dtype=np.float32), encoding


def post(url: str, body: Any, method: str = "POST", timeout: float = 120.0) -> Any:  # noqa: ANN401
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data, {"Content-Type": "application/json"}, method=method)
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def search(url: str, queries: list[str], mode: str, k: int = K) -> list[dict]:
    results = []
    for start in range(0, len(queries), 32):
        results += post(url + "/search", {"queries": queries[start : start + 32], "k": k, "mode": mode})["results"]
    return results


def same_top(mine: dict, theirs: dict) -> bool:
    """The same documents with the same scores rank by rank (within 1e-5); tied scores may swap places, and documents
    tied with the last hit may differ (two documents of the same text, one of them cut at rank k: each index keeps
    one of them)."""
    if len(mine["hits"]) != len(theirs["hits"]):
        return False
    if not all(abs(a["score"] - b["score"]) <= 1e-5 for a, b in zip(mine["hits"], theirs["hits"])):
        return False
    last = min((hit["score"] for hit in mine["hits"]), default=0.0)
    above = [{h["external_id"] for h in hits["hits"] if h["score"] > last + 1e-5} for hits in (mine, theirs)]
    return above[0] == above[1]


def mean_ndcg(results: list[dict], query_ids: list[str], qrels: dict[str, dict[str, int]]) -> float:
    from searchengine.evaluation.retrieval import query_metrics

    return statistics.mean(
        query_metrics([hit["external_id"] for hit in result["hits"]], qrels[query])["ndcg@10"]
        for query, result in zip(query_ids, results)
    )


def timed(url: str, path: str, body: dict) -> float:
    started = time.perf_counter()
    post(url + path, body)
    return time.perf_counter() - started


def alternating_medians(urls: tuple[str, str], path: str, bodies: list[dict]) -> tuple[float, float]:
    """The median seconds of each body sent to both servers, one after the other, which goes first alternating, so
    a change in the machine's load meets both alike."""
    times: tuple[list[float], list[float]] = ([], [])
    for number, body in enumerate(bodies):
        for side in (0, 1) if number % 2 else (1, 0):
            times[side].append(timed(urls[side], path, body))
    return statistics.median(times[0]), statistics.median(times[1])


@contextmanager
def one_index_server(path: Path, encoder: Any) -> Iterator[str]:  # noqa: ANN401
    """`searchengine serve`'s app over the one index, on a free 127.0.0.1 port in a thread of this process."""
    import uvicorn

    from searchengine.server.app import create_app
    from searchengine.server.listener import listening_socket
    from searchengine.server.served_index import ServedIndex

    index = ServedIndex(path, encoder=encoder, readers=2)
    listener = listening_socket("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(create_app(index), log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        listener.close()
        index.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def served_ingress(served: Any) -> str:  # noqa: ANN401 (serve_app.ServedAddresses)
    """The address of a served cluster's ingress itself (Serve's direct ingress), which these benchmarks time."""
    if served.ingress_url is None:
        raise RuntimeError("Serve lists no direct ingress: a Serve controller started earlier runs on this Ray cluster")
    return served.ingress_url


def given_chunks(documents: list[Any], vectors: np.ndarray) -> Iterator[Any]:
    """The documents in build chunks, each with its vectors (so the one index's build embeds nothing)."""
    from searchengine.engine.indexing import CHUNK, Chunk

    for start in range(0, len(documents), CHUNK):
        yield Chunk(documents[start : start + CHUNK], vectors=vectors[start : start + CHUNK])


def vector_blocks(vectors: np.ndarray) -> list[np.ndarray]:
    """The vectors as the blocks a cluster build is given (BLOCK rows each)."""
    return [vectors[start : start + BLOCK] for start in range(0, len(vectors), BLOCK)]


def one_copy_loss(
    cluster: Any, folder: Path, documents: list[Any], vectors: np.ndarray, args: argparse.Namespace,  # noqa: ANN401
    options: dict, queries: list[str],
) -> dict:  # fmt: skip
    """R = 1 on nodes "head" and a spare one, served: the spare lost under load (answers partial and flagged, none
    failing), then back under the same name (the ingress's heal starts its copies from its own folder); then every
    answer is whole again and the same as before the loss."""
    import ray

    from searchengine.cluster import ClusterBuildSettings, build_cluster
    from searchengine.server.cluster.serve_app import serve_cluster

    resources = {"searchengine_node_spare": 1}
    spare = cluster.add_node(num_cpus=1, resources=resources)
    cluster.wait_for_nodes()
    settings = ClusterBuildSettings(
        shards=args.shards, copies=1, model=args.model, local_root=str(folder / "nodes"), name="one-copy",
        encoder_options=options, nodes=["head", "spare"],
    )  # fmt: skip
    index, _ = build_cluster(folder / "one-copy.json", documents, settings, vectors=vector_blocks(vectors))
    for states in index.copies:  # the build's actors go: the Serve deployments open the copies
        for state in states:
            ray.kill(state.handle)
    url = served_ingress(serve_cluster(folder / "one-copy.json", port=free_port(), heal_every_s=2.0))
    checked = queries[:20]
    whole = search(url, checked, "dense")
    load, _ = node_away_and_back(url, cluster, spare, resources, queries, args.load_seconds, args.seed + 1,
                                 args.clients)  # fmt: skip
    back = search(url, checked, "dense")
    # No serve.shutdown(): main stops the Ray cluster next, and Serve's processes with it (as the teardown of
    # tests/searchengine/server/cluster/test_ray_serve.py does), without Serve's graceful wait.
    same = all([hit["external_id"] for hit in a["hits"]] == [hit["external_id"] for hit in b["hits"]]
               for a, b in zip(whole, back))  # fmt: skip
    return {
        "one_copy": {"documents": len(documents), **load},
        "partial_flagged": bool(load["partial_answers"] > 0 and load["failed_searches"] == 0),
        "partial_recovered": bool(same and not any(answer["shards"]["partial"] for answer in back)),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=20000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--copies", type=int, default=2)
    parser.add_argument("--model", default="default", help="The model (default: the bundled all-MiniLM-L6-v2).")
    parser.add_argument("--queries", type=int, default=200, help="Queries compared in each mode.")
    parser.add_argument("--latency-queries", type=int, default=100)
    parser.add_argument("--adds", type=int, default=20, help="Adds of 10 documents timed (median), after 3 untimed.")
    parser.add_argument("--load-seconds", type=float, default=60.0, help="Seconds of search and write load in which "
                        "a node is lost (with two copies; then again with one copy, the node coming back).")
    parser.add_argument("--clients", type=int, default=8, help="Searching threads of the load (one more writes).")
    parser.add_argument("--seed", type=int, default=0, help="Picks the point of the load at which the node goes.")
    parser.add_argument("--one-copy-documents", type=int, default=2000,
                        help="Documents of the one-copy cluster (its node lost and brought back).")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache-dir", type=Path, default=CACHE, help="Where the documents' vectors are cached.")
    parser.add_argument("--out", type=Path, default=OUT, help="Where the JSON record goes ('-': nowhere).")
    args = parser.parse_args(argv)
    if args.nodes < 2:
        parser.error("--nodes must be at least 2: one is removed while the cluster is under load")
    load_before = os.getloadavg()
    started = time.perf_counter()

    import ray
    from ray import serve
    from searchengine.indexer.commit.index_directory import IndexDirectory

    from benchmarks.scale.simulated_nodes import simulated_cluster
    from searchengine.cluster import ClusterBuildSettings, build_cluster
    from searchengine.encoding.encoder import Encoder
    from searchengine.engine.indexing import IndexSettings, build_index
    from searchengine.server.cluster.serve_app import serve_cluster

    documents, queries, qrels = corpus(args.documents, args.data)
    options = {"precision": "fp32"}  # exact vectors on every CPU: the queries the same in the ingress and here
    encoder = Encoder(args.model, **options)
    clock = time.perf_counter()
    vectors, encoding = document_vectors(documents, encoder, args.data, args.cache_dir)
    print(f"the documents' vectors: {encoding['encoded_now']} encoded now, the rest from {args.cache_dir}, in "
          f"{time.perf_counter() - clock:.0f} s; both builds are given them (encoding is left out of both)",
          file=sys.stderr, flush=True)  # fmt: skip
    texts = [query for query in queries.values()]
    dense_queries = (texts + [document.text[:200] for document in documents])[: args.queries]
    judged_ids = list(queries)[: args.queries]
    judged = [queries[query] for query in judged_ids]
    names = ["head", *(f"n{number}" for number in range(1, args.nodes))]
    record: dict[str, Any] = {"documents": len(documents), "shards": args.shards, "nodes": args.nodes,
                              "copies": args.copies, "judged_queries": len(judged),
                              "encoding": {**encoding, "seconds": round(time.perf_counter() - clock, 1),
                                           "left_out_of_builds": True}}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="cluster-check-") as scratch:
        folder = Path(scratch)
        clock = time.perf_counter()
        cluster, nodes = simulated_cluster(
            names, {"health_check_period_ms": 1000, "health_check_failure_threshold": 3, "worker_niceness": 0}
        )
        record["cluster_start_s"] = round(time.perf_counter() - clock, 1)
        try:
            settings = ClusterBuildSettings(
                shards=args.shards, copies=args.copies, model=args.model, local_root=str(folder / "nodes"),
                encoder_options=options, nodes=names,
            )  # fmt: skip
            index, report = build_cluster(folder / "cluster.json", documents, settings, vectors=vector_blocks(vectors))
            for states in index.copies:  # the build's actors go: the Serve deployments open the copies
                for state in states:
                    ray.kill(state.handle)
            record["cluster_build_s"] = round(report.seconds, 1)
            record["driver_rows_written"] = report.driver_rows_written
            record["shard_documents"] = report.shard_documents
            clock = time.perf_counter()
            build_index(
                IndexDirectory(folder / "one"), given_chunks(documents, vectors), encoder,
                IndexSettings(index_type="Flat", passages=False), total=len(documents),
            )  # fmt: skip
            record["one_index_build_s"] = round(time.perf_counter() - clock, 1)
            clock = time.perf_counter()
            url = served_ingress(serve_cluster(folder / "cluster.json", port=free_port(), heal_every_s=2.0))
            record["serve_start_s"] = round(time.perf_counter() - clock, 1)
            phase = time.perf_counter()
            with one_index_server(folder / "one", encoder) as one:
                cluster_dense, one_dense = search(url, dense_queries, "dense"), search(one, dense_queries, "dense")
                record["same_top10"] = sum(map(same_top, cluster_dense, one_dense)) / len(dense_queries)
                for mode in ("keyword", "hybrid"):
                    mine, theirs = mean_ndcg(search(url, judged, mode), judged_ids, qrels), mean_ndcg(
                        search(one, judged, mode), judged_ids, qrels
                    )
                    record[f"{mode}_ndcg"] = {"cluster": round(mine, 4), "one_index": round(theirs, 4)}
                    record[f"{mode}_ndcg_diff"] = round(abs(mine - theirs), 6)
                latency = [{"queries": [query], "k": K, "mode": "hybrid"}
                           for query in (texts + dense_queries)[: args.latency_queries]]  # fmt: skip
                alternating_medians((url, one), "/search", latency[:10])  # warm both
                cluster_s, one_s = alternating_medians((url, one), "/search", latency)
                record["p50_ms"] = {"cluster": round(1000 * cluster_s, 2), "one_index": round(1000 * one_s, 2)}
                record["p50_ratio"] = round(cluster_s / one_s, 3)
                adds = [{"documents": [{"id": f"routed-{turn}-{n}", "text": f"a routed write {n} about {texts[n % len(texts)]}"}
                                       for n in range(10)], "id_field": "id"} for turn in range(ADD_WARM_UP + args.adds)]  # fmt: skip
                alternating_medians((url, one), "/documents", adds[:ADD_WARM_UP])
                cluster_s, one_s = alternating_medians((url, one), "/documents", adds[ADD_WARM_UP:])
                record["add10_s"] = {"cluster": round(cluster_s, 3), "one_index": round(one_s, 3)}
                record["add10_ratio"] = round(cluster_s / one_s, 3)
            record["compare_s"] = round(time.perf_counter() - phase, 1)
            clock = time.perf_counter()
            victim = names[-1]
            loss = node_loss(
                url, cluster, nodes[victim], texts or dense_queries, args.load_seconds, args.seed, args.clients
            )
            serve.shutdown()  # its copies on the lost node are killed after their COPY_SHUTDOWN_S
            record["node_removed"] = victim
            record["node_loss"] = loss
            record["failed_searches"] = loss["failed_searches"]
            record["searches_during_loss"] = loss["searches"]
            record["acknowledged_writes"] = loss["acknowledged_writes"]
            record["acknowledged_writes_lost"] = loss["acknowledged_writes_lost"]
            record["write_latency_during_loss"] = loss["write_latency_during"]
            record["node_loss_s"] = round(time.perf_counter() - clock, 1)
            clock = time.perf_counter()
            count = min(args.one_copy_documents, len(documents))
            subset = (documents[:count], vectors[:count])
            record.update(one_copy_loss(cluster, folder, *subset, args, options, texts or dense_queries))
            record["one_copy_loss_s"] = round(time.perf_counter() - clock, 1)
        finally:
            ray.shutdown()
            cluster.shutdown()
    record["total_s"] = round(time.perf_counter() - started, 1)
    record.update(run_record(load_before))
    if str(args.out) != "-":
        write_results(args.out, record)
    keys = ("same_top10", "keyword_ndcg_diff", "hybrid_ndcg_diff", "p50_ratio", "failed_searches",
            "acknowledged_writes_lost", "partial_flagged", "driver_rows_written")  # fmt: skip
    print(json.dumps({**{key: record[key] for key in keys}, **{k: v for k, v in record.items() if k not in keys}}))


if __name__ == "__main__":
    main()
