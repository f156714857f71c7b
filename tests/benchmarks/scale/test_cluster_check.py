"""benchmarks/scale/cluster_check.py small (300 real documents, the tiny test model, a two-node simulated Ray
cluster, 2 searching threads under the loads, one timed add of 10), so the quick check cannot rot: its last line is
one JSON object with the issue's keys, and what must hold at any size holds (the same exact top 10, no driver rows,
no failed search or lost write, a lost shard flagged)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.datasets.data_folder import DATA

REPOSITORY = Path(__file__).resolve().parents[3]
KEYS = ("same_top10", "keyword_ndcg_diff", "hybrid_ndcg_diff", "p50_ratio", "failed_searches",
        "acknowledged_writes_lost", "partial_flagged", "driver_rows_written")  # fmt: skip


def test_the_quick_check_runs_small(tmp_path: Path, tiny_model: Path) -> None:
    pytest.importorskip("ray.serve")
    if not (DATA / "retrieval" / "nfcorpus" / "corpus.jsonl").is_file():
        pytest.skip(f"no retrieval data at {DATA}: `benchmarks/datasets/get_data.py data` lays it out")
    completed = subprocess.run(
        [
            sys.executable, str(REPOSITORY / "benchmarks" / "scale" / "cluster_check.py"),
            "--documents", "300", "--shards", "2", "--nodes", "2", "--copies", "2", "--model", str(tiny_model),
            "--queries", "20", "--latency-queries", "5", "--load-seconds", "8", "--clients", "2", "--adds", "1",
            "--out", str(tmp_path / "out.json"), "--cache-dir", str(tmp_path / "vectors"),
        ],
        capture_output=True, text=True, timeout=420, cwd=REPOSITORY,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert list(result)[: len(KEYS)] == list(KEYS)
    assert result["same_top10"] == 1.0 and result["driver_rows_written"] == 0
    assert result["keyword_ndcg_diff"] <= 0.002 and result["hybrid_ndcg_diff"] <= 0.002
    assert result["failed_searches"] == 0 and result["acknowledged_writes_lost"] == 0
    assert result["acknowledged_writes"] > 0 and result["searches_during_loss"] > 0
    assert result["partial_flagged"] is True and result["partial_recovered"] is True
    assert result["p50_ratio"] > 0
    assert json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["documents"] == 300


def test_the_same_top_10_allows_only_ties_to_differ() -> None:
    from benchmarks.scale.cluster_check import same_top

    def hits(*found: tuple[str, float]) -> dict:
        return {"hits": [{"external_id": name, "score": score} for name, score in found]}

    assert same_top(hits(("a", 0.9), ("b", 0.8), ("c", 0.8)), hits(("a", 0.9), ("c", 0.8), ("b", 0.8)))
    assert same_top(hits(("a", 0.9), ("b", 0.5)), hits(("a", 0.9), ("twin-of-b", 0.5)))  # tied at the cut
    assert not same_top(hits(("a", 0.9), ("b", 0.5)), hits(("z", 0.9), ("b", 0.5)))
    assert not same_top(hits(("a", 0.9), ("b", 0.8)), hits(("b", 0.9), ("a", 0.8)))
    assert not same_top(hits(("a", 0.9), ("b", 0.8)), hits(("a", 0.9), ("b", 0.7)))
