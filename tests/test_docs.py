"""Every code block of README.md and docs/*.md, checked as the rule in tests/docs_blocks.py says: the blocks marked
`<!-- docs-test: run -->` run for real, in order, in a fresh folder per page (copies of examples/ and docs/, so
the checkout stays clean), as a reader following the page would; those marked `serve` run while
`searchengine serve` answers there; every other `searchengine` command line is parsed against the real command
line, every `benchmarks/*/*.py` command line checked against the options its script declares, every other Python
block compiled and every JSON block loaded. The README says so ("Docs are tested")."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from itertools import groupby
from pathlib import Path

import pytest
import typer
import typer.core

from searchengine.cli import app
from tests.docs_blocks import (
    DOCS,
    ROOT,
    SHELL,
    Block,
    all_blocks,
    benchmark_commands,
    searchengine_commands,
    shell_lines,
)
from tests.serving import serve_process

BLOCKS = all_blocks()
RUN = ("run", "serve")
PAGES_THAT_RUN = sorted({block.path for block in BLOCKS if block.action in RUN})
DOCS_ADDRESS = "http://127.0.0.1:8000"
SHIM = '#!/bin/sh\nexec "{python}" {arguments} "$@"\n'


def parse_command_line(arguments: list[str]) -> None:
    """Parse `searchengine ARGUMENTS` as the real command line would, down to its subcommand, without running it:
    an unknown command or option, a missing value or one of the wrong type raises typer's usage error."""
    command, name, parent = typer.main.get_command(app), "searchengine", None
    while True:
        try:
            context = command.make_context(name, list(arguments), parent=parent)
        except typer.Exit as stop:  # --help and --version stop parsing, as they stop the command
            assert stop.exit_code == 0
            return
        if not isinstance(command, typer.core.TyperGroup):
            return
        rest = [*context._protected_args, *context.args]
        if not rest:
            return
        name, command, arguments = command.resolve_command(context, rest)
        parent = context


def with_block_variables(block: Block, arguments: list[str]) -> list[str]:
    """Arguments with each `$NAME` the block sets (`NAME=value`, `for NAME in first ...`) replaced by its first
    value, so that a loop's options are parsed with a value they really take."""
    values: dict[str, str] = {}
    for line in shell_lines(block):
        for name, value in re.findall(r"(?:^|[;&\s])([A-Za-z_]\w*)=(\S+)", line):
            values.setdefault(name, value)
        for name, value in re.findall(r"\bfor (\w+) in (\S+)", line):
            values.setdefault(name, value)
    return [
        re.sub(r"\$\{?([A-Za-z_]\w*)\}?", lambda found: values.get(found.group(1), found.group(0)), argument)
        for argument in arguments
    ]


@pytest.mark.parametrize("block", [block for block in BLOCKS if block.action not in RUN], ids=lambda b: b.name)
def test_every_block_parses(block: Block) -> None:
    """A `searchengine` command line names a real command with options it takes, a benchmark command line names a
    script that declares every option it passes; Python compiles; JSON loads."""
    if block.language in SHELL:
        for arguments in searchengine_commands(block):
            try:
                parse_command_line(with_block_variables(block, arguments))
            except typer.TyperException as error:
                pytest.fail(f"{block.name}: `searchengine {' '.join(arguments)}`: {error.format_message()}")
        for script, *arguments in benchmark_commands(block):
            assert (ROOT / script).is_file(), f"{block.name}: there is no {script}"
            source = (ROOT / script).read_text(encoding="utf-8")
            options = {argument.split("=")[0] for argument in arguments if argument.startswith("--")}
            unknown = sorted(option for option in options if f'"{option}"' not in source)
            assert not unknown, f"{block.name}: {script} declares no {', '.join(unknown)}"
    elif block.language == "python":
        compile(block.text, block.name, "exec")
    elif block.language == "json":
        json.loads(block.text)


def test_every_python_block_runs_or_says_why_it_cannot() -> None:
    """A Python block a reader pastes either runs under this test or is marked a fragment with the reason."""
    unmarked = [block.name for block in BLOCKS if block.language == "python" and block.action == "parse"]
    assert not unmarked, f"mark these docs-test: run, serve or fragment: REASON: {unmarked}"
    unexplained = [block.name for block in BLOCKS if block.action == "fragment" and len(block.reason.split()) < 3]
    assert not unexplained, f"say why each fragment cannot run (docs-test: fragment: REASON): {unexplained}"


def test_every_block_that_runs_is_shell_or_python() -> None:
    odd = [block.name for block in BLOCKS if block.action in RUN and block.language not in (*SHELL, "python")]
    assert not odd, f"only bash, console and python blocks can run: {odd}"


def test_the_rule_finds_the_blocks_it_should() -> None:
    """The README's corpus example, its Python block and its curl examples run (its quick start's two commands run
    in docs/files.md); the parse covers the other pages."""
    readme = {block.line: block for block in BLOCKS if block.path.name == "README.md"}
    assert {block.action for block in readme.values() if block.language == "python"} == {"run"}
    assert any(block.action == "serve" and "curl" in block.text for block in readme.values())
    assert sum(len(searchengine_commands(block)) for block in BLOCKS if block.language in SHELL) >= 50
    assert sum(len(benchmark_commands(block)) for block in BLOCKS if block.language in SHELL) >= 40


def shell_script(block: Block, address: str | None) -> str:
    """The commands of a shell block as one script. `./setup.sh` is left out: the test runs in the environment it
    made. A served block's address is the test server's."""
    lines = [re.sub(r"(^|&&\s*)\./setup\.sh( --dev)?\s*&&", r"\1", line) for line in shell_lines(block)]
    script = "\n".join(lines)
    return script.replace(DOCS_ADDRESS, address) if address else script


def run_block(block: Block, folder: Path, environment: dict[str, str], address: str | None) -> None:
    """Run one block in the folder (a served block against the server at `address`); fail with its output when it
    exits with an error."""
    if block.language == "python":
        text = block.text.replace(DOCS_ADDRESS, address) if address else block.text
        command = [sys.executable, "-c", text]
    else:
        command = ["bash", "-e", "-c", shell_script(block, address)]
    result = subprocess.run(command, cwd=folder, env=environment, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{block.name} exited with {result.returncode}:\n{result.stdout}\n{result.stderr}"


@pytest.mark.parametrize("page", PAGES_THAT_RUN, ids=lambda path: str(path.relative_to(ROOT)))
def test_blocks_that_run(page: Path, tmp_path: Path) -> None:
    """The page's run and serve blocks, in order, in one fresh folder: nothing but examples/ and docs/ there; serve
    blocks in a row share one `searchengine serve`."""
    for name in ("examples", "docs"):
        shutil.copytree(ROOT / name, tmp_path / name)
    shims = tmp_path / ".venv" / "bin"  # `.venv/bin/searchengine` and `searchengine` of the docs: this checkout's
    shims.mkdir(parents=True)
    for name, arguments in (("python", ""), ("searchengine", "-m searchengine")):
        (shims / name).write_text(SHIM.format(python=sys.executable, arguments=arguments), encoding="utf-8")
        (shims / name).chmod(0o755)
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("SEARCHENGINE_") or key == "SEARCHENGINE_CACHE"
    }
    environment["PATH"] = f"{shims}{os.pathsep}{environment.get('PATH', '')}"
    blocks = [block for block in BLOCKS if block.path == page and block.action in RUN]
    for served, group in groupby(blocks, key=lambda block: block.action == "serve"):
        if not served:
            for block in group:
                run_block(block, tmp_path, environment, None)
            continue
        # Serve blocks that follow one another run against one server, as a reader keeps one running between them.
        with serve_process([], tmp_path / "serve.log", cwd=tmp_path, env=environment) as address:
            for block in group:
                run_block(block, tmp_path, environment, address)


def _anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a Markdown page's headings (fenced code left out)."""
    text = re.sub(r"^\s*```.*?^\s*```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    headings = re.findall(r"^#+ (.+)$", text, flags=re.M)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def test_every_link_to_a_section_names_a_heading_of_its_page() -> None:
    """`page.md#section` in the README and docs/ (as links), and `docs/page.md#section` in the code's help texts,
    docstrings and comments, which send a reader to the measurement behind a choice."""
    links = [
        (page, (page.parent / target if target else page).resolve(), section)
        for page in DOCS
        for target, section in re.findall(r"\]\(([^)\s#]*)#([^)\s]+)\)", page.read_text(encoding="utf-8"))
    ]
    links += [
        (source, ROOT / target, section)
        for folder in ("searchengine", "indexer", "training")
        for source in sorted((ROOT / folder).rglob("*.py"))
        for target, section in re.findall(r"\b(docs/[\w.-]+\.md)#([\w-]+)", source.read_text(encoding="utf-8"))
    ]
    assert len(links) >= 50
    broken = [
        f"{source.relative_to(ROOT)}: {target.name}#{section}"
        for source, target, section in links
        if not target.is_file() or section not in _anchors(target)
    ]
    assert not broken, broken
