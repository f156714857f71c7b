"""STS files to correlate against: Spearman needs gold scores that differ, or it is undefined (nan)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from searchengine.cli import app
from searchengine.errors import SearchEngineError
from searchengine.evaluation.sts import read_sts_pairs

HEADER = "score\tsentence1\tsentence2\n"


@pytest.mark.parametrize("rows", ["3\tthe cat\ta cat\n", "3\tthe cat\ta cat\n3.0\train\tsnow\n"])
def test_a_file_whose_pairs_all_score_the_same_is_refused(tmp_path: Path, rows: str) -> None:
    path = tmp_path / "dev.tsv"
    path.write_text(HEADER + rows, encoding="utf-8")
    with pytest.raises(SearchEngineError, match=f"{path}: all .* pair.s. have the same gold score"):
        read_sts_pairs(path)
    path.write_text(HEADER + rows + "0\tthe cat\tsnow\n", encoding="utf-8")
    assert [pair.score for pair in read_sts_pairs(path)][-1] == 0.0


def test_eval_sts_says_so_in_one_line_instead_of_printing_nan(tmp_path: Path, tiny_model: Path) -> None:
    path = tmp_path / "one.tsv"
    path.write_text(HEADER + "3\tthe cat\ta cat\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["eval", "sts", str(path), "--model", str(tiny_model)])
    assert result.exit_code == 1 and "have the same gold score" in result.output and "nan" not in result.output
