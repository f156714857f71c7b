"""Does `--rerank` pay on real retrieval? nDCG@10 and per-query latency of dense and hybrid search alone and
reranked by a cross-encoder from their top 20 and top 100, on the held-back half of each BEIR set's test queries.

- Index: the set's corpus built with `SearchEngine.build` (bundled all-MiniLM-L6-v2 unless --model, exact Flat
  search), each document embedded as title + " " + text with its BEIR id as external id, in a temporary directory
  or in --index (built there once, reused by later runs: also the index `searchengine adapt` can adapt).
- Queries: the held-back half (benchmarks/retrieval/split_queries.py), or its first --queries of them (ArguAna's 703
  long queries times 100 candidates would take hours here); ArguAna drops a hit whose id is the query's.
- Quality: `engine.search_batch(queries, k=101, mode=M)` gives each query's candidates in dense and in hybrid mode
  (the query's own document dropped, then the best 100); the cross-encoder scores every (query, candidate) pair
  once, and reranking the top N is sorting the first N candidates by that score (stable, so ties keep the
  retrieval order): the same ranking
  `engine.search(q, k=10, mode=M, rerank=CE, rerank_top=N)` returns, which the script checks on --check queries.
- Latency: warm (models loaded, one query run first), the median of --runs runs of one
  `engine.search(q, k=10, mode=M[, rerank=CE, rerank_top=N])` per query, over --latency-queries queries; p50 and p99.

Usage: .venv/bin/python benchmarks/retrieval/retrieval_rerank.py --set nfcorpus --cross-encoder /tmp/ce-retrieval
       [--queries 100] [--model default] [--out benchmarks/retrieval/results/retrieval_rerank.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from searchengine.indexer.tables.store import Document

from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import machine_record
from benchmarks.harness.results import read_results, write_results
from searchengine import BuildSettings, SearchEngine
from searchengine.encoding.cross_encoder import CrossEncoder
from searchengine.engine.fusion import Fusion
from searchengine.engine.mode_registry import mode_named
from searchengine.engine.modes import DEFAULT_FUSION, SearchMode
from searchengine.evaluation.retrieval import query_metrics

ROOT = Path(__file__).resolve().parents[2]
CANDIDATES = 100
K = 10
TOPS = (20, 100)
MODES: tuple[SearchMode, ...] = ("dense", "hybrid")
FUSION = replace(DEFAULT_FUSION, depth=CANDIDATES + 1)
"""Hybrid fuses each side's top 101 (the default 100, and one for ArguAna's own document, dropped), at every k
this script asks for, so the candidates and the API's reranked lists come from one fusion."""


def fusion_of(mode: SearchMode) -> Fusion | None:
    """FUSION for a mode that fuses (hybrid); None for one that fuses nothing (dense), which refuses a fusion."""
    return FUSION if mode_named(mode).fuses else None


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_half(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        query, document, grade = line.split("\t")
        qrels.setdefault(query, {})[document] = int(grade)
    return qrels


def build_index(corpus: Path, target: Path, model: str) -> SearchEngine:
    """Each document as title + " " + text, its BEIR id the external id, its title kept as metadata (what
    `searchengine adapt --query-field title` reads)."""
    documents = [
        Document(
            f"{row.get('title', '')} {row['text']}".strip(),
            metadata={"title": row["title"]} if row.get("title") else {},
            external_id=str(row["_id"]),
        )
        for row in read_jsonl(corpus)
    ]
    return SearchEngine.build(
        documents,
        target,
        BuildSettings(model=None if model == "default" else model, index="Flat"),
    )


def candidates(engine: SearchEngine, query_ids: list[str], texts: list[str], mode: SearchMode) -> list[list]:
    """Each query's best CANDIDATES hits in `mode`, its own document (same id) dropped."""
    batches = engine.search_batch(texts, CANDIDATES + 1, mode=mode, fusion=fusion_of(mode))
    return [[hit for hit in hits if hit.external_id != query][:CANDIDATES] for query, hits in zip(query_ids, batches)]


def mean_ndcg(rankings: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> float:
    return statistics.mean(query_metrics(rankings[query], qrels[query])["ndcg@10"] for query in rankings)


def latency(engine: SearchEngine, texts: list[str], runs: int, mode: SearchMode, **rerank) -> dict[str, float]:
    engine.search(texts[0], k=K, mode=mode, fusion=fusion_of(mode), **rerank)  # warm-up
    times = []
    for text in texts:
        samples = []
        for _ in range(runs):
            started = time.perf_counter()
            engine.search(text, k=K, mode=mode, fusion=fusion_of(mode), **rerank)
            samples.append(time.perf_counter() - started)
        times.append(statistics.median(samples))
    times.sort()
    return {
        "p50_ms": round(1000 * statistics.median(times), 1),
        "p99_ms": round(1000 * times[min(len(times) - 1, math.ceil(0.99 * len(times)) - 1)], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", required=True, choices=["nfcorpus", "arguana"])
    parser.add_argument("--cross-encoder", required=True)
    parser.add_argument("--model", default="default", help="The bi-encoder of the index (e.g. an adapted model).")
    parser.add_argument(
        "--index", type=Path, default=None, help="Keep the index here, and reuse it when it exists (else temporary)."
    )
    parser.add_argument("--queries", type=int, default=None, help="Use the first N held-back queries only.")
    parser.add_argument("--latency-queries", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--check", type=int, default=3, help="Queries whose reranked list is checked via the API.")
    parser.add_argument("--data", type=Path, default=DATA / "retrieval")
    parser.add_argument("--halves", type=Path, default=Path("/tmp/heldback"))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "retrieval" / "results" / "retrieval_rerank.json")
    arguments = parser.parse_args()
    data = arguments.data / arguments.set
    qrels = read_half(arguments.halves / arguments.set / "qrels_heldback.tsv")
    queries = {row["_id"]: row["text"] for row in read_jsonl(data / "queries.jsonl")}
    query_ids = [query for query in qrels if any(grade > 0 for grade in qrels[query].values())][: arguments.queries]
    texts = [queries[query] for query in query_ids]
    cross_encoder = CrossEncoder(arguments.cross_encoder)
    with tempfile.TemporaryDirectory(prefix="retrieval-rerank-") as scratch:
        started = time.perf_counter()
        if arguments.index is not None and arguments.index.exists():
            engine = SearchEngine.open(arguments.index)
        else:
            engine = build_index(data / "corpus.jsonl", arguments.index or Path(scratch) / "index", arguments.model)
        index_seconds = time.perf_counter() - started
        hits = {mode: candidates(engine, query_ids, texts, mode) for mode in MODES}
        started = time.perf_counter()
        # each (query, document) pair is scored once, also when both modes found the document
        pairs = {
            (i, hit.external_id): hit.text for row in hits.values() for i, found in enumerate(row) for hit in found
        }
        scored = cross_encoder.score([(texts[i], text) for (i, _), text in pairs.items()])
        score_of = dict(zip(pairs, scored.tolist()))
        score_seconds = time.perf_counter() - started
        rankings = {}
        for mode in MODES:
            rankings[mode] = {q: [h.external_id for h in row] for q, row in zip(query_ids, hits[mode])}
            for top in TOPS:
                ranked = {}
                for i, (query, row) in enumerate(zip(query_ids, hits[mode])):
                    own = np.array([score_of[(i, hit.external_id)] for hit in row[:top]])
                    order = np.argsort(-own, kind="stable")
                    ranked[query] = [row[j].external_id for j in order] + [h.external_id for h in row[top:]]
                rankings[f"{mode}, rerank top {top}"] = ranked
            for query, text in list(zip(query_ids, texts))[: arguments.check]:
                retrieved = [
                    hit.external_id for hit in engine.search(text, k=CANDIDATES + 1, mode=mode, fusion=fusion_of(mode))
                ]
                for top in TOPS:  # the API reranks the query's own document too where it is among the candidates
                    with_own = top + (query in retrieved[: top + 1])
                    api = engine.search(
                        text, k=K + 1, mode=mode, fusion=fusion_of(mode), rerank=cross_encoder, rerank_top=with_own
                    )
                    api_ids = [hit.external_id for hit in api if hit.external_id != query][:K]
                    assert api_ids == rankings[f"{mode}, rerank top {top}"][query][:K], (query, mode, top)
        latency_texts = texts[: arguments.latency_queries]
        times = {}
        for mode in MODES:
            times[mode] = latency(engine, latency_texts, arguments.runs, mode)
            for top in TOPS:
                times[f"{mode}, rerank top {top}"] = latency(
                    engine, latency_texts, arguments.runs, mode, rerank=cross_encoder, rerank_top=top
                )
        engine.close()
    rows = {mode: {"ndcg@10": round(mean_ndcg(ranked, qrels), 4), **times[mode]} for mode, ranked in rankings.items()}
    machine = machine_record(torch_threads=torch.get_num_threads(), load_average=round(os.getloadavg()[0], 1))
    print(
        f"{arguments.set}: {len(query_ids)} held-back queries, cross-encoder {arguments.cross_encoder}, "
        f"bi-encoder {arguments.model}; {machine['cpu']}, load {machine['load_average']}"
    )
    print(f"{'mode':<26} {'nDCG@10':>8} {'p50 ms':>9} {'p99 ms':>9}")
    for mode, row in rows.items():
        print(f"{mode:<26} {row['ndcg@10']:>8.4f} {row['p50_ms']:>9.1f} {row['p99_ms']:>9.1f}")
    print(f"(index built in {index_seconds:.0f} s; {len(pairs)} pairs scored in {score_seconds:.0f} s)")
    results = read_results(arguments.out)
    results[f"{arguments.set}|{arguments.model}|{arguments.cross_encoder}"] = {
        "set": arguments.set,
        "queries": len(query_ids),
        "bi_encoder": arguments.model,
        "cross_encoder": arguments.cross_encoder,
        "rows": rows,
        "pairs_scored": len(pairs),
        "score_seconds": round(score_seconds, 1),
        "machine": machine,
    }
    write_results(arguments.out, results)


if __name__ == "__main__":
    main()
