"""Smoke test of benchmarks/serving/serve_load.py --quick: it runs, stops by itself, and checks what must hold (no failed
request, writes land); never its timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from searchengine.indexer.commit.index_directory import IndexDirectory

REPOSITORY = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One --cache-dir for both runs: the Flat index of 300 documents is encoded by whichever runs first and reused
    by the other, as the script reuses its cache between runs."""
    return tmp_path_factory.mktemp("serve-load-cache")


def test_serve_load_quick_mode_runs(tmp_path: Path, cache: Path) -> None:
    out = tmp_path / "serve_load_quick.json"
    completed = subprocess.run(
        [
            sys.executable,
            str(REPOSITORY / "benchmarks" / "serving" / "serve_load.py"),
            "--quick",
            "--out",
            str(out),
            "--cache-dir",
            str(cache),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    assert results["checks"] == {"no_errors": True, "every_level_answered": True, "writes_landed": True}
    levels = [(level["concurrency"], level["with_writer"]) for level in results["levels"]]
    assert levels == [(1, False), (8, False), (32, False), (1, True), (8, True), (32, True)]
    assert all(level["requests"] <= results["settings"]["requests_per_level"] for level in results["levels"])
    assert all(level["writes"] > 0 for level in results["levels"] if level["with_writer"])
    writers = [level for level in results["levels"] if level["with_writer"]]
    assert all(level["write_max_ms"] >= level["write_p50_ms"] > 0 for level in writers)
    log = results["write_ahead_log"]
    assert log["store_bytes"] > 0 and log["peak_bytes"] >= 0 and log["bytes_after_stop"] >= 0
    assert "write-ahead log: peak" in completed.stdout
    assert "| clients | writer |" in completed.stdout


def test_serve_load_builds_another_index_type_from_the_flat_vectors(tmp_path: Path, cache: Path) -> None:
    out = tmp_path / "serve_load_hnsw.json"
    command = [sys.executable, str(REPOSITORY / "benchmarks" / "serving" / "serve_load.py"), "--quick", "--cache-dir", str(cache)]
    options = ["--index", "HNSW32", "--mode", "hybrid", "--no-writer", "--concurrency", "1", "--out", str(out)]
    completed = subprocess.run([*command, *options], capture_output=True, text=True, timeout=900)
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    assert (results["settings"]["index"], results["settings"]["mode"]) == ("HNSW32", "hybrid")
    assert results["checks"]["no_errors"] and results["levels"][0]["requests"] > 0
    manifests = {path.parent.name: json.loads(path.read_text()) for path in cache.glob("*/manifest.json")}
    assert {name: manifest["index"]["type"] for name, manifest in manifests.items()} == {
        "serve-load-300": "Flat",
        "serve-load-300-HNSW32": "HNSW32",
        "serve-load-300-run": "HNSW32",
    }
    counts = {IndexDirectory(path.parent).read_manifest().count.vectors for path in cache.glob("*/manifest.json")}
    assert counts == {300}  # counts come from each index's store
