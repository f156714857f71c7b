"""`searchengine train` and `searchengine eval sts` end to end on the tiny model: one-line errors, a trained model
that indexes and answers queries."""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
from dataclasses import MISSING, fields
from pathlib import Path

import pytest
from searchengine.training.registry import METHODS
from typer.testing import CliRunner

from searchengine.cli import app

runner = CliRunner()


def test_train_then_index_and_query_with_the_trained_model(tiny_model: Path, tmp_path: Path) -> None:
    data = tmp_path / "sentences.txt"
    data.write_text("the cat sat on the mat\nrain and snow in the city\nreset my password\nthe team will win\n")
    sts = tmp_path / "sts.tsv"
    sts.write_text(
        "score\tsentence1\tsentence2\n5\tthe cat sat\ta cat sat\n0\tthe cat sat\tsnow in the city\n1\ta\tb\n"
    )
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


def test_train_records_its_precision_and_threads_and_lets_openmp_sleep(
    tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    data = tmp_path / "sentences.txt"
    data.write_text("the cat sat on the mat\nrain and snow in the city\nreset my password\n")
    out = tmp_path / "model"
    result = runner.invoke(
        app,
        ["train", "simcse", "--base", str(tiny_model), "--data", str(data), "--out", str(out), "--steps", "1",
         "--batch-size", "2", "--precision", "fp32", "--threads", "1", "--quiet"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    settings = json.loads((out / "training_log.json").read_text())["settings"]
    assert (settings["precision"], settings["threads"]) == ("fp32", 1)
    assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"


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
    result = runner.invoke(
        app, ["train", "simcse", "--data", str(bad), "--base", str(tmp_path / "nope"), "--out", str(tmp_path / "m")]
    )
    assert result.exit_code == 1 and "does not exist" in result.output
    assert not (tmp_path / "m").exists()


def test_an_output_directory_that_cannot_take_a_model_is_refused_before_training(
    tiny_model: Path, tmp_path: Path
) -> None:
    """Writing the model replaces --out whole: `--out .` in the folder holding the data deleted the folder after
    training, and an --out at or under a file failed only at the first save, after the steps were run."""
    data = tmp_path / "sentences.txt"
    data.write_text("the cat sat on the mat\nrain and snow in the city\nreset my password\n")
    cases = [
        (tmp_path, data, "holds other things than a model (sentences.txt)"),
        (data / "model", tmp_path / "missing.txt", f"{data} is a file"),  # refused before the data is read
    ]
    for out, given, message in cases:
        result = runner.invoke(
            app,
            ["train", "simcse", "--base", str(tiny_model), "--data", str(given), "--out", str(out), "--steps", "1",
             "--batch-size", "2", "--quiet"],
        )  # fmt: skip
        assert result.exit_code == 1 and message in result.output, result.output
        assert "steps in" not in result.output and "Traceback" not in result.output
    assert [p.name for p in tmp_path.iterdir()] == ["sentences.txt"]


# The `train` subcommands are generated from the registry: every method listed, every option of its dataclass in
# its --help with its flag, short flag, default and bound.

WIDE = {"COLUMNS": "250"}  # one row per option in rich's help table


def option_rows(help_text: str) -> dict[str, str]:
    """The row of each option in a rich --help table, by its long flag."""
    rows = {}
    for line in help_text.splitlines():
        match = re.match(r"│ [ *]  (--[\w-]+)", line)
        if match:
            rows[match.group(1)] = line
    return rows


def test_train_lists_every_registered_method_in_order() -> None:
    result = runner.invoke(app, ["train", "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    listed = [name for name in re.findall(r"^│ (\S+) ", result.output, re.MULTILINE) if not name.startswith("-")]
    assert listed == list(METHODS)


@pytest.mark.parametrize("name", list(METHODS))
def test_each_method_help_shows_its_options_with_their_defaults(name: str) -> None:
    method = METHODS[name]
    result = runner.invoke(app, ["train", name, "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    assert inspect.getdoc(method).splitlines()[0] in result.output
    rows = option_rows(result.output)
    flags = {}
    for item in fields(method):
        flag = item.metadata.get("flag", "--" + item.name.replace("_", "-")).split("/")[0]
        flags[flag] = item
        row = rows[flag]
        if item.default is MISSING:
            assert "[required]" in row, row
        elif item.default is True:
            assert f"[default: {flag[2:]}]" in row, row
        elif item.default not in (None, False):
            assert f"[default: {item.default}]" in row, row
        for key, sign in (("min", ">="), ("max", "<=")):
            if key in item.metadata:
                assert f"x{sign}{item.metadata[key]}" in row, row
        if "short" in item.metadata:
            assert f" {item.metadata['short']} " in row, row
    assert set(rows) == {*flags, "--help"}


def test_the_options_keep_their_flags_and_defaults() -> None:
    """A few flags that do not follow from the field names, as the command line has always spelled them."""
    rows = {name: option_rows(runner.invoke(app, ["train", name, "--help"], env=WIDE).output) for name in METHODS}
    assert " -d " in rows["whitening"]["--data"] and " -d " not in rows["simcse"]["--data"]
    assert "--no-denoise" in rows["promptbert"]["--denoise"] and "--one-order" in rows["cross-encoder"]["--both-orders"]
    assert "[default: 2e-05]" in rows["simcse"]["--lr"] and "[default: 0.001]" in rows["flow"]["--lr"]
    assert (
        "[default: 32]" in rows["simcse"]["--max-seq-length"]
        and "[default: 64]" in rows["sbert-nli"]["--max-seq-length"]
    )
    assert "unsup|joint|sup-unsup|joint-unsup" in rows["consert"]["--schedule"]


def test_listing_the_methods_loads_no_training_code() -> None:
    code = (
        "import sys; from typer.testing import CliRunner; from searchengine.cli import app; "
        "assert CliRunner().invoke(app, ['train', 'consert', '--help']).exit_code == 0; "
        "print(sorted(name for name in ('torch', 'transformers', 'numpy') if name in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
