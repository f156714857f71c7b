"""`searchengine train` and `searchengine eval sts` end to end on the tiny model: one-line errors, a trained model
that indexes and answers queries."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from searchengine.cli import app

runner = CliRunner()


def test_train_then_index_and_query_with_the_trained_model(tiny_model: Path, tmp_path: Path) -> None:
    data = tmp_path / "sentences.txt"
    data.write_text("the cat sat on the mat\nrain and snow in the city\nreset my password\nthe team will win\n")
    sts = tmp_path / "sts.tsv"
    sts.write_text("score\tsentence1\tsentence2\n5\tthe cat sat\ta cat sat\n0\tthe cat sat\tsnow in the city\n1\ta\tb\n")
    out = tmp_path / "model"
    result = runner.invoke(
        app,
        ["train", "simcse", "--base", str(tiny_model), "--data", str(data), "--out", str(out), "--steps", "3",
         "--batch-size", "4", "--eval", str(sts), "--eval-every", "2", "--quiet"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "simcse: 3 steps" in result.output and f"Saved to {out}" in result.output
    log = json.loads((out / "training_log.json").read_text())
    assert [e["step"] for e in log["evaluations"]][0] == 2
    index_dir = tmp_path / "index"
    assert runner.invoke(app, ["index", str(data), "-d", str(index_dir), "--model", str(out), "-q"]).exit_code == 0
    result = runner.invoke(app, ["query", "cat on a mat", "-d", str(index_dir), "-k", "1", "--json"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["eval", "sts", str(sts), str(sts), "--model", str(out)])
    assert result.exit_code == 0 and "average" in result.output


def test_train_errors_are_one_line(tiny_model: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.tsv"
    bad.write_text("premise\thypothesis\tlabel\na\tb\tmaybe\n")
    cases = [
        (["sbert-nli", "--data", str(bad)], "bad.tsv:2: unknown label"),
        (["sbert-sts", "--data", str(bad)], "bad.tsv:1: the header"),
        (["consert", "--data", str(bad), "--adversarial", "0.1"], "needs one"),
        (["consert", "--data", str(bad), "--views", "shuffle,synonyms"], "unknown augmentation"),
        (["simcse", "--data", str(tmp_path / "none.txt")], "none.txt"),
    ]
    for arguments, message in cases:
        result = runner.invoke(app, ["train", *arguments, "--base", str(tiny_model), "--out", str(tmp_path / "m")])
        assert result.exit_code == 1, (arguments, result.output)
        assert message in result.output and "Traceback" not in result.output, result.output
    result = runner.invoke(app, ["train", "simcse", "--data", str(bad), "--base", str(tmp_path / "nope"), "--out", str(tmp_path / "m")])
    assert result.exit_code == 1 and "does not exist" in result.output
    assert not (tmp_path / "m").exists()
