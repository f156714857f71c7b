"""Smoke test of benchmarks/encoding/bulk_precision.py on a few texts: it runs, and its quality check holds; never timings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[3]


def test_bulk_precision_runs_and_bf16_keeps_the_vectors(tmp_path: Path, onnx_cache: Path) -> None:
    out = tmp_path / "bulk_precision.json"
    completed = subprocess.run(
        [sys.executable, str(REPOSITORY / "benchmarks" / "encoding" / "bulk_precision.py"), "--texts", "80", "--long", "4"]
        + ["--rounds", "1", "--call-texts", "16", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "SEARCHENGINE_CACHE": str(onnx_cache)},  # the session's exports of the bundled model
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    assert results["checks"] == {"bf16_keeps_vectors": True}
    assert set(results["throughput"]) == {"stsb", "wiki", "nfcorpus"}
    assert set(results["by_call_size"]) == {"1", "4", "8", "16", "32", "64"}  # the sizes below the 80 texts
    assert results["throughput"]["wiki"]["onnx fp32"]["speed_vs_onnx_fp32"] == 1.0
