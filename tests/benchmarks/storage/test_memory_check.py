"""Smoke test of benchmarks/storage/memory_check.py at 5,000 vectors with the tiny model: it builds, measures in a
fresh process and ends with the one JSON line the issue asks for; never its timings."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[3]
KEYS = {"index_type", "resident_mb", "mapped_cache_mb", "recall_at_10", "p50_ms", "p99_ms", "add10_ms", "retrained"}


def test_memory_check_runs_tiny_and_ends_with_its_json(tmp_path: Path, tiny_model: Path) -> None:
    data = tmp_path / "data"
    (data / "unsup").mkdir(parents=True)
    (data / "stsb").mkdir()
    words = ["cat", "dog", "rain", "piano", "rocket", "bread", "river", "king", "train", "snow", "goal", "seed"]
    sentences = [f"the {words[i % 12]} and the {words[(i * 7) % 12]} number {i}" for i in range(400)]
    with gzip.open(data / "unsup" / "wiki_sentences.txt.gz", "wt", encoding="utf-8") as handle:
        handle.write("\n".join(sentences) + "\n")
    pairs = [f"{i % 5}.0\ta {words[i % 12]} in the {words[(i + 3) % 12]}\tthe {words[(i + 5) % 12]}" for i in range(30)]
    (data / "stsb" / "test.tsv").write_text("score\tsentence1\tsentence2\n" + "\n".join(pairs) + "\n", "utf-8")
    command = [sys.executable, str(REPOSITORY / "benchmarks" / "storage" / "memory_check.py"), "--vectors", "5000"]
    options = ["--memory-budget", "300MB", "--model", str(tiny_model), "--data", str(data), "--real", "400"]
    options += ["--queries", "20", "--warmup", "2", "--add-runs", "1", "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "o.json")]
    completed = subprocess.run([*command, *options], capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert KEYS <= set(result)
    assert result["index_type"] == "Flat"  # 5,000 vectors of 32 dimensions fit 300 MB exactly
    assert result["recall_at_10"] == 1.0 and result["recall_at_10_real"] == 1.0  # exact search
    assert result["retrained"] is False and result["new_segment_types"] == ["Flat"]
    assert 0 < result["index_resident_mb"] < result["resident_mb"]
    assert result["mapped_cache_mb"] > 0 and result["p50_ms"] <= result["p99_ms"]
    assert result["build"]["vectors"] == 5000 and result["build"]["real_vectors"] == 400
    assert json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))["index_type"] == "Flat"
