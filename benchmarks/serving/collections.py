"""A server of collections against a server of one index (issue 43): searching one collection of a server that holds
five (all five open) against a server that holds that one alone, and the cost of loading a collection against
opening that index alone as `searchengine serve -d` does.

Five copies of one index of the example corpus (examples/corpus.txt, 330 lines, the bundled model) lie under a
folder. "search": three real `searchengine serve` processes run at once: `-d` over the index ("index"),
`--collections` over a folder of that one ("one"), and `--collections` over the folder of five ("five": each of
the five searched once first, so all are open). Each query of a round goes to all three one after another over HTTP
(searchengine.Client), in each of --modes (hybrid, the default; keyword, which encodes nothing, so what the server
itself adds shows), in an order that rotates from query to query and round to round (benchmarks/harness/rounds),
so load from other work falls on all three alike; each round's median per-query wall time is kept, and the medians
of the rounds' medians (and the median of the rounds' ratios) are compared. "load": a new process times `ServedIndex(index)` (today's serve opening its
index) or the first `Collections.opened(name)` (a collection loaded on its first request), with its peak memory,
the two alternated for --runs runs each.

    .venv/bin/python benchmarks/serving/collections.py --out benchmarks/serving/results/collections.json
"""

from __future__ import annotations

import argparse
import contextlib
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
from benchmarks.harness.rounds import rotation
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


SERVERS = ("index", "one", "five")
"""The servers compared: `serve -d` over the index, `serve --collections` over a folder of it, and of five copies."""


def search_rounds(
    one: Path, five: Path, queries: list[str], rounds: int, modes: list[str], work: Path
) -> dict[str, dict[str, list[float]]]:
    """Each round's median per-query wall time of searching the index on each of SERVERS in each of `modes`
    (mode -> server -> one median per round), the three asked each query in turn."""
    names = [path.name for path in sorted(five.iterdir())]
    with contextlib.ExitStack() as stack:
        urls = {
            "index": stack.enter_context(serve_process(["-d", str(one / names[0])], work / "index.log")),
            "one": stack.enter_context(serve_process(["--collections", str(one), *KEEP_OPEN], work / "one.log")),
            "five": stack.enter_context(serve_process(["--collections", str(five), *KEEP_OPEN], work / "five.log")),
        }
        targets = {"index": Client(urls["index"]), **{k: Client(urls[k]).collection(names[0]) for k in ("one", "five")}}
        for name in names:  # all five open
            Client(urls["five"]).collection(name).search("warm up", k=10)
        for target in targets.values():
            for query in queries[:20]:
                for mode in modes:
                    target.search(query, k=10, mode=mode)
        medians = {mode: {server: [] for server in SERVERS} for mode in modes}
        for round_number in range(rounds):
            times = {mode: {server: [] for server in SERVERS} for mode in modes}
            for number, query in enumerate(queries):
                for mode in modes:
                    for server in rotation(SERVERS, round_number + number):
                        started = time.perf_counter()
                        targets[server].search(query, k=10, mode=mode)
                        times[mode][server].append(time.perf_counter() - started)
            for mode, by_server in times.items():
                for server, taken in by_server.items():
                    medians[mode][server].append(statistics.median(taken))
        return medians


KEEP_OPEN = ["--idle-close", "3600"]


def load_once(kind: str, index: Path) -> tuple[float, float]:
    """Seconds and peak MiB of a new process that opens `index` alone or as a collection."""
    out = subprocess.run([sys.executable, "-c", LOAD, kind, str(index)], capture_output=True, text=True, check=True)
    seconds, mib = out.stdout.split()
    return float(seconds), float(mib)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument(
        "--modes", nargs="+", default=["hybrid", "keyword"],
        help="modes each query is asked in (keyword: no encoding, so the server's own cost shows)",
    )
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
        search = search_rounds(one, five, queries, args.rounds, args.modes, work)
        load: dict[str, dict[str, list[float]]] = {kind: {"seconds": [], "peak_mib": []} for kind in ("alone", "collection")}
        for run in range(args.runs):
            for kind in rotation(list(load), run):
                seconds, mib = load_once(kind, one / "c0")
                load[kind]["seconds"].append(round(seconds, 4))
                load[kind]["peak_mib"].append(round(mib, 1))
        summary: dict[str, object] = {}
        for mode, by_server in search.items():
            ms = {server: statistics.median(by_server[server]) * 1000 for server in SERVERS}
            ratios = [five / one for five, one in zip(by_server["five"], by_server["one"])]
            ratios_index = [five / index for five, index in zip(by_server["five"], by_server["index"])]
            summary[mode] = {
                "search_median_ms": {
                    "one_index_server": round(ms["index"], 3),
                    "one_collection": round(ms["one"], 3),
                    "five_collections": round(ms["five"], 3),
                },
                "ratio_five_over_one_collection": round(ms["five"] / ms["one"], 3),
                "ratio_five_over_one_index_server": round(ms["five"] / ms["index"], 3),
                "median_of_round_ratios_five_over_one_collection": round(statistics.median(ratios), 3),
                "median_of_round_ratios_five_over_one_index_server": round(statistics.median(ratios_index), 3),
            }
        summary["load_median_s"] = {kind: statistics.median(values["seconds"]) for kind, values in load.items()}
        summary["load_peak_mib_median"] = {kind: statistics.median(values["peak_mib"]) for kind, values in load.items()}
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
