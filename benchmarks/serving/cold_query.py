"""A cold `searchengine query`: a new process that imports the command line, opens an index, loads the query encoder
(the model's cached ONNX export), answers and exits, timed by wall clock; this checkout against an older one
(--baseline, a git worktree, imported through the package directory of symlinks `harness.environments.baseline_path`
makes), alternated run by run on the same index and the same environment. Also lists the heavy modules each
checkout's query imports.

The index is the example corpus (examples/corpus.txt, 330 lines) built by the older checkout. One warm-up run each
(it makes the ONNX export on first use), then --runs runs each, alternating. Prints and writes (--out) every run's
wall time, the medians and their ratio (this checkout / older one).

    git worktree add --detach /tmp/base-56714e6 56714e6
    .venv/bin/python benchmarks/serving/cold_query.py --baseline /tmp/base-56714e6 \\
        --out benchmarks/serving/results/cold_query_refactor.json
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

sys.path.append(str(Path(__file__).resolve().parents[2]))  # the repository root, for `benchmarks.*`
from benchmarks.harness.environments import ROOT, baseline_path, system_env
from benchmarks.harness.machine import command_line, machine_record
from benchmarks.harness.results import write_results

SYSTEMS = ("baseline", "searchengine")
HEAVY = ("torch", "transformers", "bs4", "markdown_it", "pypdf", "sqlite_utils", "pandas", "pyarrow", "fastapi")
"""Modules a query need not import; each run of the listing says which of them it did."""
QUERY = "how do I reset my password"
LISTING = (
    "import runpy, sys\n"
    "sys.argv = ['searchengine', *sys.argv[1:]]\n"
    "try:\n    runpy.run_module('searchengine', run_name='__main__')\n"
    "except SystemExit:\n    pass\n"
    "import os, pathlib\n"
    "code = pathlib.Path(os.environ['WRITE_COST_CODE']).resolve()\n"
    "assert code in pathlib.Path(sys.modules['searchengine'].__file__).resolve().parents, 'not the checkout asked for'\n"
    f"print(sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, required=True, help="the older checkout (a git worktree)")
    parser.add_argument("--runs", type=int, default=9, help="timed runs of each checkout")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "cold_query.json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cold-query-"))
    try:
        shim = baseline_path(args.baseline, work)
        envs = {system: system_env(system, args.baseline, shim) for system in SYSTEMS}
        index = work / "index"
        build = [sys.executable, "-m", "searchengine", "index", str(ROOT / "examples" / "corpus.txt"), "-d", str(index)]
        subprocess.run(build, check=True, capture_output=True, env=envs["baseline"], cwd=work)
        query = ["query", QUERY, "-d", str(index), "-k", "3"]
        imported, answers = {}, {}  # each process runs in `work`: from the checkout, `python -m` would import it
        for system in SYSTEMS:  # warm-up (the ONNX export, the digests), the modules imported, the answer
            listing = [sys.executable, "-c", LISTING, *query]
            listed = subprocess.run(listing, capture_output=True, text=True, env=envs[system], cwd=work)
            if listed.returncode:
                sys.exit(f"the {system} query failed:\n{listed.stderr[-3000:]}")
            imported[system] = json.loads(listed.stderr.strip().splitlines()[-1].replace("'", '"'))
            answers[system] = listed.stdout
        walls: dict[str, list[float]] = {system: [] for system in SYSTEMS}
        for run in range(args.runs):
            for system in SYSTEMS if run % 2 == 0 else reversed(SYSTEMS):
                start = time.perf_counter()
                done = subprocess.run(
                    [sys.executable, "-m", "searchengine", *query], capture_output=True, env=envs[system], cwd=work
                )
                walls[system].append(round(time.perf_counter() - start, 3))
                if done.returncode:
                    sys.exit(f"the {system} query failed:\n{done.stderr.decode()[-3000:]}")
        medians = {system: statistics.median(times) for system, times in walls.items()}
        record = {
            "command": command_line(),
            "machine": machine_record(load_after=os.getloadavg()),
            "baseline": str(args.baseline),
            "query": QUERY,
            "wall_s": walls,
            "median_wall_s": medians,
            "ratio_this_over_baseline": round(medians["searchengine"] / medians["baseline"], 3),
            "heavy_modules_imported": imported,
            "same_answer": answers["baseline"] == answers["searchengine"],
        }
        write_results(args.out, record)
        print(json.dumps(record, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
