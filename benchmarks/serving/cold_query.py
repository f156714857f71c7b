"""A cold `searchengine query`: a new process that imports the command line, opens an index, loads the query encoder
(the model's cached ONNX export), answers and exits; this checkout against an older one (--baseline, a git worktree
or an extracted `git archive`, imported through the package directory of symlinks `harness.environments.baseline_path`
makes), alternated run by run on the same index and the same environment. Each run's wall time, CPU time (user +
system, which waiting for a core on a loaded machine does not count) and peak resident memory are recorded. Also
lists the heavy modules each checkout's query imports.

The index is the example corpus (examples/corpus.txt, 330 lines) built by the older checkout, or a copy of --index.
Python's bytecode is cached (in the work folder, PYTHONPYCACHEPREFIX) as an installed package has it, even where
the environment sets PYTHONDONTWRITEBYTECODE (then every module of the project would be compiled at every run);
--bytecode none measures that instead. One warm-up run each (it makes the ONNX export on first use, and the
bytecode), then --runs runs each, alternating. Prints and writes (--out) every run's times, the medians and their
ratios (this checkout / older one).

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
    parser.add_argument("--index", type=Path, help="an index to copy and query (default: the example corpus)")
    parser.add_argument("--query", default=QUERY, help="the query")
    parser.add_argument("-k", type=int, default=3, help="hits the query asks for")
    parser.add_argument(
        "--bytecode", choices=("cached", "none"), default="cached",
        help="cached: modules compiled once, as installed (default); none: compiled at every run",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "cold_query.json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cold-query-"))
    try:
        shim = baseline_path(args.baseline, work)
        envs = {system: _bytecode(system_env(system, args.baseline, shim), args.bytecode, work) for system in SYSTEMS}
        index = work / "index"
        if args.index:
            shutil.copytree(args.index, index)
        else:
            corpus = str(ROOT / "examples" / "corpus.txt")
            build = [sys.executable, "-m", "searchengine", "index", corpus, "-d", str(index)]
            subprocess.run(build, check=True, capture_output=True, env=envs["baseline"], cwd=work)
        query = ["query", args.query, "-d", str(index), "-k", str(args.k)]
        imported, answers = {}, {}  # each process runs in `work`: from the checkout, `python -m` would import it
        for system in SYSTEMS:  # warm-up (the ONNX export, the digests), the modules imported, the answer
            listing = [sys.executable, "-c", LISTING, *query]
            listed = subprocess.run(listing, capture_output=True, text=True, env=envs[system], cwd=work)
            if listed.returncode:
                sys.exit(f"the {system} query failed:\n{listed.stderr[-3000:]}")
            imported[system] = json.loads(listed.stderr.strip().splitlines()[-1].replace("'", '"'))
            answers[system] = listed.stdout
        measured: dict[str, dict[str, list[float]]] = {
            quantity: {system: [] for system in SYSTEMS} for quantity in ("wall_s", "cpu_s", "max_rss_mb")
        }
        for run in range(args.runs):
            for system in SYSTEMS if run % 2 == 0 else reversed(SYSTEMS):
                for quantity, value in _timed_run([sys.executable, "-m", "searchengine", *query], envs[system], work):
                    measured[quantity][system].append(value)
        medians = {q: {system: statistics.median(v) for system, v in runs.items()} for q, runs in measured.items()}
        record = {
            "command": command_line(),
            "machine": machine_record(load_after=os.getloadavg()),
            "baseline": str(args.baseline),
            "index": str(args.index or "examples/corpus.txt, built by the baseline"),
            "query": args.query,
            "k": args.k,
            "bytecode": args.bytecode,
            **measured,
            "median_wall_s": medians["wall_s"],
            "median_cpu_s": medians["cpu_s"],
            "median_max_rss_mb": medians["max_rss_mb"],
            "ratio_this_over_baseline": round(medians["wall_s"]["searchengine"] / medians["wall_s"]["baseline"], 3),
            "cpu_ratio_this_over_baseline": round(medians["cpu_s"]["searchengine"] / medians["cpu_s"]["baseline"], 3),
            "heavy_modules_imported": imported,
            "same_answer": answers["baseline"] == answers["searchengine"],
        }
        write_results(args.out, record)
        print(json.dumps(record, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _bytecode(env: dict[str, str], bytecode: str, work: Path) -> dict[str, str]:
    """`env` with Python's bytecode cached under `work` ("cached"), or never written ("none")."""
    env = dict(env)
    if bytecode == "cached":
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(work / "bytecode")
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    return env


def _timed_run(command: list[str], env: dict[str, str], work: Path) -> list[tuple[str, float]]:
    """Run `command` in `work`: its wall time, CPU time (user + system, from the kernel's account of the child) and
    peak resident memory; exits naming the failure if it fails."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors, env=env, cwd=work)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, so Popen does not wait for it again
        if process.returncode:
            errors.seek(0)
            sys.exit(f"{' '.join(command)} failed:\n{errors.read().decode()[-3000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    return [("wall_s", round(wall, 3)), ("cpu_s", round(cpu, 3)), ("max_rss_mb", round(usage.ru_maxrss / 1024, 1))]


if __name__ == "__main__":
    main()
