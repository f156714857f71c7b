"""Hybrid scores that mean the same for every query: nDCG@10 of each fusion, and how well each mode's top score
tells a query that has an answer in the corpus from one that has none (ROC AUC), on the BEIR sets.

- Indexes: NAME=DIR for nfcorpus and arguana, built as docs/retrieval.md builds them (`--id-field _id
  --title-field title`, the bundled model); queries and qrels are DATA/NAME/queries.jsonl and qrels_test.tsv.
- Halves: each set's judged queries are split as benchmarks/retrieval/split_queries.py splits them (seed 13): "tune" is
  where a setting or a --min-score threshold may be chosen, "heldback" where it is then reported.
- Answerable queries: a set's own judged queries against its own index. Unanswerable: the other set's queries
  against it (ArguAna's arguments against NFCorpus's medical abstracts, and the other way round). As BEIR does,
  a hit whose id is the query's id is dropped first (ArguAna's queries are documents of its own corpus).
- Each side is searched once per query through the engine (dense: cosine; keyword: the engine's BM25 and its
  bounded share, whose ratio is the query's BM25 bound); every fusion is then computed offline, the engine's own
  with its `fuse()`, Bruch et al.'s TM2C2 (theoretical minimum, the list's observed maximum) here. A check: the
  first --check queries fused here by the default fusion rank as `engine.search_batch(mode="hybrid")` does.
- AUC: of the top hit's score (after dropping the query's own id), answerable against unanswerable, per index
  and half; 0.5 is chance, 1.0 a threshold that separates them perfectly. For --min-score, the threshold that
  maximises (answerable kept + unanswerable emptied) / 2 on the tune halves of both indexes together is reported
  with what it keeps and empties on the held-back halves.

Usage: .venv/bin/python benchmarks/retrieval/score_fusion.py --index nfcorpus=/tmp/beir-nfcorpus
       --index arguana=/tmp/beir-arguana [--data ../shared/data/retrieval] [--out benchmarks/retrieval/results/score_fusion.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from scipy.stats import mannwhitneyu

from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results
from benchmarks.retrieval.split_queries import split
from searchengine import SearchEngine
from searchengine.engine.fusion import Fusion, fuse
from searchengine.engine.modes import DEFAULT_FUSION
from searchengine.evaluation.retrieval import read_qrels, read_queries, score_rankings

ROOT = Path(__file__).resolve().parents[2]
READ = 101
"""Hits read per query, as `eval retrieval` reads them: the top 100 after dropping the query's own id."""
DEPTH = 100
BEFORE = Fusion("minmax", 0.5, depth=DEPTH)
"""The default fusion before bounded fusion."""


def settings() -> dict[str, Callable]:
    """Every fusion measured, by name: each takes (dense, keyword, bound) for one query and returns its fused list."""
    fusions: dict[str, Callable] = {
        "minmax w=0.5 (before)": lambda d, k, _b: fuse(d, k, BEFORE),
        "rrf k=60 w=0.5": lambda d, k, _b: fuse(d, k, Fusion("rrf", 0.5, depth=DEPTH)),
        "tm2c2 w=0.5": lambda d, k, _b: tm2c2(d, k, 0.5),
    }
    for weight in (0.3, 0.4, 0.5, 0.6, 0.7):
        fusion = Fusion("bounded", weight, depth=DEPTH)
        fusions[f"bounded w={weight}"] = lambda d, k, b, fusion=fusion: fuse(d, k, fusion, b)
    # Alternatives to the bounded scales, each at equal weights: BM25 over the sum of the words' IDFs (what a
    # document of average length holding each word once scores), clipped at 1; the cosine as (1 + cos) / 2.
    fusions["bounded, keyword / sum idf, w=0.5"] = lambda d, k, b: fuse(d, k, Fusion("bounded", 0.5), b / 2.2)
    fusions["bounded, dense (1+cos)/2, w=0.5"] = lambda d, k, b: fuse(
        [(doc, (1 + s) / 2) for doc, s in d], k, Fusion("bounded", 0.5), b
    )
    return fusions


def tm2c2(dense: list, keyword: list, weight: float) -> list[tuple[int, float]]:
    """Bruch et al. 2023's TM2C2: each side scaled from its theoretical minimum (cosine -1, BM25 0) to its list's
    observed maximum, combined convexly; a side whose list lacks a document gives it 0."""
    parts = []
    for side, low in ((dense, -1.0), (keyword, 0.0)):
        high = max((score for _, score in side), default=low)
        parts.append({doc: (score - low) / (high - low) if high > low else 1.0 for doc, score in side})
    docs = dict.fromkeys([doc for doc, _ in dense] + [doc for doc, _ in keyword])
    scores = {doc: weight * parts[0].get(doc, 0.0) + (1 - weight) * parts[1].get(doc, 0.0) for doc in docs}
    return sorted(scores.items(), key=lambda item: -item[1])


def sides(engine: SearchEngine, texts: list[str], names: dict[int, str]) -> list[dict]:
    """Per query: its dense and keyword candidates (id, score) and its BM25 bound."""
    out = []
    for start in range(0, len(texts), 32):
        batch = texts[start : start + 32]
        dense = engine.search_batch(batch, READ, mode="dense")
        keyword = engine.search_batch(batch, READ, mode="keyword")
        for dense_hits, keyword_hits in zip(dense, keyword):
            names.update((hit.id, hit.external_id) for hit in dense_hits + keyword_hits)
            bound = next((h.keyword_score / h.score for h in keyword_hits if h.score > 0), 0.0)
            out.append(
                {
                    "dense": [(hit.id, hit.score) for hit in dense_hits],
                    "keyword": [(hit.id, hit.keyword_score) for hit in keyword_hits],
                    "keyword_share": [(hit.id, hit.score) for hit in keyword_hits],
                    "bound": bound,
                }
            )
        print(f"  {start + len(batch)}/{len(texts)}", file=sys.stderr, end="\r")
    return out


def without_own(ranked: list[tuple[int, float]], query_id: str, names: dict[int, str]) -> list[tuple[int, float]]:
    return [(doc, score) for doc, score in ranked if names[doc] != query_id]


def rankings(searched: list[dict], query_ids: list[str], names: dict[int, str]) -> dict[str, list[list]]:
    """Every mode's and fusion's ranking per query, the query's own id dropped."""
    out: dict[str, list[list]] = {
        "dense": [without_own(s["dense"], q, names) for s, q in zip(searched, query_ids)],
        "keyword BM25 (before)": [without_own(s["keyword"], q, names) for s, q in zip(searched, query_ids)],
        "keyword bounded": [without_own(s["keyword_share"], q, names) for s, q in zip(searched, query_ids)],
    }
    for name, fusion in settings().items():
        out[f"hybrid {name}"] = [
            without_own(fusion(s["dense"][:DEPTH], s["keyword"][:DEPTH], s["bound"])[:READ], q, names)
            for s, q in zip(searched, query_ids)
        ]
    return out


def auc(answerable: list[float], unanswerable: list[float]) -> float:
    """ROC AUC of a score that should be higher for answerable queries: the Mann-Whitney U over the pairs."""
    return float(mannwhitneyu(answerable, unanswerable).statistic) / (len(answerable) * len(unanswerable))


def top_score(ranked: list[tuple[int, float]]) -> float:
    return ranked[0][1] if ranked else 0.0


def evaluate(engines: dict[str, SearchEngine], data: Path, halves_dir: Path, check: int) -> dict:
    queries, halves, qrels = {}, {}, {}
    for name, engine in engines.items():
        ids, texts = read_queries(data / name / "queries.jsonl")
        queries[name] = dict(zip(ids, texts))
        split(data / name / "qrels_test.tsv", halves_dir / name)
        for half in ("tune", "heldback"):
            judged = read_qrels(halves_dir / name / f"qrels_{half}.tsv", ids, engine.external_ids())
            halves[(name, half)] = [q for q in ids if q in judged]
            qrels[(name, half)] = judged
    results: dict = {"queries": {f"{n} {h}": len(q) for (n, h), q in halves.items()}, "sets": {}}
    tops: dict = {}
    for name, engine in engines.items():
        other = next(n for n in engines if n != name)
        names: dict[int, str] = {}
        set_result: dict = {"documents": len(engine)}
        for half in ("tune", "heldback"):
            own_ids, cross_ids = halves[(name, half)], halves[(other, half)]
            print(f"{name} {half}: {len(own_ids)} own queries, {len(cross_ids)} of {other}", file=sys.stderr)
            own = rankings(sides(engine, [queries[name][q] for q in own_ids], names), own_ids, names)
            cross = rankings(sides(engine, [queries[other][q] for q in cross_ids], names), cross_ids, names)
            if half == "tune" and check:
                expected = [
                    [doc for doc, _ in ranked[:10]]
                    for ranked in own[f"hybrid bounded w={DEFAULT_FUSION.dense_weight}"][:check]
                ]
                got = engine.search_batch([queries[name][q] for q in own_ids[:check]], 11, mode="hybrid")
                got_ids = [[h.id for h in hits if h.external_id != q][:10] for hits, q in zip(got, own_ids[:check])]
                set_result["check_default_fusion_equals_engine"] = got_ids == expected
            measured = {}
            for method in own:
                kept = {q: [names[doc] for doc, _ in ranked][:100] for q, ranked in zip(own_ids, own[method])}
                own_tops = [top_score(ranked) for ranked in own[method]]
                cross_tops = [top_score(ranked) for ranked in cross[method]]
                measured[method] = {
                    "ndcg@10": round(score_rankings(kept, qrels[(name, half)], len(engine)).ndcg_at_10, 4),
                    "auc": round(auc(own_tops, cross_tops), 4),
                    "top_score_median_answerable": round(sorted(own_tops)[len(own_tops) // 2], 4),
                    "top_score_median_unanswerable": round(sorted(cross_tops)[len(cross_tops) // 2], 4),
                }
                tops[(name, half, method)] = (own_tops, cross_tops)
            set_result[half] = measured
        results["sets"][name] = set_result
    results["min_score"] = thresholds(tops, list(engines))
    return results


def balanced(own: list[float], cross: list[float], threshold: float) -> tuple[float, float]:
    """(share of answerable queries that keep a hit, share of unanswerable ones left with none) at `threshold`."""
    return (
        sum(score >= threshold for score in own) / len(own),
        sum(score < threshold for score in cross) / len(cross),
    )


def thresholds(tops: dict, names: list[str]) -> dict:
    """Per mode: the min-score threshold that maximises the mean of (kept, emptied) over both indexes' tune halves,
    and what it keeps and empties on each index's tune and held-back halves."""
    out = {}
    for method in (
        "dense",
        "keyword bounded",
        f"hybrid bounded w={DEFAULT_FUSION.dense_weight}",
        "hybrid minmax w=0.5 (before)",
    ):
        candidates = sorted({round(s, 3) for name in names for s in tops[(name, "tune", method)][0]})

        def tune_score(threshold: float, method: str = method) -> float:
            pairs = [balanced(*tops[(name, "tune", method)], threshold) for name in names]
            return sum(kept + emptied for kept, emptied in pairs) / (2 * len(pairs))

        best = max(candidates, key=tune_score)
        out[method] = {
            "threshold": best,
            "tune_balanced_accuracy": round(tune_score(best), 4),
            **{
                f"{name} {half}": dict(
                    zip(
                        ("answerable_kept", "unanswerable_emptied"),
                        map(lambda x: round(x, 4), balanced(*tops[(name, half, method)], best)),
                    )
                )
                for name in names
                for half in ("tune", "heldback")
            },
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", action="append", required=True, help="NAME=DIR, NAME nfcorpus or arguana")
    parser.add_argument("--data", type=Path, default=DATA / "retrieval")
    parser.add_argument("--check", type=int, default=30, help="Queries whose default-fusion ranking is checked.")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "retrieval" / "results" / "score_fusion.json")
    args = parser.parse_args()
    engines = {}
    for item in args.index:
        name, _, directory = item.partition("=")
        engines[name] = SearchEngine.open(directory)
    if len(engines) != 2:
        parser.error(
            "give two indexes (--index nfcorpus=DIR --index arguana=DIR): each set's queries are the other's unanswerable ones"
        )
    started, load_before = time.perf_counter(), os.getloadavg()
    with tempfile.TemporaryDirectory() as halves:
        measured = evaluate(engines, args.data, Path(halves), args.check)
    results = {
        **run_record(load_before),
        "seconds": round(time.perf_counter() - started, 1),
        "default_fusion": DEFAULT_FUSION.describe(),
        **measured,
    }
    write_results(args.out, results)
    print(json.dumps(results["min_score"], indent=2))


if __name__ == "__main__":
    main()
