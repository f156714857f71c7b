"""What a highlighted snippet costs and what it shows: per query, the time of `search(k=10, highlight=True)` against
`search(k=10)`, and, for the top-10 hits the qrels call relevant, how much of the query the shown line holds before
(the document's start) and after (the sentences nearest to the query, searchengine.engine.highlight).

- Index: one BEIR set built as docs/retrieval.md builds it; queries: its judged test queries (the first --queries).
- Time: each query searched with and without highlights, alternating, --runs times each; a query's time is its
  median, the table's the median over queries and of each query's ratio. Measured in one process, one query at a
  time: on a machine shared with other work the absolute times move, the ratio less.
- Quality, a simple proxy (not a judgement of usefulness): over the relevant hits in each top 10, the share whose
  shown line (`Hit.snippet()`, 200 characters) holds at least one of the query's words (stemmed, stop words
  left out, as highlighted), and the mean share of the query's distinct word stems the line holds. In keyword and
  hybrid modes the sentence is chosen partly by those words, so their gain there is by construction; dense mode
  chooses by cosine alone, so its gain is the independent check.

Usage: .venv/bin/python benchmarks/retrieval/snippets.py --set nfcorpus --index /tmp/beir-nfcorpus
       [--data ../shared/data/retrieval] [--queries 200] [--runs 3] [--max-sentences 4]
       [--out benchmarks/retrieval/results/snippets_nfcorpus.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
import searchengine.engine.highlight as highlight
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results
from searchengine import SearchEngine
from searchengine.engine.query_words import query_stems, stem, word_spans
from searchengine.evaluation.retrieval import read_qrels, read_queries

ROOT = Path(__file__).resolve().parents[2]
K = 10


def timed(engine: SearchEngine, query: str, mode: str, highlight: bool) -> tuple[float, list]:
    started = time.perf_counter()
    hits = engine.search(query, k=K, mode=mode, highlight=highlight)
    return (time.perf_counter() - started) * 1000, hits


def coverage(line: str, stems: frozenset[str]) -> tuple[bool, float]:
    """Whether `line` holds a query word, and the share of the query's stems it holds."""
    held = {stem(line[start:end]) for start, end in word_spans(line, stems)}
    return bool(held), len(held) / len(stems) if stems else 0.0


def measure(engine: SearchEngine, queries: list[tuple[str, str]], qrels: dict, mode: str, runs: int) -> dict:
    plain_ms, highlight_ms, ratios = [], [], []
    shown = {"before": [], "after": []}
    for query_id, text in queries:
        times: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(runs):
            for marked in (False, True):
                elapsed, hits = timed(engine, text, mode, marked)
                times[marked].append(elapsed)
        plain, marked = statistics.median(times[False]), statistics.median(times[True])
        plain_ms.append(plain)
        highlight_ms.append(marked)
        ratios.append(marked / plain)
        stems = query_stems(text)
        relevant = qrels.get(query_id, {})
        for hit in hits:
            if relevant.get(hit.external_id, 0) > 0:
                shown["after"].append(coverage(hit.snippet(), stems))
                shown["before"].append(coverage(replace(hit, highlight=None).snippet(), stems))
    quality = {
        name: {
            "relevant_hits": len(rows),
            "share_holding_a_query_word": round(sum(held for held, _ in rows) / len(rows), 4) if rows else None,
            "mean_share_of_query_words": round(statistics.mean(share for _, share in rows), 4) if rows else None,
        }
        for name, rows in shown.items()
    }
    return {
        "search_ms_p50": round(statistics.median(plain_ms), 2),
        "search_with_highlight_ms_p50": round(statistics.median(highlight_ms), 2),
        "highlight_ms_p50": round(statistics.median(h - p for h, p in zip(highlight_ms, plain_ms)), 2),
        "ratio_p50": round(statistics.median(ratios), 2),
        "snippet_quality": quality,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", required=True, help="A set under --data: nfcorpus or arguana")
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DATA / "retrieval")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--modes", nargs="+", default=["dense", "keyword", "hybrid"])
    parser.add_argument(
        "--max-sentences", type=int, help="Replace highlight.MAX_EMBEDDED_SENTENCES (sentences embedded per hit)"
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.max_sentences is not None:
        highlight.MAX_EMBEDDED_SENTENCES = args.max_sentences
    engine = SearchEngine.open(args.index)
    ids, texts = read_queries(args.data / args.set / "queries.jsonl")
    qrels = read_qrels(args.data / args.set / "qrels_test.tsv", ids, engine.external_ids())
    queries = [(query, text) for query, text in zip(ids, texts) if query in qrels][: args.queries]
    for query, _ in queries[:3]:  # warm: the encoder, the query path and the highlight path
        engine.search(query, k=K, highlight=True)
    load_before = os.getloadavg()
    results = {mode: measure(engine, queries, qrels, mode, args.runs) for mode in args.modes}
    encoder = engine.reader.encoders.for_queries()  # which encoder ran the queries and the sentences
    record = {
        **run_record(load_before),
        "set": args.set,
        "queries": len(queries),
        "k": K,
        "max_embedded_sentences": highlight.MAX_EMBEDDED_SENTENCES,
        "query_encoder": f"{type(encoder).__name__} {getattr(encoder, 'backend', 'onnx')} "
        f"{getattr(encoder, 'precision', '')}".strip(),
        "modes": results,
    }
    out = args.out or ROOT / "benchmarks" / "retrieval" / "results" / f"snippets_{args.set}.json"
    write_results(out, record)
    print(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
