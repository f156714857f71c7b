"""Latency of one-document deletes in process, this checkout against an older one, alternated in rounds.

Each round copies --index (an index folder, e.g. the 100,000-document one `write_cost.py --keep` leaves in its
--work folder) once per system and deletes --deletes documents one at a time through `SearchEngine.delete` (its
merges included), in a fresh process per system. The older checkout (--baseline, a git worktree) is imported
through the package directory of symlinks write_cost.py makes (`baseline_path`). Prints and writes (--out) the
median and mean milliseconds of each system per round, and the ratios of their medians over all rounds.

    git worktree add --detach /work/base-f24614a f24614a
    .venv/bin/python benchmarks/write_cost.py --sizes 100000 --systems searchengine --keep --work /tmp/wc_keep \\
        --cli-runs 0 --no-fsync-probe --runs 1 --out /tmp/wc_keep.json
    .venv/bin/python benchmarks/delete_latency.py --index /tmp/wc_keep/searchengine-100000 \\
        --baseline /work/base-f24614a --out benchmarks/results/delete_latency.json
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

from machine_info import cpu_name
from write_cost import baseline_path, system_env

ROOT = Path(__file__).resolve().parents[1]


def deletes(index: Path, count: int) -> list[float]:
    """Seconds of each of `count` one-document deletes (ids 0, 1, …) on a copy of `index`, in this process."""
    from searchengine.engine.search_engine import SearchEngine

    with tempfile.TemporaryDirectory() as work:
        copy = Path(work) / "index"
        shutil.copytree(index, copy)
        engine = SearchEngine.open(copy)
        seconds = []
        for number in range(count):
            started = time.perf_counter()
            engine.delete([number])
            seconds.append(time.perf_counter() - started)
        engine.close()
    return seconds


def measure(system: str, index: Path, count: int, baseline: Path | None, shim: Path) -> list[float]:
    env = system_env(system, baseline, shim)
    command = [sys.executable, __file__, "--measure", "--index", str(index), "--deletes", str(count)]
    answer = subprocess.run(command, env=env, check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(answer.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", type=Path, required=True, help="an index folder (copied, never changed)")
    parser.add_argument("--baseline", type=Path, help="an older checkout to compare with")
    parser.add_argument("--deletes", type=int, default=60, help="deletes per system and round (default 60)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, systems alternating (default 3)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(deletes(args.index, args.deletes)))
        return
    systems = ["searchengine", "baseline"] if args.baseline else ["searchengine"]
    with tempfile.TemporaryDirectory() as work:
        shim = baseline_path(args.baseline, Path(work)) if args.baseline else Path(work)
        rounds = []
        for number in range(args.rounds):
            row = {}
            for system in systems if number % 2 == 0 else systems[::-1]:
                ms = [1000 * s for s in measure(system, args.index, args.deletes, args.baseline, shim)]
                row[system] = {"median_ms": round(statistics.median(ms), 2), "mean_ms": round(statistics.mean(ms), 2)}
            print(
                f"round {number + 1}: "
                + ", ".join(f"{s} median {v['median_ms']} mean {v['mean_ms']} ms" for s, v in row.items())
            )
            rounds.append(row)
    result = {"machine": {"cpu": cpu_name(), "cores": os.cpu_count()}, "index": str(args.index), "rounds": rounds}
    if args.baseline:
        for kind in ("median_ms", "mean_ms"):
            ratio = statistics.median(r["searchengine"][kind] for r in rounds) / statistics.median(
                r["baseline"][kind] for r in rounds
            )
            result[f"ratio_{kind}"] = round(ratio, 3)
            print(f"this checkout / baseline, {kind} (median over rounds): {ratio:.3f}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
