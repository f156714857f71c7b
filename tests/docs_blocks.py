"""The code blocks of README.md and docs/*.md, and the `searchengine` command lines in them, for tests/test_docs.py.

Each fenced block is one `Block`. A comment on the line before its fence says what the docs test does with it:
`<!-- docs-test: run -->` runs it for real, `<!-- docs-test: serve -->` runs it while `searchengine serve`
answers on the address it names, and `<!-- docs-test: fragment: REASON -->` says why it cannot run as it is (it
needs a second server, the downloaded data, minutes of training): a Python block must carry one of the three.
Without one, and for a fragment, nothing runs: every `searchengine` command line of a shell block is
parsed against the real command line (its command, options, their values and arguments), every
`python benchmarks/AREA/SCRIPT.py` line may pass only options the script declares, Python compiles and JSON loads.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
SHELL = ("bash", "console", "sh", "shell")
MARKER = re.compile(r"<!--\s*docs-test:\s*(run|serve|fragment)(?::\s*(.*?))?\s*-->")
FENCE = re.compile(r"^(\s*)(```+)\s*([\w-]*)\s*$")
SEPARATORS = {"&&", "||", ";", "|", "&", "(", ")"}
REDIRECTS = {">", ">>", "<", "2>", "2>&1", ">&"}


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language, its text and what the docs test does with it."""

    path: Path
    line: int
    language: str
    text: str
    action: str  # "parse", "run", "serve" or "fragment"
    reason: str = ""  # why a fragment cannot run

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """Every fenced code block of a Markdown file, with the action its marker comment (or its absence) names."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, fence, language = opening.groups()
        end = index + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        body = "\n".join(line[len(indent) :] if line.startswith(indent) else line for line in lines[index + 1 : end])
        previous = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        marker = MARKER.search(previous)
        action, reason = (marker.group(1), marker.group(2) or "") if marker else ("parse", "")
        found.append(Block(path, index + 1, language.lower(), body + "\n", action, reason.strip()))
        index = end + 1
    return found


def all_blocks() -> list[Block]:
    """The code blocks of README.md and every docs/*.md, in file order."""
    return [block for path in DOCS for block in blocks(path)]


def shell_lines(block: Block) -> list[str]:
    """The commands a shell block runs: a console block's `$ ` lines, or every line of a bash block, each with its
    backslash continuations joined."""
    lines = block.text.splitlines()
    if block.language == "console":
        commands: list[str] = []
        continuing = False
        for line in lines:
            if line.startswith("$ ") or continuing:
                commands.append(line[2:] if line.startswith("$ ") and not continuing else line)
                continuing = line.endswith("\\")
        lines = commands
    joined = "\n".join(lines).replace("\\\n", " ")
    return [line for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def simple_commands(line: str) -> list[list[str]]:
    """The simple commands of one shell line (split at `&&`, `||`, `;` and pipes), without redirections, leading
    `VAR=value` assignments and `time`."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars="|&;()<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    commands: list[list[str]] = [[]]
    tokens = list(lexer)
    position = 0
    while position < len(tokens):
        token = tokens[position]
        if token in SEPARATORS or token in {"&&", "||"}:
            commands.append([])
        elif token in REDIRECTS or (
            token.isdigit() and position + 1 < len(tokens) and tokens[position + 1] in REDIRECTS
        ):
            position += 1 if token in REDIRECTS else 2  # the redirection's target (or operator and target)
        else:
            commands[-1].append(token)
        position += 1
    cleaned = []
    for words in commands:
        while words and (
            re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]) or words[0] in {"time", "/usr/bin/time", "-v"}
        ):
            words = words[1:]
        if words:
            cleaned.append(words)
    return cleaned


def searchengine_commands(block: Block) -> list[list[str]]:
    """The arguments of every `searchengine` command line in a shell block (after `searchengine` itself)."""
    found = []
    for line in shell_lines(block):
        for words in simple_commands(line):
            if Path(words[0]).name == "searchengine":
                found.append(words[1:])
            elif words[:3] in (["python", "-m", "searchengine"], [".venv/bin/python", "-m", "searchengine"]):
                found.append(words[3:])
    return found


def benchmark_commands(block: Block) -> list[list[str]]:
    """The arguments of every `python benchmarks/AREA/SCRIPT.py` command line in a shell block, the script first."""
    return [
        words[1:]
        for line in shell_lines(block)
        for words in simple_commands(line)
        if len(words) > 1 and Path(words[0]).name.startswith("python") and words[1].startswith("benchmarks/")
    ]
