"""Smoke test of benchmarks/serving/route_overhead.py: this checkout against itself (through the baseline's package
path) answers /search in every mode and splits each request's time into the search and the route's own; never its
timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[3]


def test_route_overhead_compares_two_checkouts(tmp_path: Path) -> None:
    out = tmp_path / "route.json"
    command = [sys.executable, str(REPOSITORY / "benchmarks" / "serving" / "route_overhead.py")]
    options = ["--baseline", str(REPOSITORY), "--rounds", "1", "--requests", "3", "--warmup", "1", "--out", str(out)]
    completed = subprocess.run([*command, *options], capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    for system in ("baseline", "searchengine"):
        for mode, parts in results["median_of_rounds_ms"][system].items():
            assert 0 < parts["search_ms"] < parts["app_ms"] and parts["route_ms"] > 0, (system, mode, parts)
    assert set(results["route_ratio_this_over_baseline"]) == {"dense", "keyword", "hybrid"}
    assert [len(rounds) for rounds in results["route_ms_by_round"]["searchengine"].values()] == [1, 1, 1]


def test_route_overhead_refuses_a_folder_that_is_no_checkout(tmp_path: Path) -> None:
    command = [
        sys.executable,
        str(REPOSITORY / "benchmarks" / "serving" / "route_overhead.py"),
        "--baseline",
        str(tmp_path),
    ]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 1 and "holds no searchengine/" in completed.stderr
