"""The conventions a command-line tool keeps: --version, shell completion, and help that quotes the README's
numbers."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from typer.testing import CliRunner

import searchengine
from searchengine.cli import app

ROOT = Path(__file__).resolve().parents[3]
runner = CliRunner()


def test_version_is_the_installed_distributions() -> None:
    assert searchengine.__version__ == version("searchengine")
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output == f"searchengine {version('searchengine')}\n"


def test_shell_completion_can_be_installed_and_completes_commands() -> None:
    help_text = runner.invoke(app, ["--help"]).output
    assert "--install-completion" in help_text and "--show-completion" in help_text
    script = runner.invoke(app, ["--show-completion", "bash"], prog_name="searchengine")
    assert script.exit_code == 0 and "_searchengine_completion" in script.output
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
