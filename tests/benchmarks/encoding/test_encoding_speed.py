"""Smoke test of benchmarks/encoding/encoding_speed.py --quick: its correctness checks only, never its timings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[3]


def test_encoding_speed_quick_mode_runs(tmp_path: Path, onnx_cache: Path) -> None:
    out = tmp_path / "encoding_speed_quick.json"
    completed = subprocess.run(
        [sys.executable, str(REPOSITORY / "benchmarks" / "encoding" / "encoding_speed.py"), "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "SEARCHENGINE_CACHE": str(onnx_cache)},  # the session's exports of the bundled model
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    # Our fp32 equals sentence-transformers', ONNX fp32 equals torch fp32, smart batching changes no vector.
    assert results["checks"] == {
        "fp32_equals_sentence_transformers": True,
        "onnx_fp32_equals_torch_fp32": True,
        "smart_batching_keeps_vectors": True,
        "spearman_finite": True,
    }
    variants = results["variants"]
    assert {"sentence-transformers fp32", "searchengine torch fp32", "searchengine onnx int8"} <= set(variants)
    assert any(name.startswith("searchengine default (") for name in variants)
    reference = variants["sentence-transformers fp32"]
    assert reference["speed_vs_sentence_transformers_fp32"] == 1.0
    # Same model, same sentences: fp32 variants score the same Spearman as sentence-transformers.
    assert abs(variants["searchengine onnx fp32"]["stsb_test_spearman"] - reference["stsb_test_spearman"]) < 0.05
    assert all(row["sentences_per_s"] > 0 for row in variants.values())
