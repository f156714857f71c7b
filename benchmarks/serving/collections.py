"""A server of collections against a server of one index (issue 43): searching one collection of a server that holds
five (all five open) against a server that holds that one alone, and the cost of loading a collection against
opening that index alone as `searchengine serve -d` does.

Five copies of one index of the example corpus (examples/corpus.txt, 330 lines, the bundled model) lie under a
folder. "search": a real `searchengine serve --collections` process over a folder of one and one over the folder of
five (each of the five searched once first, so all are open), each asked --queries queries one after another over
HTTP (searchengine.Client) after a warm-up; the two alternate for --rounds rounds, and the medians of the per-query
wall times are compared. "load": a new process times `ServedIndex(index)` (today's serve opening its index) or the
first `Collections.opened(name)` (a collection loaded on its first request), with its peak memory, alternated
for --runs runs each.

    .venv/bin/python benchmarks/serving/collections.py --out benchmarks/serving/results/collections.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`, `tests.*`
from benchmarks.harness.machine import run_record
from benchmarks.harness.results import write_results
from searchengine import Client, SearchEngine
from tests.serving import serve_process

ROOT = Path(__file__).resolve().parents[2]

QUERIES = [line.strip() for line in (ROOT / "examples" / "corpus.txt").read_text().splitlines() if line.strip()]
LOAD = """
import resource, sys, time
from pathlib import Path
started = time.perf_counter()
if sys.argv[1] == "alone":
    from searchengine.server.served_index import ServedIndex
    index = ServedIndex(Path(sys.argv[2]))
    index.reader.run(len).result()
else:
    from searchengine.server.collections import served_collections
    held = served_collections(Path(sys.argv[2]).parent)
    with held.opened(Path(sys.argv[2]).name) as index:
        index.reader.run(len).result()
print(time.perf_counter() - started, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def search_times(folder: Path, names: list[str], queries: list[str], log: Path) -> list[float]:
    """Per-query wall times of searching collection names[0] of a server of `folder`, all `names` opened first."""
    with serve_process(["--collections", str(folder), "--idle-close", "3600"], log) as url:
        client = Client(url)
        for name in names:
            client.collection(name).search("warm up", k=10)
        target = client.collection(names[0])
        for query in queries[:20]:
            target.search(query, k=10)
        times = []
        for query in queries:
            started = time.perf_counter()
            target.search(query, k=10)
            times.append(time.perf_counter() - started)
        return times


def load_once(kind: str, index: Path) -> tuple[float, float]:
    """Seconds and peak MiB of a new process that opens `index` alone or as a collection."""
    out = subprocess.run([sys.executable, "-c", LOAD, kind, str(index)], capture_output=True, text=True, check=True)
    seconds, mib = out.stdout.split()
    return float(seconds), float(mib)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "collections.json")
    args = parser.parse_args()
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="collections-bench-"))
    try:
        one, five = work / "one", work / "five"
        SearchEngine.build(str(ROOT / "examples" / "corpus.txt"), one / "c0").close()
        for number in range(5):
            shutil.copytree(one / "c0", five / f"c{number}")
        queries = (QUERIES * (args.queries // len(QUERIES) + 1))[: args.queries]
        search: dict[str, list[float]] = {"one": [], "five": []}
        for _ in range(args.rounds):
            search["one"].append(statistics.median(search_times(one, ["c0"], queries, work / "one.log")))
            names = [f"c{number}" for number in range(5)]
            search["five"].append(statistics.median(search_times(five, names, queries, work / "five.log")))
        load: dict[str, dict[str, list[float]]] = {kind: {"seconds": [], "peak_mib": []} for kind in ("alone", "collection")}
        for _ in range(args.runs):
            for kind in load:
                seconds, mib = load_once(kind, one / "c0")
                load[kind]["seconds"].append(round(seconds, 4))
                load[kind]["peak_mib"].append(round(mib, 1))
        one_ms, five_ms = (statistics.median(search[key]) * 1000 for key in ("one", "five"))
        summary = {
            "search_median_ms": {"one_collection": round(one_ms, 3), "five_collections": round(five_ms, 3)},
            "search_ratio_five_over_one": round(five_ms / one_ms, 3),
            "load_median_s": {kind: statistics.median(values["seconds"]) for kind, values in load.items()},
            "load_peak_mib_median": {kind: statistics.median(values["peak_mib"]) for kind, values in load.items()},
        }
        record = {
            **run_record(load_before),
            "corpus": "examples/corpus.txt",
            "queries_per_round": args.queries,
            "search_round_medians_s": search,
            "load_runs": load,
            "summary": summary,
        }
        write_results(args.out, record)
        print(json.dumps(summary, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
