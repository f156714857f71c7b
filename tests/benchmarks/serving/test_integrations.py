"""Smoke test of benchmarks/serving/integrations.py --quick: it runs, every integration agrees with the engine, and the
footprint names what each extra adds; never its timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[3]


def test_integrations_quick_mode_runs(tmp_path: Path) -> None:
    out = tmp_path / "integrations_quick.json"
    completed = subprocess.run(
        [sys.executable, str(REPOSITORY / "benchmarks" / "serving" / "integrations.py"), "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    report = json.loads(out.read_text(encoding="utf-8"))
    results = report["results"]
    for name in ("langchain", "llamaindex", "mcp"):
        assert results[name]["same_ranking"] and results[name]["max_score_difference"] < 1e-4, results[name]
    assert results["embeddings"]["texts"] == 60 and results["embeddings"]["min_cosine_to_stored"] > 0.9999
    extras = report["footprint"]["extras"]
    assert {"mcp", "langchain-core", "llama-index-core"} <= {name for e in extras.values() for name in e["names"]}
    assert "| langchain | True |" in completed.stdout
