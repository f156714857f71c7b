"""The conventions a command-line tool keeps: --version, shell completion, and help that says what a choice does
and links to the doc that measures it, quoting no measured figure that would go stale."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

import searchengine
from searchengine.cli import app, flowing

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


def _commands(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command and sub-command of the app, as the words that name it."""
    found = [path]
    for name, sub in getattr(command, "commands", {}).items():
        found += _commands(sub, (*path, name))
    return found


def _anchors(page: Path) -> set[str]:
    """The anchors of a Markdown page's headings, as GitHub makes them."""
    headings = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


@pytest.mark.parametrize("command", [["index"], ["query"], ["add"]])
def test_help_links_the_encoder_choices_to_the_doc_that_measures_them(command: list[str]) -> None:
    shown = re.split(r" (?=--[\w-]+ <)", _help(*command))
    for option in ("--precision", "--backend"):
        (text,) = [part for part in shown if part.startswith(f"{option} <")]
        assert "measured in docs/benchmarks.md#encoding-speed." in text.lower(), (command, option)
    assert "encoding-speed" in _anchors(ROOT / "docs" / "benchmarks.md")


def test_no_help_quotes_a_measured_figure() -> None:
    """Speed-ups, latencies and score changes go stale; help names the doc that measures them instead. Defaults and
    limits (64 texts, 8 MiB, 200,000 documents) are not figures and stay."""
    figure = re.compile(r"\d[\d.,–−-]*\s?(?:×|x\b|ms\b|s of CPU)|STS-B points|nDCG@10 \d")
    quoted = {
        " ".join(command): found
        for command in _commands(typer.main.get_command(app))
        if (found := figure.findall(_help(*command)))
    }
    assert not quoted, quoted


def test_help_shows_square_brackets_rather_than_reading_them_as_markup() -> None:
    assert "pip install 'searchengine[ray]'" in _help("index")


def test_help_paragraphs_wrap_at_the_terminals_width_and_examples_keep_their_lines() -> None:
    wide = runner.invoke(app, ["sync", "--help"], env={"COLUMNS": "200"}).output
    assert "one whose content hash is unchanged is not embedded again. Each folder is read" in wide
    assert flowing("First.\n\nTwo wrapped\nlines.\n\nExamples:\n\n  a \\\n    b\n") == (
        "First.\n\nTwo wrapped lines.\n\nExamples:\n\n  a \\\n    b"
    )
