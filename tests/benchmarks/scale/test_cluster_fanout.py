"""benchmarks/scale/cluster_fanout.py small (120 real documents, the tiny test model, a two-node simulated Ray
cluster, one copy a shard), so the fan-out benchmark cannot rot: its last line is one JSON object with every mode's
p50 against one index, the ingress's own work apart from the encoding and the shards' wait, one index's handling
time, the ingress's own port against Serve's proxy, and both sides' searches/s with 1 and 2 clients; and a repeated
keyword or hybrid query skips the statistics round. The documents are encoded once, into a cache folder of the test's own, and both builds are given them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.datasets.data_folder import DATA

REPOSITORY = Path(__file__).resolve().parents[3]


def test_the_fanout_benchmark_runs_small(tmp_path: Path, tiny_model: Path) -> None:
    pytest.importorskip("ray.serve")
    if not (DATA / "retrieval" / "nfcorpus" / "corpus.jsonl").is_file():
        pytest.skip(f"no retrieval data at {DATA}: `benchmarks/datasets/get_data.py data` lays it out")
    completed = subprocess.run(
        [
            sys.executable, str(REPOSITORY / "benchmarks" / "scale" / "cluster_fanout.py"),
            "--documents", "120", "--shards", "2", "--nodes", "2", "--copies", "1", "--model", str(tiny_model),
            "--queries", "3", "--seconds", "1", "--clients", "2", "--out", str(tmp_path / "out.json"),
            "--cache-dir", str(tmp_path / "vectors"),
        ],
        capture_output=True, text=True, timeout=420, cwd=REPOSITORY,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result == json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    assert result["encoding"]["encoded_now"] == 120 and result["encoding"]["left_out_of_builds"]
    for mode in ("dense", "keyword", "hybrid"):
        for run in ("new", "seen"):
            measured = result["latency"][mode][run]
            assert measured["searches"] == 3 and measured["p50_ratio"] > 0
            ingress = measured["ingress_ms_a_query"]
            assert ingress["handler"] > 0 and ingress["waiting_for_shards"] > 0
            assert ingress["encode"] > 0 if mode != "keyword" else ingress["encode"] == 0
            assert measured["one_index_ms_a_query"]["handler"] > 0
        assert result["latency"][mode]["seen"]["calls_a_search"] == 2, "one round of calls to the 2 shards"
        assert result["latency"][mode]["seen"]["statistics_rounds_a_search"] == 0
    assert set(result["ingress_or_proxy"]["p50_ms"]) == {"ingress", "proxy"}
    assert result["ingress_or_proxy"]["proxy_over_ingress"] > 0
    for side in ("cluster", "one_index"):
        measured = result["throughput"][side]
        assert measured["1_client"]["searches"] > 0 and measured["2_clients"]["failed"] == 0
        assert measured["ratio"] > 0
