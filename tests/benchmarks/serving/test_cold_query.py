"""Smoke test of benchmarks/serving/cold_query.py: this checkout against itself (through the baseline's package path)
answers the same, and a query imports none of the modules it need not; never its timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[3]


def test_cold_query_compares_two_checkouts(tmp_path: Path) -> None:
    out = tmp_path / "cold.json"
    command = [sys.executable, str(REPOSITORY / "benchmarks" / "serving" / "cold_query.py")]
    options = ["--baseline", str(REPOSITORY), "--runs", "1", "--out", str(out)]
    completed = subprocess.run([*command, *options], capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    assert results["same_answer"] is True
    assert results["heavy_modules_imported"] == {"baseline": [], "searchengine": []}
    assert [len(results["wall_s"][system]) for system in ("baseline", "searchengine")] == [1, 1]
