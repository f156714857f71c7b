"""benchmarks/files/file_sync.py on a tiny folder with the tiny test model: that every number is there, never what it is."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.searchengine.reading.made_files import notes_folder

REPOSITORY = Path(__file__).resolve().parents[3]


def test_index_and_sync_times_of_a_small_folder(tmp_path: Path, tiny_model: Path) -> None:
    folder = notes_folder(tmp_path / "notes")
    out = tmp_path / "out.json"
    completed = subprocess.run(
        [
            sys.executable,
            str(REPOSITORY / "benchmarks" / "files" / "file_sync.py"),
            *("--folder", str(folder), "--model", str(tiny_model), "--runs", "1", "--edit", "guides/bike.html"),
            *("--work", str(tmp_path / "work"), "--out", str(out)),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    record = json.loads(out.read_text(encoding="utf-8"))
    assert record["index"]["files_read"] == {"html": 1, "markdown": 1, "pdf": 1, "text": 1}
    assert record["index"]["seconds_by_stage"]["extraction"] > 0 and record["index"]["vectors"] >= 4
    for name in ("unchanged", "one_edited", "one_deleted", "one_added"):
        assert len(record["sync"][name]["cli_runs_s"]) == 1 and record["sync"][name]["warm_median_s"] > 0
    assert "adding" in record["sync"]["one_edited"]["warm_last_stages_s"]
    assert "removing" in record["sync"]["one_deleted"]["warm_last_stages_s"]
    assert "adding" not in record["sync"]["unchanged"]["warm_last_stages_s"]
    assert record["sync"]["encode_edited_file_alone_s"] > 0
