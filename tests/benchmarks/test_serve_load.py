"""Smoke test of benchmarks/serve_load.py --quick: it runs, stops by itself, and checks what must hold (no failed
request, writes land); never its timings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]


def test_serve_load_quick_mode_runs(tmp_path: Path) -> None:
    out = tmp_path / "serve_load_quick.json"
    completed = subprocess.run(
        [
            sys.executable,
            str(REPOSITORY / "benchmarks" / "serve_load.py"),
            "--quick",
            "--out",
            str(out),
            "--cache-dir",
            str(tmp_path / "cache"),
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
    assert "| clients | writer |" in completed.stdout
