"""Smoke test of benchmarks/storage/checkout_ab.py: it compares two checkouts (here this one against itself, through
the baseline's package path) on copies of the index given, in every mode; never its timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from searchengine.encoding.encoder import Encoder
from searchengine.engine.search_engine import SearchEngine

REPOSITORY = Path(__file__).resolve().parents[3]


def test_checkout_ab_times_both_checkouts_on_copies(tmp_path: Path, tiny_encoder: Encoder) -> None:
    index, out, queries = tmp_path / "index", tmp_path / "ab.json", tmp_path / "queries.jsonl"
    SearchEngine.build([f"note number {i} about cats" for i in range(20)], index, encoder=tiny_encoder).close()
    queries.write_text("".join(json.dumps({"text": f"cats and note {i}"}) + "\n" for i in range(12)), "utf-8")
    command = [sys.executable, str(REPOSITORY / "benchmarks" / "storage" / "checkout_ab.py"), "--index", str(index)]
    options = ["--baseline", str(REPOSITORY), "--queries", str(queries), "--rounds", "2", "--repeats", "2"]
    options.append("--keyword-again")
    completed = subprocess.run([*command, *options, "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    operations = {"add10", "delete1", "query_dense", "query_keyword", "query_keyword_again", "query_hybrid"}
    assert set(results["median_ms"]) == {"baseline", "searchengine"}
    assert set(results["ratio_this_over_baseline"]) == operations
    assert all(ratio > 0 for ratio in results["ratio_this_over_baseline"].values())
    assert set(results["median_cpu_ms"]) == {"baseline", "searchengine"}
    assert set(results["cpu_ratio_this_over_baseline"]) == operations
    assert set(results["thread_cpu_ratio_this_over_baseline"]) == operations
    for spread in results["cpu_ratio_by_round"].values():  # one ratio a round: the median lies between the extremes
        assert 0 < spread["least"] <= spread["median"] <= spread["greatest"]
    assert set(results["cpu_ratio_by_round"]) == operations
    with SearchEngine.open(index, encoder=tiny_encoder) as engine:
        assert len(engine) == 20  # the index given is never changed
