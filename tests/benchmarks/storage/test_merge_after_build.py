"""Smoke test of benchmarks/storage/merge_after_build.py: both policies build, write and merge in their own processes and
the record says what their merges did; never its timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[3]


def test_merge_after_build_runs_both_policies(tmp_path: Path) -> None:
    out = tmp_path / "merge_after_build.json"
    command = [sys.executable, str(REPOSITORY / "benchmarks" / "storage" / "merge_after_build.py"), "--shards", "10"]
    command += ["--per-shard", "20", "--index", "Flat", "--out", str(out)]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads(out.read_text(encoding="utf-8"))["results"]
    # exact segments this small set no merge limit, so both policies merge the ten of them into one
    assert [results[p]["merges"] for p in ("now", "before")] == [1, 1]
    assert [results[p]["vectors_merged"] for p in ("now", "before")] == [200, 200]
