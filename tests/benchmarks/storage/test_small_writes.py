"""Smoke test of benchmarks/storage/small_writes.py: it writes on copies, never the index given, and compares two checkouts
(here this one against itself, through the baseline's package path); never its timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from searchengine.encoding.encoder import Encoder
from searchengine.engine.search_engine import SearchEngine

REPOSITORY = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("kind", ["delete", "add"])
def test_small_writes_compare_two_checkouts_on_copies(tmp_path: Path, tiny_encoder: Encoder, kind: str) -> None:
    index, out, texts = tmp_path / "index", tmp_path / "small_writes.json", tmp_path / "texts.txt"
    SearchEngine.build([f"note number {i}" for i in range(12)], index, encoder=tiny_encoder).close()
    texts.write_text("".join(f"a new note {i}\n" for i in range(12)), encoding="utf-8")
    command = [sys.executable, str(REPOSITORY / "benchmarks" / "storage" / "small_writes.py"), "--index", str(index)]
    options = ["--baseline", str(REPOSITORY), "--write", kind, "--writes", "11", "--texts", str(texts)]
    options += ["--queries", "3", "--rounds", "2", "--out", str(out)]
    completed = subprocess.run([*command, *options], capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    assert [sorted(row) for row in results["rounds"]] == [["baseline", "searchengine"]] * 2
    assert results["ratio_median_ms"] > 0 and results["ratio_mean_ms"] > 0
    if kind == "add":  # eleven one-document segments beside the index's: ten of them merged into one
        for row in results["rounds"]:
            assert row["searchengine"]["vectors_copied_by_merges"] >= 10
            assert row["searchengine"]["segments_left"] < 11
    with SearchEngine.open(index, encoder=tiny_encoder) as engine:
        assert len(engine) == 12  # the index given is never changed
