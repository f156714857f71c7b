"""A cluster shard's keyword scoring (issue 41): `global_bm25.bm25_scores`, which scores a shard's rows with term
statistics summed over the shards (dfs_query_then_fetch), timed in this checkout against an older revision's, in one
run, on the same store and the same queries, so the ratio holds on a loaded machine.

The store is the product's own DocumentStore (indexer/tables/store.py), filled as a build fills it, one real
Wikipedia sentence a row (--texts, the 100,000 shared sentences), with no vectors: only the keyword index is
read. At each step (--steps, rows) a read-only store scores NFCorpus's queries (--queries of them) as a shard of a
one-shard cluster does: its own term statistics (KeywordTable.statistics), the keyword plan of each query
(cluster.merge.keyword_plan: the phrases with their IDFs) and the rows holding any phrase scored by both
implementations, alternating which goes first, each --repeats times (the least kept per query). Then the same within
a filter keeping 1 row in 7 (`ids`, as a filtered shard search passes them). Both must give the same scores (same
ids, every score within 1e-9 relative); a difference stops the run. The older revision's module is read with
`git show REV:indexer/query/global_bm25.py` and loaded apart (it imports only keyword_query's k1).

Prints and writes (--out) per step the median over queries of each implementation's milliseconds, their ratio
(older / this), the median of the per-query ratios, and how many rows the queries matched.

    .venv/bin/python benchmarks/scale/shard_keyword_scoring.py --steps 20000,100000 --baseline 1fa8733 \\
        --out benchmarks/scale/results/shard_keyword_scoring.json
"""

from __future__ import annotations

import argparse
import gzip
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


def sentences(path: Path, count: int) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        texts = [line.strip() for line in lines if line.strip()]
    if count > len(texts):
        raise SystemExit(f"{path} has {len(texts)} sentences, fewer than {count}")
    return texts[:count]


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


def scoring_costs(reader, older: ModuleType, texts: list[str], repeats: int, ids: list[int] | None) -> dict:  # noqa: ANN001
    """Both implementations over every query's phrases (within `ids`, all rows when None), alternating."""
    from searchengine.indexer.query import global_bm25
    from searchengine.indexer.query.keyword_query import keyword_terms
    from searchengine.indexer.tables.keyword_table import TABLE

    from searchengine.cluster.merge import keyword_plan

    connection = reader.db.conn
    mine_ms, older_ms, ratios, matched = [], [], [], []
    for number, text in enumerate(texts):
        statistics_ = reader.keyword.statistics(list(keyword_terms(text)))
        plan = keyword_plan(statistics_, text)
        if not plan.phrases:
            continue
        arguments = (connection, TABLE, plan.phrases, statistics_.average_length, ids)
        runs = {
            "mine": lambda arguments=arguments: global_bm25.bm25_scores(*arguments),
            "older": lambda arguments=arguments: older.bm25_scores(*arguments),
        }
        order = ("mine", "older") if number % 2 else ("older", "mine")
        timed = {name: best_ms(runs[name], repeats) for name in order}
        same_scores(timed["mine"][1], timed["older"][1], text)
        mine_ms.append(timed["mine"][0])
        older_ms.append(timed["older"][0])
        ratios.append(timed["older"][0] / timed["mine"][0])
        matched.append(len(timed["mine"][1]))
    return {
        "queries": len(mine_ms),
        "rows_matched_median": statistics.median(matched),
        "rows_matched_max": max(matched),
        "this_ms_median": round(statistics.median(mine_ms), 3),
        "older_ms_median": round(statistics.median(older_ms), 3),
        "ratio_of_medians": round(statistics.median(older_ms) / statistics.median(mine_ms), 2),
        "median_ratio": round(statistics.median(ratios), 2),
        "this_ms_p90": round(statistics.quantiles(mine_ms, n=10)[-1], 3),
        "older_ms_p90": round(statistics.quantiles(older_ms, n=10)[-1], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", default="20000,100000", help="rows to score at, ascending")
    parser.add_argument("--baseline", default="1fa8733", help="the older revision whose bm25_scores is compared")
    parser.add_argument("--texts", type=Path, default=DATA / "unsup" / "wiki_sentences.txt.gz")
    parser.add_argument("--query-file", type=Path, default=DATA / "retrieval" / "nfcorpus" / "queries.jsonl")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "scale" / "results" / "shard_keyword_scoring.json"
    )
    arguments = parser.parse_args()

    from searchengine.indexer.tables.store import Document, DocumentStore

    from searchengine.engine.indexing import CHUNK

    steps = sorted(int(step) for step in arguments.steps.split(","))
    texts = sentences(arguments.texts, steps[-1])
    lines = arguments.query_file.read_text(encoding="utf-8").splitlines()
    queries = [json.loads(line)["text"] for line in lines[: arguments.queries]]
    older = older_module(arguments.baseline)
    record: dict = {**run_record(os.getloadavg()), "baseline": arguments.baseline, "steps": []}
    work = Path(tempfile.mkdtemp(prefix="shard-keyword-"))
    try:
        path = work / "documents.db"
        writer = DocumentStore(path, writable=True)
        writer.start_build()
        written = 0
        for step in steps:
            while written < step:
                count = min(CHUNK, step - written)
                writer.add([Document(texts[n], "wiki.txt", n + 1) for n in range(written, written + count)])
                written += count
            with writer.db.atomic():
                writer.finish_build()
            reader = DocumentStore(path)
            reader.read_snapshot()
            try:
                ids = list(range(3, step, FILTER_EVERY))
                entry = {
                    "rows": step,
                    "all_rows": scoring_costs(reader, older, queries, arguments.repeats, None),
                    f"one_row_in_{FILTER_EVERY}": scoring_costs(reader, older, queries, arguments.repeats, ids),
                    "load_after": os.getloadavg(),
                }
            finally:
                reader.close()
            record["steps"].append(entry)
            print(json.dumps(entry), flush=True)
            write_results(arguments.out, record)
            if step != steps[-1]:
                writer.start_build()
        writer.close()
        record["machine"]["load_after"] = os.getloadavg()
        write_results(arguments.out, record)
        print(json.dumps(record), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
