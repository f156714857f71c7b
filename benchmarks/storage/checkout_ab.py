"""This checkout against an older one on the same index: an add of 10 documents, a delete of 1, and a query in each
mode, timed in process and alternated in rounds, so that a change meant to keep behaviour (a refactor) can be held
to "within 5% of the older checkout".

The index is built once, by the older checkout, from NFCorpus (real documents, --data), unless --index names one;
the added documents and the queries are NFCorpus's queries (or --queries, a .jsonl of {"text": ...}). Each round copies it once
per checkout and runs each checkout in a fresh process on its own copy (the older one imported through the package
directory of symlinks that `harness.environments.baseline_path` makes), in an order that rotates from round to
round. Each process warms up (a search in every mode, one add, one delete), then times each operation --repeats
times: `SearchEngine.add` of 10 NFCorpus queries as new documents (its merges included), `SearchEngine.delete` of
one document (ids from 0 on, each once), and `SearchEngine.search(k=10)` in each mode (with --keyword-again, a
second keyword query right after the first: the same query on a store no write has just changed). Prints and writes
(--out) each checkout's medians and the ratio this checkout / older one, of the wall-clock times, of the process's
CPU times (time.process_time: on a loaded machine the wall-clock time of a 2 ms query mostly measures waiting for a
core, its CPU time much less) and of the calling thread's CPU times (time.thread_time: what other threads of the
process spend meanwhile left out). The CPU ratio is also given round by round (the ratio of the two processes'
medians in each round) as its median, least and greatest over the rounds: a spread wider than the effect measured
says the run cannot tell it.

    git worktree add --detach /tmp/base-56714e6 56714e6
    .venv/bin/python benchmarks/storage/checkout_ab.py --baseline /tmp/base-56714e6 \\
        --out benchmarks/storage/results/checkout_ab_refactor.json
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
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.environments import baseline_path, system_env
from benchmarks.harness.machine import command_line, machine_record
from benchmarks.harness.results import write_results
from benchmarks.harness.rounds import rotation

MODES = ("dense", "keyword", "hybrid")
SYSTEMS = ("baseline", "searchengine")

WORKER = r"""
import json, os, sys, time
from pathlib import Path

import searchengine
from searchengine import SearchEngine

code = Path(os.environ["WRITE_COST_CODE"]).resolve()
if code not in Path(searchengine.__file__).resolve().parents:
    sys.exit(f"imported searchengine from {searchengine.__file__}, not from {code}")
index, queries_file, repeats, first_id = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
modes = sys.argv[5].split(",")
queries = [json.loads(line)["text"] for line in Path(queries_file).read_text(encoding="utf-8").splitlines()]
again = sys.argv[6] == "again"
times = {"add10": [], "delete1": [], **{f"query_{mode}": [] for mode in modes}}
if again:
    times["query_keyword_again"] = []
cpu = {operation: [] for operation in times}
thread = {operation: [] for operation in times}


def timed(operation, call):
    start, start_cpu, start_thread = time.perf_counter(), time.process_time(), time.thread_time()
    call()
    thread[operation].append(time.thread_time() - start_thread)
    cpu[operation].append(time.process_time() - start_cpu)
    times[operation].append(time.perf_counter() - start)


with SearchEngine.open(index) as engine:
    for mode in modes:
        engine.search(queries[0], k=10, mode=mode)
    engine.add(queries[:10])
    engine.delete(ids=[first_id])
    for repeat in range(repeats):
        texts = [queries[(10 * (repeat + 1) + i) % len(queries)] for i in range(10)]
        timed("add10", lambda: engine.add(texts))
        timed("delete1", lambda: engine.delete(ids=[first_id + 1 + repeat]))
        query = queries[(7 * repeat) % len(queries)]
        for mode in modes:
            timed(f"query_{mode}", lambda: engine.search(query, k=10, mode=mode))
            if again and mode == "keyword":
                timed("query_keyword_again", lambda: engine.search(query, k=10, mode=mode))
print(json.dumps({"wall": times, "cpu": cpu, "thread": thread}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, required=True, help="the older checkout (a git worktree)")
    parser.add_argument("--data", type=Path, default=DATA, help="the data folder holding retrieval/nfcorpus")
    parser.add_argument("--index", type=Path, help="an index to copy (default: build one from NFCorpus)")
    parser.add_argument("--queries", type=Path, help='a .jsonl of {"text": ...}: the queries and added documents')
    parser.add_argument("--rounds", type=int, default=4, help="rounds; each runs both checkouts once")
    parser.add_argument("--repeats", type=int, default=20, help="timed repeats of each operation per process")
    parser.add_argument("--keyword-again", action="store_true", help="time a second keyword query after the first")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "checkout_ab.json")
    args = parser.parse_args()
    nfcorpus = args.data / "retrieval" / "nfcorpus"
    work = Path(tempfile.mkdtemp(prefix="checkout-ab-"))
    try:
        shim = baseline_path(args.baseline, work)
        built = args.index or _build_nfcorpus(nfcorpus, work, system_env("baseline", args.baseline, shim))
        queries = args.queries or nfcorpus / "queries.jsonl"
        kinds = ("wall", "cpu", "thread")
        pooled: dict[str, dict[str, dict[str, list[float]]]] = {
            kind: {system: {} for system in SYSTEMS} for kind in kinds
        }
        rounds: list[dict[str, dict[str, float]]] = []  # each round's median CPU time per system and operation
        for round_number in range(args.rounds):
            rounds.append({})
            for system in rotation(SYSTEMS, round_number):
                copy = work / f"{system}-{round_number}"
                shutil.copytree(built, copy)
                command = [
                    sys.executable, "-c", WORKER, str(copy), str(queries), str(args.repeats),
                    str(round_number * (args.repeats + 1)), ",".join(MODES), "again" if args.keyword_again else "once",
                ]  # fmt: skip
                env = system_env(system, args.baseline, shim)
                done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=work)  # not the checkout's
                if done.returncode:
                    sys.exit(f"the {system} process failed:\n{done.stderr[-3000:]}")
                measured = json.loads(done.stdout.strip().splitlines()[-1])
                for kind in kinds:
                    for operation, values in measured[kind].items():
                        pooled[kind][system].setdefault(operation, []).extend(values)
                rounds[-1][system] = {operation: statistics.median(v) for operation, v in measured["cpu"].items()}
                shutil.rmtree(copy)
        medians, cpu, thread = (
            {system: {op: statistics.median(v) * 1000 for op, v in ops.items()} for system, ops in pooled[kind].items()}
            for kind in kinds
        )
        per_round = {
            op: sorted(one["searchengine"][op] / max(one["baseline"][op], 1e-9) for one in rounds)
            for op in rounds[0]["baseline"]
        }
        record = {
            "command": command_line(),
            "machine": machine_record(load_after=os.getloadavg()),
            "baseline": str(args.baseline),
            "index": str(args.index or "NFCorpus, built by the baseline"),
            "rounds": args.rounds,
            "repeats": args.repeats,
            "median_ms": {system: {op: round(ms, 2) for op, ms in ops.items()} for system, ops in medians.items()},
            "ratio_this_over_baseline": {
                op: round(medians["searchengine"][op] / medians["baseline"][op], 3) for op in medians["baseline"]
            },
            "median_cpu_ms": {system: {op: round(ms, 2) for op, ms in ops.items()} for system, ops in cpu.items()},
            "cpu_ratio_this_over_baseline": {
                op: round(cpu["searchengine"][op] / max(cpu["baseline"][op], 1e-9), 3) for op in cpu["baseline"]
            },
            "median_thread_cpu_ms": {
                system: {op: round(ms, 2) for op, ms in ops.items()} for system, ops in thread.items()
            },
            "thread_cpu_ratio_this_over_baseline": {
                op: round(thread["searchengine"][op] / max(thread["baseline"][op], 1e-9), 3)
                for op in thread["baseline"]
            },
            "cpu_ratio_by_round": {
                op: {
                    "median": round(statistics.median(ratios), 3),
                    "least": round(ratios[0], 3),
                    "greatest": round(ratios[-1], 3),
                }
                for op, ratios in per_round.items()
            },
        }
        write_results(args.out, record)
        print(json.dumps(record, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _build_nfcorpus(nfcorpus: Path, work: Path, env: dict[str, str]) -> Path:
    """NFCorpus's documents (title and text) indexed with the default settings, in `work`."""
    corpus, built = work / "corpus.jsonl", work / "built"
    with corpus.open("w", encoding="utf-8") as out:
        for line in (nfcorpus / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            out.write(json.dumps({"text": f"{row.get('title', '')} {row['text']}".strip()}) + "\n")
    command = [sys.executable, "-m", "searchengine", "index", str(corpus), "-d", str(built)]
    subprocess.run(command, check=True, capture_output=True, env=env, cwd=work)  # from the checkout, -m imports it
    return built


if __name__ == "__main__":
    main()
