"""Same answers at scale (issue 41): a cluster index built from given vectors on a simulated multi-node Ray
cluster against one ordinary index of the same vectors, in exact (Flat) and HNSW32 segments. Its last stdout line
is one JSON object.

Vectors, as benchmarks/storage/memory_check.py makes them: the cached real vectors of the Wikipedia sentences
(--real of them, ~/.cache/searchengine-bench/blocks), then noisy copies (benchmarks/scale/synthetic.py) up to
--documents; document i is `d{i}`, its text the sentence (a copy's with " [copy j]"). Queries: the cached vectors
of the held-out STS-B test sentences (the first --queries), given to both sides through an encoder that hands
back those vectors (nothing is encoded).

For each index type: `build_cluster(..., vectors=blocks)` over --nodes simulated nodes (ray.cluster_utils.Cluster,
one CPU each) with --shards shards and --copies copies, searched through ClusterIndex (plain Ray actors, no Serve),
and `SearchEngine.build` of the same documents and vectors in this process. Reported:
  same_top10            Flat: the fraction of queries whose top 10 (ids, in order) is the one index's
  recall_at_10          each side's top 10 against exact search over every vector (numpy, here)
  recall_diff           HNSW32: |cluster - one index|
  build_s               each side's build (loaded: compare as ratios within one run)

Usage:
  .venv/bin/python benchmarks/scale/cluster_answers.py --documents 200000 --shards 4 --nodes 3 \
      --out benchmarks/scale/results/cluster_answers_200k.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`

from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results

K = 10
BLOCK = 50_000
"""Rows of each vector block given to the cluster build."""
DEFAULT_CACHE = Path.home() / ".cache" / "searchengine-bench" / "blocks"
OUT = Path(__file__).resolve().parent / "results" / "cluster_answers.json"


class CachedVectors:
    """The real encoder, except that the documents and queries it is asked to encode are looked up among the cached
    vectors of their texts (all of which must be known): both sides store and search exactly the same vectors."""

    def __init__(
        self,
        encoder: Any,  # noqa: ANN401
        documents: tuple[Sequence[str], np.ndarray],
        queries: tuple[Sequence[str], np.ndarray],
    ) -> None:
        self._encoder = encoder
        self._documents = ({text: row for row, text in enumerate(documents[0])}, documents[1])
        self._queries = ({text: row for row, text in enumerate(queries[0])}, queries[1])

    def __getattr__(self, name: str) -> Any:  # noqa: ANN401 (whatever the real encoder has)
        return getattr(self._encoder, name)

    def encode(self, texts: Sequence[str], batch_size: int | None = None, **_: Any) -> np.ndarray:  # noqa: ARG002
        rows, vectors = self._documents
        return vectors[[rows[text] for text in texts]]

    def encode_queries(self, texts: Sequence[str], batch_size: int | None = None, **_: Any) -> np.ndarray:  # noqa: ARG002
        rows, vectors = self._queries
        return vectors[[rows[text] for text in texts]]


def exact_top(vectors: np.ndarray, queries: np.ndarray, k: int = K) -> np.ndarray:
    """The ids (rows) of each query's k best vectors by inner product, over every vector, in blocks."""
    best_scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
    best_ids = np.zeros((len(queries), k), dtype=np.int64)
    for start in range(0, len(vectors), BLOCK):
        scores = queries @ vectors[start : start + BLOCK].T
        ids = np.broadcast_to(np.arange(start, start + scores.shape[1]), scores.shape)
        scores, ids = np.hstack([best_scores, scores]), np.hstack([best_ids, ids])
        order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
        best_scores, best_ids = np.take_along_axis(scores, order, 1), np.take_along_axis(ids, order, 1)
    return best_ids


def recall(found: list[list[int]], truth: np.ndarray) -> float:
    return float(np.mean([len(set(mine) & set(right)) / len(right) for mine, right in zip(found, truth.tolist())]))


def top_ids(hits: list[list[Any]]) -> list[list[int]]:
    """Each query's hits as document numbers (external id `d{i}` -> i), best first."""
    return [[int(hit.external_id[1:]) for hit in found] for found in hits]


def segment_types(folder: Path) -> list[str]:
    """The FAISS type and vector count of each segment of an index folder (its store's segments table; the
    simulated nodes' folders all sit on this machine)."""
    store = max(folder.glob("documents.*.db"), key=lambda path: path.stat().st_mtime)
    with contextlib.closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as db:
        return [f"{factory} ({vectors:,})" for factory, vectors in db.execute("SELECT factory, vectors FROM segments")]


def documents_of(texts: list[str]) -> Iterator[Any]:
    from searchengine.indexer.tables.documents import Document

    return (Document(text, external_id=f"d{row}") for row, text in enumerate(texts))


def compare(
    index_type: str, args: argparse.Namespace, folder: Path, texts: list[str], vectors: np.ndarray, query: dict
) -> dict:
    """Build both sides with `index_type`, search both, and tear the cluster's copies down again."""
    import ray

    from searchengine import BuildSettings, SearchEngine
    from searchengine.cluster import ClusterBuildSettings, build_cluster
    from searchengine.cluster.cluster_build import remove_build

    names = ["head", *(f"n{number}" for number in range(1, args.nodes))]
    settings = ClusterBuildSettings(
        shards=args.shards, copies=args.copies, model="default", local_root=str(folder / "nodes"),
        name=index_type.lower(), index_type=index_type, nodes=names,
    )  # fmt: skip
    blocks = (vectors[start : start + BLOCK] for start in range(0, len(vectors), BLOCK))
    index, report = build_cluster(folder / f"{index_type}.json", documents_of(texts), settings, vectors=blocks)
    index._encoder = query["encoder"]  # noqa: SLF001 (build_cluster takes no encoder: the queries' cached vectors)
    record: dict[str, Any] = {"cluster_build_s": round(report.seconds, 1), "shard_documents": report.shard_documents}
    record["driver_rows_written"] = report.driver_rows_written
    clock = time.perf_counter()
    answer = index.search_batch(query["texts"], K, mode="dense")
    record["cluster_search_s"] = round(time.perf_counter() - clock, 2)
    record["answered"] = f"{answer.answered} of {answer.shards}"
    cluster_top = top_ids(answer.hits)
    for states in index.copies:  # the copies go, then their folders, before the one index is built
        for state in states:
            with contextlib.suppress(Exception):
                ray.kill(state.handle)
    record["shard_segments"] = [segment_types(Path(place.folder)) for places in index.manifest.placement
                                for place in places]  # fmt: skip
    remove_build(index.manifest)
    clock = time.perf_counter()
    built = BuildSettings(index=index_type, passages=False)
    with SearchEngine.build(
        list(documents_of(texts)), folder / f"one-{index_type}", built, encoder=query["encoder"]
    ) as one:
        record["one_index_build_s"] = round(time.perf_counter() - clock, 1)
        record["one_index_type"] = one.last_report.index_type
        one_top = top_ids(one.reader.search_batch(query["texts"], K, mode="dense"))
    record["same_top10"] = float(np.mean([mine == theirs for mine, theirs in zip(cluster_top, one_top)]))
    record["recall_at_10"] = {"cluster": round(recall(cluster_top, query["truth"]), 4),
                              "one_index": round(recall(one_top, query["truth"]), 4)}  # fmt: skip
    record["recall_diff"] = round(abs(record["recall_at_10"]["cluster"] - record["recall_at_10"]["one_index"]), 4)
    return record


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=1_000_000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--real", type=int, default=100_000, help="Real Wikipedia vectors before the noisy copies.")
    parser.add_argument("--noise", type=float, default=0.02)
    parser.add_argument("--types", default="Flat,HNSW32", help="The index types compared, in order.")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--out", type=Path, default=OUT, help="Where the JSON record goes ('-': nowhere).")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    started = time.perf_counter()

    import ray

    from benchmarks.scale.search_speed import cached_embeddings, read_stsb_test, read_wiki
    from benchmarks.scale.simulated_nodes import simulated_cluster
    from benchmarks.scale.synthetic import noisy_copies
    from benchmarks.storage.default_index import corpus_texts
    from searchengine.encoding.encoder import Encoder

    encoder = Encoder()
    wiki = read_wiki(args.data, args.real)
    left, right, _ = read_stsb_test(args.data, None)
    lines = set(wiki)
    held_out = [text for text in dict.fromkeys(left + right) if text not in lines]
    query_vectors, _ = cached_embeddings(encoder, held_out, args.cache_dir, "stsb-queries")  # all: as cached
    held_out = held_out[: args.queries]
    real, _ = cached_embeddings(encoder, wiki, args.cache_dir, "wiki")
    vectors = noisy_copies(real, args.documents, args.noise)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)  # the index's space: unit vectors
    query_vectors = np.ascontiguousarray(query_vectors[: args.queries], dtype=np.float32)
    query_vectors /= np.linalg.norm(query_vectors, axis=1, keepdims=True)
    texts = corpus_texts(wiki, len(vectors))
    query = {
        "texts": held_out,
        "truth": exact_top(vectors, query_vectors),
        "encoder": CachedVectors(encoder, (texts, vectors), (held_out, query_vectors)),
    }
    record: dict[str, Any] = {"documents": len(vectors), "real_vectors": len(real), "noise": args.noise,
                              "shards": args.shards, "nodes": args.nodes, "copies": args.copies,
                              "queries": len(held_out)}  # fmt: skip
    names = ["head", *(f"n{number}" for number in range(1, args.nodes))]
    with tempfile.TemporaryDirectory(prefix="cluster-answers-") as scratch:
        cluster, _ = simulated_cluster(names)
        try:
            for index_type in args.types.split(","):
                record[index_type] = compare(index_type, args, Path(scratch), texts, vectors, query)
                print(index_type, json.dumps(record[index_type]), flush=True)
        finally:
            ray.shutdown()
            cluster.shutdown()
    record["total_s"] = round(time.perf_counter() - started, 1)
    record.update(run_record(load_before))
    if str(args.out) != "-":
        write_results(args.out, record)
    print(json.dumps(record))


if __name__ == "__main__":
    main()
