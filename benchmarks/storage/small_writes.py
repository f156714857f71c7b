"""Latency of one-document writes in process (deletes or adds, merges included), this checkout against an older
one, alternated in rounds; for adds also what the merges copied, the segments left and a search's latency after.

Each round copies --index (an index folder, e.g. the 100,000-document one `write_cost.py --keep` leaves in its
--work folder) once per system and writes --writes documents one at a time in a fresh process per system:
- `--write delete`: deletes ids 0, 1, … through `SearchEngine.delete` (its merges included);
- `--write add`: adds one Wikipedia sentence at a time (from --texts, default ../shared/data/unsup) through
  `SearchEngine.add(merge=False)` and then `SearchEngine.merge()`, the two timed together (what `add` does), and
  counts the vectors those merges wrote; after the writes, the segments left and the median of --queries dense
  searches (k=10, the first sentences as queries, after one warm-up search).
The older checkout (--baseline, a git worktree) is imported through the package directory of symlinks
write_cost.py makes (`baseline_path`). Prints and writes (--out) each system's figures per round, and the ratios of
their medians over all rounds.

    git worktree add --detach ../base-f24614a f24614a
    .venv/bin/python benchmarks/storage/write_cost.py --sizes 100000 --systems searchengine --keep --work /tmp/wc_keep \\
        --cli-runs 0 --no-fsync-probe --runs 1 --out /tmp/wc_keep.json
    .venv/bin/python benchmarks/storage/small_writes.py --index /tmp/wc_keep/searchengine-100000 \\
        --baseline ../base-f24614a --out benchmarks/storage/results/delete_latency.json
    .venv/bin/python benchmarks/storage/small_writes.py --write add --writes 1000 --index /tmp/wc_keep/searchengine-100000 \\
        --baseline /work/base-cfe6784 --out benchmarks/storage/results/small_adds.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.datasets.data_folder import DATA
from benchmarks.harness.environments import baseline_path, system_env
from benchmarks.harness.machine import machine_record
from benchmarks.harness.results import write_results

ROOT = Path(__file__).resolve().parents[2]


def sentences(path: Path, count: int) -> list[str]:
    """The first `count` lines of a (gzipped) text file of one sentence per line."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as lines:
        return [line.strip() for line, _ in zip(lines, range(count))]


def write(index: Path, kind: str, count: int, texts: Path, queries: int) -> dict:
    """On a copy of `index`, in this process: seconds of each of `count` one-document writes, and for adds the
    vectors merges wrote, the segments left and the median seconds of a dense search afterwards."""
    from searchengine.engine.search_engine import SearchEngine

    with tempfile.TemporaryDirectory() as work:
        copy = Path(work) / "index"
        shutil.copytree(index, copy)
        engine = SearchEngine.open(copy)
        seconds, copied = [], 0
        new = sentences(texts, count) if kind == "add" else []
        for number in range(count):
            started = time.perf_counter()
            if kind == "delete":
                engine.delete([number])
            else:
                engine.add([new[number]], merge=False)
                copied += sum(result.segment.vectors for result in engine.merge() if result.segment is not None)
            seconds.append(time.perf_counter() - started)
        result: dict = {"seconds": seconds}
        if kind == "add":
            engine.search(new[0], k=10, mode="dense")
            timed = []
            for query in new[:queries]:
                started = time.perf_counter()
                engine.search(query, k=10, mode="dense")
                timed.append(time.perf_counter() - started)
            result |= {
                "vectors_copied_by_merges": copied,
                "segments_left": engine.info().shards,
                "search_median_s": statistics.median(timed),
            }
        engine.close()
    return result


def measure(system: str, arguments: argparse.Namespace, shim: Path) -> dict:
    env = system_env(system, arguments.baseline, shim)
    command = [sys.executable, __file__, "--measure", "--index", str(arguments.index), "--write", arguments.write]
    command += ["--writes", str(arguments.writes), "--texts", str(arguments.texts), "--queries", str(arguments.queries)]
    answer = subprocess.run(command, env=env, check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(answer.stdout.strip().splitlines()[-1])


def figures(measured: dict) -> dict:
    """One system's figures in one round, in milliseconds."""
    ms = [1000 * s for s in measured["seconds"]]
    row = {"median_ms": round(statistics.median(ms), 2), "mean_ms": round(statistics.mean(ms), 2)}
    if "segments_left" in measured:
        row |= {
            "p99_ms": round(statistics.quantiles(ms, n=100)[98], 2) if len(ms) > 1 else row["median_ms"],
            "vectors_copied_by_merges": measured["vectors_copied_by_merges"],
            "segments_left": measured["segments_left"],
            "search_median_ms": round(1000 * measured["search_median_s"], 2),
        }
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True, help="an index folder (copied, never changed)")
    parser.add_argument("--baseline", type=Path, help="an older checkout to compare with")
    parser.add_argument("--write", choices=("delete", "add"), default="delete", help="what each write does")
    parser.add_argument("--writes", "--deletes", type=int, default=60, help="writes per system and round (60)")
    parser.add_argument("--texts", type=Path, default=DATA / "unsup" / "wiki_sentences.txt.gz", help="for adds")
    parser.add_argument("--queries", type=int, default=50, help="searches timed after the adds (default 50)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, systems alternating (default 3)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(write(args.index, args.write, args.writes, args.texts, args.queries)))
        return
    systems = ["searchengine", "baseline"] if args.baseline else ["searchengine"]
    with tempfile.TemporaryDirectory() as work:
        shim = baseline_path(args.baseline, Path(work)) if args.baseline else Path(work)
        rounds = []
        for number in range(args.rounds):
            row = {}
            for system in systems if number % 2 == 0 else systems[::-1]:
                row[system] = figures(measure(system, args, shim))
            print(f"round {number + 1}: " + json.dumps(row))
            rounds.append(row)
    result = {
        "machine": machine_record(load_after=os.getloadavg()),
        "index": str(args.index),
        "write": args.write,
        "writes": args.writes,
        "rounds": rounds,
    }
    if args.baseline:
        for kind in rounds[0]["searchengine"]:
            ratio = statistics.median(r["searchengine"][kind] for r in rounds) / max(
                statistics.median(r["baseline"][kind] for r in rounds), 1e-9
            )
            result[f"ratio_{kind}"] = round(ratio, 3)
            print(f"this checkout / baseline, {kind} (median over rounds): {ratio:.3f}")
    if args.out:
        write_results(args.out, result)


if __name__ == "__main__":
    main()
