"""What leaving English stop words out of keyword queries does (indexer/query/keyword_query.py STOP_WORDS): nDCG@10 of
keyword and hybrid search on a BEIR set, and the per-query time of keyword, hybrid and dense search on a large
index, each with the stop list off and on, in one process on the same index.

- Quality: --set NAME --index DIR, an index of the set built with its BEIR ids as external ids (the indexes
  `benchmarks/retrieval/retrieval_rerank.py --index DIR` builds); every test query, scored as `searchengine eval retrieval
  -d DIR` scores it (ArguAna's own document dropped).
- Time: --speed-index DIR, an index of Wikipedia sentences (e.g. the one `benchmarks/serving/serve_load.py --docs 98000`
  builds in /tmp/searchengine-bench-cache/serve-load-98000), queried with the first eight words of the 300
  sentences after its first --speed-docs, one thread, p50 per mode, --rounds rounds alternating off and on.

Usage:
  .venv/bin/python benchmarks/retrieval/stop_words.py --set nfcorpus --index /tmp/nf-index
  .venv/bin/python benchmarks/retrieval/stop_words.py --speed-index /tmp/searchengine-bench-cache/serve-load-98000
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import searchengine.indexer.query.keyword_query as keyword_query

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import cpu_name
from benchmarks.serving.serve_load import QUERY_WORDS, sentences
from searchengine import EncoderSpeed, SearchEngine
from searchengine.engine.search import one_thread
from searchengine.evaluation.retrieval import evaluate_search, read_qrels, read_queries

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = {"off": frozenset(), "on": keyword_query.STOP_WORDS}


def quality(name: str, index: Path, data: Path) -> None:
    folder = data / "retrieval" / name
    query_ids, query_texts = read_queries(folder / "queries.jsonl")
    with SearchEngine.open(index) as engine:
        judged = read_qrels(folder / "qrels_test.tsv", query_ids, engine.external_ids())
        for mode in ("keyword", "hybrid"):
            for label, stop_words in SETTINGS.items():
                keyword_query.STOP_WORDS = stop_words

                def search(texts: list[str], depth: int, mode: str = mode) -> list[list[str]]:
                    return [
                        [hit.external_id or "" for hit in hits] for hits in engine.search_batch(texts, depth, mode=mode)
                    ]

                scores = evaluate_search(search, query_ids, query_texts, judged, len(engine))
                print(
                    f"{name} {mode:<8} stop words {label:<3}: nDCG@10 {scores.ndcg_at_10:.4f} ({scores.queries} queries)"
                )


def speed(index: Path, data: Path, docs: int, rounds: int) -> None:
    corpus = list(dict.fromkeys(sentences(data)))  # as serve_load.py reads it, so --speed-docs lines up
    queries = [" ".join(text.split()[:QUERY_WORDS]) for text in corpus[docs : docs + 300]]
    times: dict[tuple[str, str], list[float]] = {}
    with SearchEngine.open(index, speed=EncoderSpeed("auto", "auto", 1)) as engine, one_thread():
        documents = len(engine)
        for query in queries[:10]:
            engine.search(query, k=10, mode="hybrid")
        for _ in range(rounds):
            for label, stop_words in SETTINGS.items():
                keyword_query.STOP_WORDS = stop_words
                for mode in ("keyword", "hybrid", "dense"):
                    samples = []
                    for query in queries:
                        started = time.perf_counter()
                        engine.search(query, k=10, mode=mode)
                        samples.append(time.perf_counter() - started)
                    times.setdefault((mode, label), []).append(1000 * statistics.median(samples))
    print(f"{documents} documents, {len(queries)} queries; {cpu_name()}, load {os.getloadavg()[0]:.1f}")
    for (mode, label), values in times.items():
        print(f"{mode:<8} stop words {label:<3}: p50 " + ", ".join(f"{value:.1f}" for value in values) + " ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", choices=["nfcorpus", "arguana"])
    parser.add_argument("--index", type=Path, help="an index of --set, built with its BEIR ids")
    parser.add_argument("--speed-index", type=Path, help="an index of Wikipedia sentences to time queries on")
    parser.add_argument("--speed-docs", type=int, default=98000, help="sentences that index holds (default 98000)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    if (args.set is None) != (args.index is None) or (args.set is None and args.speed_index is None):
        parser.error("give --set and --index, or --speed-index, or both")
    if args.set:
        quality(args.set, args.index, args.data)
    if args.speed_index:
        speed(args.speed_index, args.data, args.speed_docs, args.rounds)


if __name__ == "__main__":
    main()
