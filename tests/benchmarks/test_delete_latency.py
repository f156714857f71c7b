"""Smoke test of benchmarks/delete_latency.py: it deletes on copies, never the index given, and compares two
checkouts (here this one against itself, through the baseline's package path); never its timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from searchengine.encoding.encoder import Encoder
from searchengine.engine.search_engine import SearchEngine

REPOSITORY = Path(__file__).resolve().parents[2]


def test_delete_latency_compares_two_checkouts_on_copies(tmp_path: Path, tiny_encoder: Encoder) -> None:
    index, out = tmp_path / "index", tmp_path / "delete_latency.json"
    SearchEngine.build([f"note number {i}" for i in range(12)], index, encoder=tiny_encoder).close()
    command = [sys.executable, str(REPOSITORY / "benchmarks" / "delete_latency.py"), "--index", str(index)]
    options = ["--baseline", str(REPOSITORY), "--deletes", "4", "--rounds", "2", "--out", str(out)]
    completed = subprocess.run([*command, *options], capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    assert [sorted(row) for row in results["rounds"]] == [["baseline", "searchengine"]] * 2
    assert results["ratio_median_ms"] > 0 and results["ratio_mean_ms"] > 0
    with SearchEngine.open(index, encoder=tiny_encoder) as engine:
        assert len(engine) == 12  # the index given is never changed
