"""Smoke test of benchmarks/storage/drift.py on small cached blocks: it builds, adds the new data step by step,
retrains a copy at each step and writes its rows; never its timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parents[3]
FIXTURE = REPOSITORY / "tests" / "fixtures" / "stsb_vectors.npy"


def test_drift_runs_small_and_writes_its_rows(tmp_path: Path) -> None:
    cache = tmp_path / "blocks"
    cache.mkdir()
    real = np.load(FIXTURE).astype(np.float32)  # real MiniLM vectors stand in for the Wikipedia blocks
    np.save(cache / "wiki-0a-0-1200-0b.npy", real[:1200])
    other = np.random.default_rng(0).normal(size=(300, real.shape[1])).astype(np.float32)  # another distribution
    np.save(cache / "stsb-queries-0c-0-300-0d.npy", other)
    out = tmp_path / "drift.json"
    command = [sys.executable, str(REPOSITORY / "benchmarks" / "storage" / "drift.py"), "--base", "1000"]
    options = ["--factory", "SQ8", "--steps", "0,0.2", "--queries", "50", "--batch", "100"]
    options += ["--cache-dir", str(cache), "--out", str(out)]
    completed = subprocess.run([*command, *options], capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(out.read_text(encoding="utf-8"))
    first, last = result["rows"]
    assert first["as_is"]["vectors"] == 1000 and last["as_is"]["vectors"] == 1200
    assert last["as_is"]["added_since_training"] == 200 and last["as_is"]["error_ratio"] > 1
    assert last["retrained"]["template_trained_on"] == 1200 and last["retrained"]["added_since_training"] == 0
    for row in (first["as_is"], last["as_is"], last["retrained"]):
        assert all(0 <= row[key] <= 1 for key in row if key.startswith("recall_"))
