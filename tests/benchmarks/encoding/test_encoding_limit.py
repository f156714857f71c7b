"""Smoke test of benchmarks/encoding/encoding_limit.py on a few texts: it runs, counts FLOPs as documented, its stage
fractions add up, the default is lossless and the plot is written; never timings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[3]
MINILM_LINEAR_FLOP_PER_TOKEN = 6 * 2 * (4 * 384 * 384 + 2 * 384 * 1536)
"""all-MiniLM-L6-v2: 6 layers of Q, K, V, output (384×384) and feed-forward (384×1536 twice), 2 FLOPs a MAC."""


def test_encoding_limit_runs_on_a_few_texts(tmp_path: Path, onnx_cache: Path) -> None:
    out = tmp_path / "encoding_limit.json"
    completed = subprocess.run(
        [sys.executable, str(REPOSITORY / "benchmarks" / "encoding" / "encoding_limit.py"), "--texts", "40", "--long", "4"]
        + ["--rounds", "1", "--queries", "3", "--matmul", "256", "--peak-seconds", "0.05", "--variants", ""]
        + ["--out", str(out), "--plot", str(tmp_path / "encoding_limit.png")],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "SEARCHENGINE_CACHE": str(onnx_cache)},  # the session's exports of the bundled model
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    assert {"bf16", "fp32"} <= set(results["peak"])
    assert results["checks"] == {"lossless": {"default": True, "torch fp32": True}}
    assert set(results["texts"]) == {"short (STS-B)", "medium (Wikipedia)", "long (NFCorpus)"}
    for row in results["texts"].values():
        flops = row["flops"]
        expected = MINILM_LINEAR_FLOP_PER_TOKEN * flops["mean_tokens"] * flops["texts"] / 1e9
        assert abs(flops["gflop_linear"] - expected) <= 0.01 * expected
        assert abs(sum(row["stages"]["fractions"].values()) - 1) < 0.01
        assert row["variants"]["default"]["speed_vs_default"] == 1.0
    assert set(results["one_query"]["default"]) == {"p50_ms", "p99_ms"}
    assert (tmp_path / "encoding_limit.png").stat().st_size > 0
