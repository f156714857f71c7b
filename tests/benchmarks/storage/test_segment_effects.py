"""benchmarks/storage/segment_effects.py at a tiny size: it runs and reports what it says, never its timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from searchengine import BuildSettings, SearchEngine

REPOSITORY = Path(__file__).resolve().parents[3]


def test_many_adds_and_half_deleted_at_2000_documents(tmp_path: Path) -> None:
    source = tmp_path / "source"
    SearchEngine.build(
        [f"sentence {i} about topic {i % 5}" for i in range(30)],
        source,
        BuildSettings(index="Flat"),
    )  # bundled model
    out = tmp_path / "out.json"
    completed = subprocess.run(
        [
            sys.executable,
            str(REPOSITORY / "benchmarks" / "storage" / "segment_effects.py"),
            *("--vectors-from", str(source), "--n", "2000", "--adds", "25", "--queries", "20", "--out", str(out)),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    row = json.loads(out.read_text(encoding="utf-8"))
    adds = row["many_adds"]
    assert adds["adds"] == 25 and adds["compacted"]["segments"] == 1 and adds["after_adds"]["segments"] >= 1
    assert adds["after_adds"]["recall_at_10"] == adds["compacted"]["recall_at_10"] == 1.0  # exact segments
    half = row["half_deleted"]
    assert half["bytes_after_delete_and_compact"] < half["bytes_before"]
    assert half["ratio"] == round(half["bytes_after_delete_and_compact"] / half["bytes_fresh_build_of_the_rest"], 3)
