"""nDCG@10 of every fusion setting tried for hybrid search, on the BEIR sets, ranked as `searchengine eval retrieval
--index DIR --mode hybrid` ranks, without re-encoding the queries for each setting.

- Indexes: NAME=DIR, built from DATA/NAME/corpus.jsonl as docs/retrieval.md builds them (`--id-field _id
  --title-field title --index Flat`, the bundled model); queries and qrels are DATA/NAME/queries.jsonl and
  qrels_test.tsv, judged queries only.
- Each side is searched once per query through the engine (`search_batch(..., mode="dense")` and
  `mode="keyword"`, 250 hits); every setting is then fused with the engine's own `fuse()`. As `eval retrieval`
  does, the hybrid ranking is read to 101 hits (100 + the query's own id, which is dropped), so each side
  gives max(101, depth) candidates.
- Check (correctness, not speed): for min-max fusion at equal weights, the first --check queries ranked here
  equal what `engine.search_batch(..., mode="hybrid", fusion=..., k=101)` returns. Bounded fusion, the default
  since, needs each query's BM25 bound and is measured by benchmarks/retrieval/score_fusion.py.
- --max-query-words replaces searchengine.indexer.query.keyword_query.MAX_QUERY_WORDS for the keyword side (each value
  is one keyword pass; 0 means no limit), to measure what the limit costs in quality.
- The table's settings: RRF with k in 10/20/30/60/100 and a dense weight of 0.3 to 0.7, min-max with a dense
  weight of 0.2 to 0.8, each at depth 100 and 200. The best setting is the one with the best average over the
  sets (one setting for all, so as not to fit each set's test queries).

Usage: .venv/bin/python benchmarks/retrieval/fusion_settings.py --index nfcorpus=/tmp/hybrid/nfcorpus-index
       --index arguana=/tmp/hybrid/arguana-index [--data ../shared/data/retrieval] [--max-query-words 32]
       [--out benchmarks/retrieval/results/fusion_settings.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import searchengine.indexer.query.keyword_query as keyword_query

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results
from searchengine import SearchEngine
from searchengine.engine.fusion import Fusion, fuse
from searchengine.engine.modes import DEFAULT_FUSION
from searchengine.evaluation.retrieval import read_qrels, read_queries, score_rankings

ROOT = Path(__file__).resolve().parents[2]
HITS = 250
CHECKED = Fusion("minmax", 0.5, depth=100)
"""The fusion whose ranking is checked against the engine's hybrid search."""
READ = 101
"""Hits `eval retrieval` reads: the top 100 after dropping the query's own id."""


def settings() -> list[Fusion]:
    grid = []
    for depth in (100, 200):
        grid += [Fusion("rrf", w, k, depth) for k in (10, 20, 30, 60, 100) for w in (0.3, 0.4, 0.5, 0.6, 0.7)]
        grid += [Fusion("minmax", w, 60, depth) for w in (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)]
    return grid


def side(engine: SearchEngine, texts: list[str], mode: str, names: dict[int, str]) -> list[list[tuple[int, float]]]:
    """Each query's HITS best (id, score) by one mode; `names` gathers each hit's external id."""
    ranked = []
    for start in range(0, len(texts), 64):
        for hits in engine.search_batch(texts[start : start + 64], HITS, mode=mode):
            names.update((hit.id, hit.external_id) for hit in hits)
            ranked.append([(hit.id, hit.score) for hit in hits])
    return ranked


def ndcg(
    judged: list[tuple[str, str]], rankings: list[list[int]], names: dict[int, str], qrels: dict, count: int
) -> float:
    """nDCG@10 as `eval retrieval` computes it: READ hits, the query's own id dropped, the top 100 kept."""
    kept = {}
    for (query, _), ranked in zip(judged, rankings):
        kept[query] = [names[doc] for doc in ranked[:READ] if names[doc] != query][:100]
    return round(score_rankings(kept, qrels, count).ndcg_at_10, 4)


def fused(dense: list, keyword: list, fusion: Fusion) -> list[list[int]]:
    depth = max(READ, fusion.depth)
    return [[doc for doc, _ in fuse(a[:depth], b[:depth], fusion)][:READ] for a, b in zip(dense, keyword)]


def evaluate_set(engine: SearchEngine, data: Path, limits: list[int], check: int) -> dict:
    query_ids, query_texts = read_queries(data / "queries.jsonl")
    qrels = read_qrels(data / "qrels_test.tsv", query_ids, engine.external_ids())
    judged = [(query, text) for query, text in zip(query_ids, query_texts) if query in qrels]
    texts = [text for _, text in judged]
    names: dict[int, str] = {}
    dense = side(engine, texts, "dense", names)
    result = {"queries": len(judged), "documents": len(engine)}
    result["dense"] = ndcg(judged, [[d for d, _ in r] for r in dense], names, qrels, len(engine))
    for number, limit in enumerate(limits):
        keyword_query.MAX_QUERY_WORDS = limit or None
        keyword = side(engine, texts, "keyword", names)
        label = f"max_query_words={limit or 'all'}"
        result[f"keyword {label}"] = ndcg(judged, [[d for d, _ in r] for r in keyword], names, qrels, len(engine))
        result[f"hybrid {label}"] = {
            fusion.describe(): ndcg(judged, fused(dense, keyword, fusion), names, qrels, len(engine))
            for fusion in settings()
        }
        if number == 0:  # the engine's hybrid search, with the same limit, ranks as the fusion here
            engine_ranked = engine.search_batch(texts[:check], READ, mode="hybrid", fusion=CHECKED)
            expected = fused(dense[:check], keyword[:check], CHECKED)
            result["check_minmax_fusion_equals_engine"] = [[h.id for h in hits] for hits in engine_ranked] == expected
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", action="append", required=True, help="NAME=DIR, NAME a set under --data")
    parser.add_argument("--data", type=Path, default=DATA / "retrieval")
    parser.add_argument("--max-query-words", type=int, action="append", help="0: no limit [default: the module's]")
    parser.add_argument("--check", type=int, default=50, help="Queries whose default-fusion ranking is checked.")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "retrieval" / "results" / "fusion_settings.json")
    args = parser.parse_args()
    limits = args.max_query_words or [keyword_query.MAX_QUERY_WORDS]
    started, load_before = time.perf_counter(), os.getloadavg()
    sets = {}
    for item in args.index:
        name, _, directory = item.partition("=")
        sets[name] = evaluate_set(SearchEngine.open(directory), args.data / name, limits, args.check)
        print(name, {key: value for key, value in sets[name].items() if not isinstance(value, dict)}, file=sys.stderr)
    average = {}
    for limit in limits:
        label = f"hybrid max_query_words={limit or 'all'}"
        tried = [fusion.describe() for fusion in settings()]
        average[label] = {
            setting: round(statistics.mean(s[label][setting] for s in sets.values()), 4) for setting in tried
        }
    results = {
        **run_record(load_before),
        "seconds": round(time.perf_counter() - started, 1),
        "default_fusion": DEFAULT_FUSION.describe(),
        "sets": sets,
        "average": average,
        "best_by_average": {label: max(scores, key=scores.get) for label, scores in average.items()},
    }
    write_results(args.out, results)
    print(json.dumps({key: results[key] for key in ("best_by_average", "seconds")}, indent=2))


if __name__ == "__main__":
    main()
