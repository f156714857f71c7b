"""benchmarks/files/file_paired.py: wins, losses and ties of the folder reader against the converter, question by
question, pooled over result files, with the sign test and the bootstrap interval."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[3]


def result(folder: list, converter: list) -> dict:
    """A file_search.py result of one HTML corpus with the two indexes' ranks in every mode."""
    modes = lambda ranks: {mode: {"ranks": ranks} for mode in ("dense", "keyword", "hybrid")}  # noqa: E731
    return {
        "corpora": {
            "docs": {
                "format": "html",
                "variants": {"bs4-get-text": {"passages": {"modes": modes(converter)}}},
                "folder": {"passage-headings": {"modes": modes(folder)}},
            }
        }
    }


def test_compare_counts_a_higher_rank_as_a_win_and_two_misses_as_a_tie() -> None:
    paired = importlib.import_module("benchmarks.files.file_paired")
    row = paired.compare([1, 2, None, 11, 3], [2, 2, 1, None, None])
    assert (row["wins"], row["losses"], row["ties"]) == (2, 1, 2)  # rank 11 is outside MRR@10: a miss
    assert row["folder_mrr@10"] == pytest.approx((1 + 1 / 2 + 1 / 3) / 5)
    assert row["converter_mrr@10"] == pytest.approx((1 / 2 + 1 / 2 + 1) / 5)
    assert row["folder_recall@5"] == 0.6 and row["converter_recall@5"] == 0.6
    assert row["sign_test_p"] == pytest.approx(1.0)
    low, high = row["mrr_difference_95"]
    assert low <= row["folder_mrr@10"] - row["converter_mrr@10"] <= high
    sweep = paired.compare([1] * 12, [None] * 12)
    assert sweep["wins"] == 12 and sweep["sign_test_p"] < 0.001 and sweep["mrr_difference_95"] == [1.0, 1.0]


def test_result_files_are_pooled_by_corpus(tmp_path: Path) -> None:
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    first.write_text(json.dumps(result([1, None], [2, None])), encoding="utf-8")
    second.write_text(json.dumps(result([3], [1])), encoding="utf-8")
    out = tmp_path / "paired.json"
    completed = subprocess.run(
        [sys.executable, str(REPOSITORY / "benchmarks" / "files" / "file_paired.py"), str(first), str(second), "--out", str(out)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    hybrid = report["corpora"]["docs"]["hybrid"]
    assert (hybrid["questions"], hybrid["wins"], hybrid["losses"], hybrid["ties"]) == (3, 1, 1, 1)
    assert report["all"]["dense"]["questions"] == 3


def test_a_result_without_both_indexes_is_refused(tmp_path: Path) -> None:
    only = result([1], [1])
    del only["corpora"]["docs"]["folder"]
    path = tmp_path / "only.json"
    path.write_text(json.dumps(only), encoding="utf-8")
    completed = subprocess.run(
        [sys.executable, str(REPOSITORY / "benchmarks" / "files" / "file_paired.py"), str(path), "--out", str(tmp_path / "o")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert completed.returncode == 1 and "docs: the result holds no folder index" in completed.stderr
