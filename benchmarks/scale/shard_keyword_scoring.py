"""A cluster shard's keyword scoring (issue 41): `global_bm25.bm25_scores`, which scores a shard's rows with term
statistics summed over the shards (dfs_query_then_fetch), timed in this checkout against an older revision's, in one
run, on the same store and the same queries, so the ratio holds on a loaded machine.

The store is the product's own DocumentStore (indexer/tables/store.py), filled as a build fills it with the documents
cluster_check.py and cluster_fanout.py index (NFCorpus's corpus, then ArguAna's, then the shared Wikipedia
sentences: real text, long abstracts and short sentences), with no vectors: only the keyword index is read. With
--shards N it holds only the documents a cluster of N shards gives shard 0 (routing.shard_of), what one shard call
scores. At each step (--steps: documents of that corpus) a read-only store scores NFCorpus's judged test queries
(--queries of them) as a shard does: its own term statistics (KeywordTable.statistics), the keyword plan of each
query (cluster.merge.keyword_plan: the phrases with their IDFs) and the rows holding any phrase scored by both
implementations, alternating which goes first, each --repeats times (the least kept per query): the scores as
bm25_scores gives them, and the best 100 as a shard keeps them for a hybrid search (the older revision's shard
sorted every score in Python; this one takes bm25_arrays' arrays to shard_search.best_scored). Then the same within a
filter keeping 1 row in 7 (`ids`, as a filtered shard search passes them). Both must give the same scores (same
ids, every score within 1e-9 relative) and the same best 100; a difference stops the run. The older revision's
module is read with `git show REV:indexer/query/global_bm25.py` and loaded apart (it imports only keyword_query's
k1).

Prints and writes (--out) per step, for both parts, the median over queries of each implementation's milliseconds,
their ratio (older / this), the median of the per-query ratios, and how many rows the queries matched; and, for
scale, the median of one index's own keyword search of the best 100 on the same store (KeywordTable.search: FTS5's
bm25() ordered in SQLite, with its own statistics).

    .venv/bin/python benchmarks/scale/shard_keyword_scoring.py --steps 20000,100000 --baseline 1fa8733 \\
        --out benchmarks/scale/results/shard_keyword_scoring.json
    .venv/bin/python benchmarks/scale/shard_keyword_scoring.py --steps 20000 --shards 4 \\
        --out benchmarks/scale/results/shard_keyword_scoring_shard.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results

ROOT = Path(__file__).resolve().parents[2]
MODULE = "indexer/query/global_bm25.py"
FILTER_EVERY = 7
"""The filtered pass keeps the rows whose id is 3 modulo this (1 in 7, as a filter on one of 7 languages)."""
DEPTH = 100
"""The best the shard keeps of a side: a hybrid search's (the fusion's depth, 100 by default)."""


def older_module(revision: str) -> ModuleType:
    """global_bm25 as `revision` has it, loaded under a name of its own."""
    source = subprocess.run(
        ["git", "show", f"{revision}:{MODULE}"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    name = "global_bm25_older"
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader=None))
    sys.modules[name] = module  # dataclasses look their module up
    exec(compile(source, f"{revision}:{MODULE}", "exec"), module.__dict__)  # noqa: S102
    return module


def best_ms(action: Callable[[], object], repeats: int) -> tuple[float, object]:
    """The least milliseconds of `repeats` runs of `action`, and what it gave."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = action()
        times.append((time.perf_counter() - start) * 1000)
    return min(times), result


def same_scores(mine: dict[int, float], theirs: dict[int, float], query: str) -> None:
    if mine.keys() != theirs.keys():
        raise SystemExit(f"{query!r}: {len(mine)} rows scored here, {len(theirs)} by the older revision")
    worst = max((abs(mine[d] - theirs[d]) / max(abs(theirs[d]), 1e-12) for d in mine), default=0.0)
    if worst > 1e-9:
        raise SystemExit(f"{query!r}: scores differ by {worst:.3g} relative")


def summary(mine_ms: list[float], older_ms: list[float]) -> dict:
    """Each implementation's median and 90th percentile, the ratio of the medians (older / this) and the median of
    the per-query ratios."""
    return {
        "this_ms_median": round(statistics.median(mine_ms), 3),
        "older_ms_median": round(statistics.median(older_ms), 3),
        "ratio_of_medians": round(statistics.median(older_ms) / statistics.median(mine_ms), 2),
        "median_ratio": round(statistics.median(o / m for o, m in zip(older_ms, mine_ms)), 2),
        "this_ms_p90": round(statistics.quantiles(mine_ms, n=10)[-1], 3),
        "older_ms_p90": round(statistics.quantiles(older_ms, n=10)[-1], 3),
    }


def scoring_costs(reader, older: ModuleType, texts: list[str], repeats: int, ids: list[int] | None) -> dict:  # noqa: ANN001
    """Both implementations over every query's phrases (within `ids`, all rows when None), alternating: the scores
    as bm25_scores gives them (`scores`), and the best DEPTH as the shard takes them (`shard`: the older revision's
    shard sorted every score, this one's takes the best from bm25_arrays with shard_search.best_scored)."""
    from searchengine.indexer.query import global_bm25
    from searchengine.indexer.query.keyword_query import keyword_terms
    from searchengine.indexer.tables.keyword_table import TABLE

    from searchengine.cluster.merge import keyword_plan
    from searchengine.cluster.shard_search import best_scored

    def older_shard(*arguments: object) -> list[tuple[int, float]]:
        scores = older.bm25_scores(*arguments)
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:DEPTH]

    connection = reader.db.conn
    times: dict[str, list[float]] = {"scores": [], "older scores": [], "shard": [], "older shard": []}
    matched = []
    for number, text in enumerate(texts):
        statistics_ = reader.keyword.statistics(list(keyword_terms(text)))
        plan = keyword_plan(statistics_, text)
        if not plan.phrases:
            continue
        arguments = (connection, TABLE, plan.phrases, statistics_.average_length, ids)
        runs = {
            "scores": lambda arguments=arguments: global_bm25.bm25_scores(*arguments),
            "older scores": lambda arguments=arguments: older.bm25_scores(*arguments),
            "shard": lambda arguments=arguments: best_scored(*global_bm25.bm25_arrays(*arguments), DEPTH),
            "older shard": lambda arguments=arguments: older_shard(*arguments),
        }
        order = list(runs) if number % 2 else list(runs)[::-1]
        timed = {name: best_ms(runs[name], repeats) for name in order}
        same_scores(timed["scores"][1], timed["older scores"][1], text)
        if timed["shard"][1] != timed["older shard"][1]:
            same_scores(dict(timed["shard"][1]), dict(timed["older shard"][1]), text)  # equal but for rounding
            if [doc for doc, _ in timed["shard"][1]] != [doc for doc, _ in timed["older shard"][1]]:
                raise SystemExit(f"{text!r}: the best {DEPTH} differ from the older revision's")
        for name, (ms, _) in timed.items():
            times[name].append(ms)
        matched.append(len(timed["scores"][1]))
    costs = {
        "queries": len(matched),
        "rows_matched_median": statistics.median(matched),
        "rows_matched_max": max(matched),
        "scores": summary(times["scores"], times["older scores"]),
        f"shard_best_{DEPTH}": summary(times["shard"], times["older shard"]),
    }
    if ids is None:  # for scale: one index's own keyword search, FTS5's bm25() ordered in SQLite
        own = [best_ms(lambda text=text: reader.keyword.search(text, DEPTH), repeats)[0] for text in texts]
        costs[f"fts5_own_best_{DEPTH}_ms_median"] = round(statistics.median(own), 3)
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", default="20000,100000", help="documents of the corpus, ascending")
    parser.add_argument("--shards", type=int, default=1, help="keep the documents of shard 0 of this many")
    parser.add_argument("--baseline", default="1fa8733", help="the older revision whose bm25_scores is compared")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--out",
        type=Path,
        default=ROOT / "benchmarks" / "scale" / "results" / "shard_keyword_scoring.json",
        help="Where the JSON record goes ('-': nowhere).",
    )
    arguments = parser.parse_args()

    from searchengine.indexer.tables.store import DocumentStore

    from benchmarks.scale.cluster_check import corpus
    from searchengine.cluster.routing import shard_of
    from searchengine.engine.indexing import CHUNK

    steps = sorted(int(step) for step in arguments.steps.split(","))
    documents, judged, _ = corpus(steps[-1], arguments.data)
    queries = list(judged.values())[: arguments.queries]
    older = older_module(arguments.baseline)
    record: dict = {
        **run_record(os.getloadavg()),
        "baseline": arguments.baseline,
        "documents": "NFCorpus, then ArguAna, then Wikipedia sentences (cluster_check.corpus)",
        "queries": f"the first {len(queries)} of NFCorpus's judged test queries",
        "shard": f"0 of {arguments.shards}",
        "steps": [],
    }
    work = Path(tempfile.mkdtemp(prefix="shard-keyword-"))
    try:
        path = work / "documents.db"
        writer = DocumentStore(path, writable=True)
        writer.start_build()
        written = 0
        for step in steps:
            kept = [d for d in documents[written:step] if shard_of(d.external_id, arguments.shards) == 0]
            for start in range(0, len(kept), CHUNK):
                writer.add(kept[start : start + CHUNK])
            written = step
            with writer.db.atomic():
                writer.finish_build()
            reader = DocumentStore(path)
            reader.read_snapshot()
            try:
                rows = reader.count()
                ids = list(range(3, rows, FILTER_EVERY))
                entry = {
                    "documents": step,
                    "rows": rows,
                    "all_rows": scoring_costs(reader, older, queries, arguments.repeats, None),
                    f"one_row_in_{FILTER_EVERY}": scoring_costs(reader, older, queries, arguments.repeats, ids),
                    "load_after": os.getloadavg(),
                }
            finally:
                reader.close()
            record["steps"].append(entry)
            print(json.dumps(entry), flush=True)
            if str(arguments.out) != "-":
                write_results(arguments.out, record)
            if step != steps[-1]:
                writer.start_build()
        writer.close()
        record["machine"]["load_after"] = os.getloadavg()
        if str(arguments.out) != "-":
            write_results(arguments.out, record)
        print(json.dumps(record), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
