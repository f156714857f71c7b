"""Smoke test of benchmarks/scale/merge_cost.py: this checkout against itself (through the baseline's package path)
times the cluster merge in every mode and hybrid's fusion, after checking both rank alike; never its timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[3]
SCRIPT = REPOSITORY / "benchmarks" / "scale" / "merge_cost.py"
PARTS = {"merge_dense", "merge_keyword", "merge_hybrid", "fuse"}


def test_merge_cost_compares_two_checkouts(tmp_path: Path) -> None:
    out = tmp_path / "merge.json"
    options = ["--baseline", str(REPOSITORY), "--rounds", "1", "--calls", "2", "--blocks", "1", "--out", str(out)]
    completed = subprocess.run([sys.executable, str(SCRIPT), *options], capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    for system in ("baseline", "searchengine"):
        parts = results["median_of_rounds_us"][system]
        assert set(parts) == PARTS and all(value > 0 for value in parts.values()), (system, parts)
        assert [len(rounds) for rounds in results["us_by_round"][system].values()] == [1, 1, 1, 1]
    assert set(results["ratio_this_over_baseline"]) == PARTS


def test_merge_cost_refuses_a_folder_that_is_no_checkout(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, str(SCRIPT), "--baseline", str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 1 and "holds no searchengine/" in completed.stderr
