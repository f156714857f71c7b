"""The time `searchengine serve`'s /search route takes outside the search itself (issue 41), this checkout against
an older one (--baseline), in process, alternated in rounds.

Each round runs each checkout in a fresh process (the older one imported through the package directory of symlinks
that `harness.environments.baseline_path` makes), in an order that rotates from round to round. A process writes the
test suite's tiny model (tests/conftest.py), indexes 240 short documents with it (the suite's 12 sentences, 20 times
each with a note number, an id and metadata: the search costs little, so the route's own part shows), makes the app
(create_app) and sends --requests POST /search of one query with k 10 in each mode through httpx's ASGI transport,
after --warmup. It times the app (from its ASGI call to its return; the client's own time left out) and, apart, the
search (from the reader's being handed the queries to its future's result, by wrapping ServedIndex.reader.search):
the route's own time is the difference, taken request by request. It also takes the CPU time of the thread that runs
the app (and the client) per request: the search runs on a reader thread, so this is the route's work and the
client's, the same in both checkouts, without the waiting a loaded machine adds. Prints and writes (--out) each
checkout's medians by mode over all rounds, the ratios, and the route's own time round by round.

    mkdir -p /tmp/base-main && git archive main | tar -x -C /tmp/base-main
    .venv/bin/python benchmarks/serving/route_overhead.py --baseline /tmp/base-main \\
        --out benchmarks/serving/results/route_overhead.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.harness.environments import ROOT, baseline_path, system_env
from benchmarks.harness.machine import command_line, machine_record
from benchmarks.harness.results import write_results
from benchmarks.harness.rounds import rotation

MODES = ("dense", "keyword", "hybrid")
SYSTEMS = ("baseline", "searchengine")
QUERY = "the cat sat on the mat note"
"""Found by every mode: each of the 20 copies of "the cat sat on the mat" holds all its words."""

WORKER = r"""
import asyncio, json, os, statistics, sys, time
from pathlib import Path

import searchengine

code = Path(os.environ["WRITE_COST_CODE"]).resolve()
if code not in Path(searchengine.__file__).resolve().parents:
    sys.exit(f"imported searchengine from {searchengine.__file__}, not from {code}")
root, work, requests, warmup, query = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
modes = sys.argv[6].split(",")
sys.path.append(str(root))  # tests.conftest: the tiny model

import httpx
from searchengine.encoding.encoder import Encoder
from searchengine.engine.search_engine import SearchEngine
from searchengine.indexer.tables.store import Document
from searchengine.server.app import create_app
from searchengine.server.served_index import ServedIndex
from tests.conftest import SENTENCES, write_tiny_model

encoder = Encoder(write_tiny_model(work / "model"), precision="fp32")
documents = [
    Document(f"{text} note {n}", "bench.jsonl", 20 * i + n, {"n": n, "lang": "en"}, f"doc-{i}-{n}")
    for i, text in enumerate(SENTENCES) for n in range(20)
]
SearchEngine.build(documents, work / "index", encoder=encoder).close()
served = ServedIndex(work / "index", encoder=encoder)
app = create_app(served)
searched = []
search = served.reader.search


def timed_search(queries, options):
    started = time.perf_counter()
    future = search(queries, options)
    future.add_done_callback(lambda _: searched.append(time.perf_counter() - started))
    return future


served.reader.search = timed_search
in_app = []


async def timed_app(scope, receive, send):
    started = time.perf_counter()
    await app(scope, receive, send)
    in_app.append(time.perf_counter() - started)


async def run():
    measured = {}
    transport = httpx.ASGITransport(app=timed_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        for mode in modes:
            body = {"queries": [query], "k": 10, "mode": mode}
            for _ in range(warmup):
                answer = await client.post("/search", json=body)
            hits = len(answer.json()["results"][0]["hits"])
            if answer.status_code != 200 or hits != 10:
                sys.exit(f"{mode}: {answer.status_code}, {hits} hits: {answer.text[:300]}")
            in_app.clear()
            searched.clear()
            cpu = time.thread_time()
            for _ in range(requests):
                await client.post("/search", json=body)
            cpu = time.thread_time() - cpu
            measured[mode] = {
                "app_ms": 1000 * statistics.median(in_app),
                "search_ms": 1000 * statistics.median(searched),
                "route_ms": 1000 * statistics.median(a - s for a, s in zip(in_app, searched)),
                "loop_cpu_ms": 1000 * cpu / requests,
            }
    return measured


print(json.dumps(asyncio.run(run())))
served.close()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--baseline", type=Path, required=True, help="the older checkout (its files, as git archive gives)"
    )
    parser.add_argument("--rounds", type=int, default=4, help="rounds; each runs both checkouts once (default 4)")
    parser.add_argument("--requests", type=int, default=500, help="timed requests per mode and process (default 500)")
    parser.add_argument("--warmup", type=int, default=50, help="requests per mode before the timed ones (default 50)")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args()
    if not (args.baseline / "searchengine").is_dir():
        sys.exit(f"--baseline {args.baseline} holds no searchengine/: give a checkout of the project")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="route-overhead-") as scratch:
        work = Path(scratch)
        shim = baseline_path(args.baseline, work)
        runs: dict[str, list[dict[str, dict[str, float]]]] = {system: [] for system in SYSTEMS}
        for round_number in range(args.rounds):
            for system in rotation(SYSTEMS, round_number):
                folder = work / f"{system}-{round_number}"
                folder.mkdir()
                command = [
                    sys.executable, "-c", WORKER, str(ROOT), str(folder), str(args.requests), str(args.warmup), QUERY,
                    ",".join(MODES),
                ]  # fmt: skip
                env = system_env(system, args.baseline, shim)
                done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=work)  # not the checkout's
                if done.returncode:
                    sys.exit(f"the {system} process failed:\n{done.stderr[-3000:]}")
                runs[system].append(json.loads(done.stdout.strip().splitlines()[-1]))
                print(f"round {round_number + 1} {system}: {runs[system][-1]}", file=sys.stderr)
    medians = {
        system: {
            mode: {part: round(statistics.median(run[mode][part] for run in done), 3) for part in done[0][mode]}
            for mode in MODES
        }
        for system, done in runs.items()
    }
    record = {
        "command": command_line(),
        "machine": machine_record(load_before=load_before, load_after=os.getloadavg()),
        "baseline": str(args.baseline),
        "rounds": args.rounds,
        "requests": args.requests,
        "median_of_rounds_ms": medians,
        "route_ratio_this_over_baseline": {
            mode: round(medians["searchengine"][mode]["route_ms"] / medians["baseline"][mode]["route_ms"], 3)
            for mode in MODES
        },
        "loop_cpu_ratio_this_over_baseline": {
            mode: round(medians["searchengine"][mode]["loop_cpu_ms"] / medians["baseline"][mode]["loop_cpu_ms"], 3)
            for mode in MODES
        },
        "route_ms_by_round": {
            system: {mode: [round(run[mode]["route_ms"], 3) for run in done] for mode in MODES}
            for system, done in runs.items()
        },
    }
    if args.out:
        write_results(args.out, record)
    print(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
