"""Smoke test of benchmarks/scale/search_speed.py --quick: its correctness checks only, never its timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[3]


def test_search_speed_quick_mode_runs(tmp_path: Path) -> None:
    out = tmp_path / "search_speed_quick.json"
    completed = subprocess.run(
        [
            sys.executable,
            str(REPOSITORY / "benchmarks" / "scale" / "search_speed.py"),
            "--quick",
            "--out",
            str(out),
            "--plot",
            str(tmp_path / "plot.png"),
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = json.loads(out.read_text(encoding="utf-8"))
    assert results["checks"] == {"flat_recall_is_1": True, "recalls_in_0_1": True}
    assert (tmp_path / "plot.png").stat().st_size > 0
    groups = results["groups"]
    assert [(g["n"], g["whitening_k"], g["dimension"]) for g in groups] == [(3000, None, 384), (3000, 128, 128)]
    for group in groups:
        # Recall is computed against exact search on the same vectors: exact search finds itself.
        flat = [c for c in group["configurations"] if c["factory"] == "Flat"]
        assert flat and all(c["recall_at_10"] == 1.0 for c in flat)
        assert all(0.0 <= c["recall_at_10"] <= 1.0 for c in group["configurations"])
        # The engine's default at this size is exact search, so the end-to-end path finds the exact top 10 too
        # (its queries are encoded one by one, live, and agree with the batch-encoded ones).
        assert [e["factory"] for e in group["end_to_end"]] == ["Flat"]
        assert group["end_to_end"][0]["recall_at_10"] >= 0.99
        assert 0 < group["stsb_test_spearman"] <= 100
    # Whitening-128 keeps a third of the floats, so its vector file is about a third the size.
    sizes = {g["whitening_k"]: g["end_to_end"][0]["file_bytes"]["vectors"] for g in groups}
    assert sizes[128] < sizes[None] / 2.5
