"""The ingress's merge of a cluster search in process (issue 41: the ingress's own work), this checkout against an
older one (--baseline), alternated in rounds: the ranking one query's shards' candidates give
(cluster.merge.merged_ranking, in each mode) and hybrid search's fusion of two candidate lists (engine.fusion.fuse,
which one index's hybrid search runs too).

Each round runs each checkout in a fresh process (the older one imported through the package directory of symlinks
that `harness.environments.baseline_path` makes), in an order that rotates from round to round. A process makes the
same seeded candidates in both checkouts: 4 shards of 250 documents, k 10; dense and keyword mode take k candidates
a shard (what a shard sends for one side), hybrid 100 a side a shard (the fusion's depth) of which half are on both
sides; `fuse` takes 100 dense and 100 keyword candidates, 50 of them on both. It times --calls calls of each, in
--blocks blocks, and prints (and writes, --out) each checkout's medians in microseconds over all rounds and their
ratios, after checking that both checkouts rank alike.

    mkdir -p /tmp/base-main && git archive main | tar -x -C /tmp/base-main
    .venv/bin/python benchmarks/scale/merge_cost.py --baseline /tmp/base-main \\
        --out benchmarks/scale/results/merge_cost.json
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
from benchmarks.harness.environments import baseline_path, system_env
from benchmarks.harness.machine import command_line, machine_record
from benchmarks.harness.results import write_results
from benchmarks.harness.rounds import rotation

SYSTEMS = ("baseline", "searchengine")
PARTS = ("merge_dense", "merge_keyword", "merge_hybrid", "fuse")

WORKER = r"""
import json, os, random, statistics, sys, timeit
from pathlib import Path

import searchengine

code = Path(os.environ["WRITE_COST_CODE"]).resolve()
if code not in Path(searchengine.__file__).resolve().parents:
    sys.exit(f"imported searchengine from {searchengine.__file__}, not from {code}")
calls, blocks = int(sys.argv[1]), int(sys.argv[2])

from searchengine.cluster.merge import KeywordPlan, merged_ranking
from searchengine.cluster.shard_search import ShardCandidates
from searchengine.engine.fusion import fuse
from searchengine.engine.modes import DEFAULT_FUSION

SHARDS, K, DOCUMENTS = 4, 10, 250
rng = random.Random(41)


def side(ids, scale):
    return sorted(((doc, scale * rng.random()) for doc in ids), key=lambda item: (-item[1], item[0]))


def answers(sides, per_side):
    made = {}
    for shard in range(SHARDS):
        ids = rng.sample(range(DOCUMENTS), per_side * len(sides) - per_side // 2 * (len(sides) - 1))
        dense = side(ids[:per_side], 1.0) if "dense" in sides else []
        keyword = side(ids[-per_side:], 10.0) if "keyword" in sides else []
        made[shard] = ShardCandidates(
            dense, keyword, {doc: None for doc, _ in dense}, {doc: rng.random() for doc in ids},
            {doc: 10.0 * rng.random() for doc in ids},
        )
    return made


plan = KeywordPlan([], 12.0)
cases = {
    "merge_dense": (("dense",), answers(("dense",), K)),
    "merge_keyword": (("keyword",), answers(("keyword",), K)),
    "merge_hybrid": (("dense", "keyword"), answers(("dense", "keyword"), 100)),
}
work = {
    name: (lambda sides=sides, found=found: merged_ranking(sides, found, SHARDS, K, DEFAULT_FUSION, plan, 1000))
    for name, (sides, found) in cases.items()
}
ids = rng.sample(range(1000), 150)
dense_list, keyword_list = side(ids[:100], 1.0), side(ids[50:], 10.0)
work["fuse"] = lambda: fuse(dense_list, keyword_list, DEFAULT_FUSION, 12.0)
rankings = {name: [(shard, scored.id, scored.score, scored.found_by) for shard, scored in run()]
            for name, run in work.items() if name != "fuse"}
rankings["fuse"] = work["fuse"]()
measured = {
    name: 1e6 * statistics.median(timeit.timeit(run, number=calls) / calls for _ in range(blocks))
    for name, run in work.items()
}
print(json.dumps({"us": measured, "rankings": repr(rankings)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--baseline", type=Path, required=True, help="the older checkout (its files, as git archive gives)"
    )
    parser.add_argument("--rounds", type=int, default=4, help="rounds; each runs both checkouts once (default 4)")
    parser.add_argument("--calls", type=int, default=200, help="calls timed together in a block (default 200)")
    parser.add_argument("--blocks", type=int, default=15, help="blocks per part and process (default 15)")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args()
    if not (args.baseline / "searchengine").is_dir():
        sys.exit(f"--baseline {args.baseline} holds no searchengine/: give a checkout of the project")
    load_before = os.getloadavg()
    runs: dict[str, list[dict[str, float]]] = {system: [] for system in SYSTEMS}
    rankings: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="merge-cost-") as scratch:
        work = Path(scratch)
        shim = baseline_path(args.baseline, work)
        for round_number in range(args.rounds):
            for system in rotation(SYSTEMS, round_number):
                command = [sys.executable, "-c", WORKER, str(args.calls), str(args.blocks)]
                env = system_env(system, args.baseline, shim)
                done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=work)  # not the checkout's
                if done.returncode:
                    sys.exit(f"the {system} process failed:\n{done.stderr[-3000:]}")
                result = json.loads(done.stdout.strip().splitlines()[-1])
                runs[system].append(result["us"])
                rankings[system] = result["rankings"]
                print(f"round {round_number + 1} {system}: {result['us']}", file=sys.stderr)
    if rankings["baseline"] != rankings["searchengine"]:
        sys.exit("the two checkouts rank the same candidates differently: their timings do not compare")
    medians = {
        system: {part: round(statistics.median(run[part] for run in done), 1) for part in PARTS}
        for system, done in runs.items()
    }
    record = {
        "command": command_line(),
        "machine": machine_record(load_before=load_before, load_after=os.getloadavg()),
        "baseline": str(args.baseline),
        "rounds": args.rounds,
        "median_of_rounds_us": medians,
        "ratio_this_over_baseline": {
            part: round(medians["searchengine"][part] / medians["baseline"][part], 3) for part in PARTS
        },
        "us_by_round": {
            system: {part: [round(run[part], 1) for run in done] for part in PARTS} for system, done in runs.items()
        },
    }
    if args.out:
        write_results(args.out, record)
    print(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
