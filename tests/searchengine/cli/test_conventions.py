"""The conventions a command-line tool keeps: --version, shell completion, and help that quotes the README's
numbers."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from typer.testing import CliRunner

import searchengine
from searchengine.cli import app, flowing
from searchengine.cli.measured import (
    AMX_BF16_BULK_SPEEDUP,
    BF16_BULK_SPEEDUP,
    INT8_SPEEDUP,
    INT8_STSB_CHANGE,
    ONNX_QUERY_SPEEDUP,
)

ROOT = Path(__file__).resolve().parents[3]
runner = CliRunner()


def test_version_is_the_installed_distributions() -> None:
    assert searchengine.__version__ == version("searchengine")
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output == f"searchengine {version('searchengine')}\n"


def test_shell_completion_can_be_installed_and_completes_commands() -> None:
    help_text = runner.invoke(app, ["--help"]).output
    assert "--install-completion" in help_text and "--show-completion" in help_text
    # Started from bash, as a user types it: typer (through shellingham) completes for the shell among its parent
    # processes, and a test runner's worker process may have none. `; exit $?` keeps bash the parent, where bash
    # would exec a lone command.
    script = subprocess.run(
        ["bash", "-c", f"{shlex.quote(sys.executable)} -m searchengine --show-completion; exit $?"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert script.returncode == 0 and "_searchengine_completion" in script.stdout, script.stderr
    completing = {
        **os.environ,
        "_SEARCHENGINE_COMPLETE": "complete_bash",
        "COMP_WORDS": "searchengine qu",
        "COMP_CWORD": "1",
    }
    words = subprocess.run(
        [sys.executable, "-m", "searchengine"], env=completing, capture_output=True, text=True, timeout=120
    ).stdout.split()
    assert words == ["query"]


def test_the_readme_says_how_to_install_completion_and_read_the_version() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "searchengine --install-completion" in readme and "searchengine --version" in readme


def _help(*command: str) -> str:
    """The help of `command`, one option's text on one line (a terminal wide enough that nothing wraps)."""
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "3000", "TERMINAL_WIDTH": "3000"})
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


@pytest.mark.parametrize(
    ("constant", "help_says", "readme_says"),
    [
        (ONNX_QUERY_SPEEDUP, "{} faster per query", "about {} faster per query"),
        (INT8_STSB_CHANGE, "{} STS-B points", "for about {} STS-B points"),
        (
            INT8_SPEEDUP,
            "int8 ({} sentence-transformers' speed",
            "`--precision int8` is {} faster than sentence-transformers",
        ),
        (BF16_BULK_SPEEDUP, "64 texts or more ({} faster there", "in torch bf16, {} ONNX Runtime fp32 there"),
        (AMX_BF16_BULK_SPEEDUP, "{} with AMX)", "On one with AMX, torch bf16 was {} ONNX Runtime fp32"),
    ],
)
def test_help_and_readme_quote_the_same_measurement(constant: str, help_says: str, readme_says: str) -> None:
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    for command in (["index"], ["query"], ["add"]):
        assert help_says.format(constant) in _help(*command), command
    assert readme_says.format(constant) in readme


def test_help_shows_square_brackets_rather_than_reading_them_as_markup() -> None:
    assert "pip install 'searchengine[ray]'" in _help("index")


def test_help_paragraphs_wrap_at_the_terminals_width_and_examples_keep_their_lines() -> None:
    wide = runner.invoke(app, ["sync", "--help"], env={"COLUMNS": "200"}).output
    assert "one whose content hash is unchanged is not embedded again. Each folder is read" in wide
    assert flowing("First.\n\nTwo wrapped\nlines.\n\nExamples:\n\n  a \\\n    b\n") == (
        "First.\n\nTwo wrapped lines.\n\nExamples:\n\n  a \\\n    b"
    )
