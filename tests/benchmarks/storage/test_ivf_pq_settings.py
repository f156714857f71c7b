"""Smoke test of benchmarks/storage/ivf_pq_settings.py on 3,000 random unit vectors in the cache's block layout: it
builds, sweeps nprobe and rescore depth, and writes its results; probing every list and rescoring every vector
from the float16 originals is exact but for float16's rounding."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parents[3]


def unit_rows(count: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((count, 32)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_the_sweep_writes_recall_and_times_for_each_setting(tmp_path: Path) -> None:
    cache = tmp_path / "blocks"
    cache.mkdir()
    np.save(cache / "wiki-abc-0-2000-def.npy", unit_rows(2000, 0))
    np.save(cache / "stsb-queries-abc-0-40-def.npy", unit_rows(40, 1))
    command = [sys.executable, str(REPOSITORY / "benchmarks" / "storage" / "ivf_pq_settings.py"), "--vectors", "3000"]
    command += ["--real", "2000", "--queries", "40", "--train", "3000", "--factories", "IVF16,PQ16x4fs"]
    command += ["--nprobe", "2", "16", "--rescore", "0", "3000", "--cache-dir", str(cache), "--out", str(tmp_path / "o.json")]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    (result,) = json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))["results"]
    runs = {(run["nprobe"], run["rescore"]): run for run in result["runs"]}
    assert set(runs) == {(2, 0), (2, 3000), (16, 0), (16, 3000)}
    exact = runs[(16, 3000)]  # every list probed, every vector rescored: only float16's rounding may swap a tie
    assert exact["recall_at_10"] >= 0.98 and exact["recall_at_10_real"] >= 0.98
    assert runs[(16, 0)]["recall_at_10"] < 1.0  # 4-bit codes alone are approximate
    assert all(run["p50_ms"] <= run["p99_ms"] for run in runs.values())
