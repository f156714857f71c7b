"""benchmarks/scale/shard_keyword_scoring.py small (300 real documents, this checkout's own revision as the older
one), so the shard keyword scoring benchmark cannot rot: it compares both revisions' scores (stopping when they
differ) and its last line is one JSON object with each step's timings for every row and for a filter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.datasets.data_folder import DATA

REPOSITORY = Path(__file__).resolve().parents[3]


def test_the_shard_keyword_scoring_benchmark_runs_small(tmp_path: Path) -> None:
    if not (DATA / "retrieval" / "nfcorpus" / "corpus.jsonl").is_file():
        pytest.skip(f"no retrieval data at {DATA}: `benchmarks/datasets/get_data.py data` lays it out")
    if not (REPOSITORY / ".git").exists():
        pytest.skip("not a git checkout: the benchmark reads the older revision's module with `git show`")
    completed = subprocess.run(
        [
            sys.executable, str(REPOSITORY / "benchmarks" / "scale" / "shard_keyword_scoring.py"),
            "--steps", "300", "--queries", "3", "--repeats", "1", "--baseline", "HEAD", "--out", str(tmp_path / "o.json"),
        ],
        capture_output=True, text=True, timeout=300, cwd=REPOSITORY,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert result == json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))
    (step,) = result["steps"]
    assert step["documents"] == 300
    for part in ("all_rows", "one_row_in_7"):
        assert step[part]["queries"] == 3
        for timed in ("scores", "shard_best_100"):
            assert step[part][timed]["this_ms_median"] > 0 and step[part][timed]["older_ms_median"] > 0
