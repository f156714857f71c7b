"""benchmarks/storage/write_cost.py on a tiny index, searchengine only (no peers, no baseline, no CLI runs, no strace): that
every number is there, never what it is."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[3]
SENTENCES = [f"sentence number {i} says something about topic {i % 7} and year {1990 + i % 36}" for i in range(250)]


def test_searchengine_part_at_300_documents(tmp_path: Path) -> None:
    (tmp_path / "sentences.txt").write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    out = tmp_path / "out.json"
    completed = subprocess.run(
        [
            sys.executable,
            str(REPOSITORY / "benchmarks" / "storage" / "write_cost.py"),
            *("--sizes", "300", "--systems", "searchengine", "--sentences", str(tmp_path / "sentences.txt")),
            *("--vector-lines", "40", "--queries", "20", "--runs", "2", "--cli-runs", "0", "--no-fsync-probe"),
            *("--work", str(tmp_path / "work"), "--out", str(out)),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    row = json.loads(out.read_text(encoding="utf-8"))["runs"]["searchengine"]["300"]
    assert "error" not in row
    assert row["build"]["documents"] == 300 and row["build"]["index_type"] == "Flat"
    assert row["build"]["imported_from"]["indexer"] == str(REPOSITORY / "indexer")
    assert "encoding" not in row["build"]["build_stages_s"]  # the vectors came with the documents
    for timing in (row["add10"], row["delete1"]):
        assert timing["median_ms"] > 0
        assert timing["min_ms"] <= timing["median_ms"] <= timing["max_ms"]
    assert len(row["add10"]["runs_ms"]) == len(row["delete1"]["runs_ms"]) == 2
    assert "cli_add10" not in row  # --cli-runs 0: each CLI run loads the model (seconds)
    # The encoding stage is left out of an add: what is left is at most the whole call.
    assert 0 < row["add10"]["median_ms"] <= row["add10"]["wall"]["max_ms"]
    names = ("query", "query_after_writes", "query_distinct_filters", "query_distinct_filters_after_writes")
    for query in (row[name] for name in names):
        assert query["queries"] == 20 and query["all_k_returned"] and query["p50_ms"] > 0
    assert row["documents_after_writes"] == 300 + 3 * 10 - 3  # a warm-up and 2 runs of each write
    memory = row["write_memory"]
    assert memory["extra_mib"] >= 0 and memory["peak_total_mib"] >= memory["rss_before_mib"] > 0
    assert row["sync_calls"] == "not checked"
    assert row["code"]["code"] == str(REPOSITORY) and len(row["code"]["commit"]) == 40
    assert row["machine"]["cpu"]


def test_sync_calls_are_counted_between_the_marks() -> None:
    write_cost = importlib.import_module("benchmarks.storage.write_cost")
    trace = "\n".join(
        [
            "10 fsync(3) = 0",  # opening the index: not counted
            '10 faccessat2(AT_FDCWD, "/w/marks/MARK-add-start", F_OK) = -1 ENOENT',
            "10 fsync(5) = 0",
            "11 fdatasync(6 <unfinished ...>",
            "11 <... fdatasync resumed>) = 0",
            '10 faccessat2(AT_FDCWD, "/w/marks/MARK-add-end", F_OK) = -1 ENOENT',
            "12 fsync(7) = 0",
            '10 faccessat2(AT_FDCWD, "/w/marks/MARK-delete-start", F_OK) = -1 ENOENT',
            "10 msync(0x7f, 4096, MS_SYNC) = 0",
            '10 faccessat2(AT_FDCWD, "/w/marks/MARK-delete-end", F_OK) = -1 ENOENT',
        ]
    )
    assert write_cost.count_sync_calls(trace) == {"add10": 2, "delete1": 1}
