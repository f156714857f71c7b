"""A hostile tester in a box: many bad inputs run against fresh copies of a small index through the CLI.

Each case copies a small index (built once with a tiny model), may break the copy or write a bad input file,
snapshots the index directory's files and bytes, runs one CLI command, and passes when the command printed one
`Error: ...` line, exited 1 and left every file of the index as it was (the writer's `.lock` is not index
data). Run it as `python -m tests.hostile.harness` for a report; tests/hostile/test_hostile_inputs.py runs it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from typer.testing import CliRunner

from searchengine.cli import app

Setup = Callable[["Workspace"], None]

DOCUMENTS = [
    {
        "id": "d1",
        "text": "how do i reset my password",
        "lang": "en",
        "year": 2019,
        "yearstr": "2004",
        "tags": ["account", "help"],
        "my field": "x",
    },
    {"id": "d2", "text": "the cat sat on the mat", "lang": "en", "year": 2020, "yearstr": "2010", "tags": ["pets"]},
    {
        "id": "d3",
        "text": "stock prices fell as the market rate rose",
        "lang": "de",
        "year": 2021,
        "yearstr": "2021",
        "tags": ["money"],
    },
    {
        "id": "d4",
        "text": "plant the seed in warm soil and water it",
        "lang": "fr",
        "year": 2022,
        "yearstr": "1999",
        "tags": ["garden"],
    },
    {
        "id": "d5",
        "text": "the rocket flew past the moon toward a distant planet",
        "lang": "en",
        "year": 2023,
        "yearstr": "2023",
        "tags": ["space"],
        "my field": "y",
    },
    {
        "id": "d6",
        "text": "bake the bread in a hot oven with salt",
        "lang": "de",
        "year": 2018,
        "yearstr": "2018",
        "tags": ["cook"],
    },
]


@dataclass
class Workspace:
    """One case's world: a fresh copy of the index, a folder for input files, the tiny model."""

    root: Path
    index: Path
    model: Path

    def write(self, name: str, content: str | bytes) -> Path:
        path = self.root / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
        return path


@dataclass
class Case:
    """A bad input: the command's arguments (`{index}`, `{model}` and `{root}` are filled in), a setup that
    breaks the index or writes input files, standard input, and whether it needs a real process (permissions)."""

    name: str
    args: list[str]
    setup: Setup | None = None
    stdin: str | None = None
    fragments: tuple[str, ...] = ()
    """Words the one-line message must hold."""
    process: bool = False
    """Run as a separate process without root's permission override (permission cases)."""
    disk: bool = False
    """Put the index on a small tmpfs filled to the brim (needs root to mount)."""


@dataclass
class Outcome:
    case: Case
    passed: bool
    problem: str = ""
    output: str = ""


@dataclass
class Report:
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failures(self) -> list[Outcome]:
        return [outcome for outcome in self.outcomes if not outcome.passed]

    def summary(self) -> str:
        passed = len(self.outcomes) - len(self.failures)
        lines = [
            f"{passed} of {len(self.outcomes)} bad inputs got a one-line Error: with exit 1 and the index unchanged "
            f"({self.seconds:.1f} s)"
        ]
        for outcome in self.failures:
            lines.append(f"FAIL {outcome.case.name}: {outcome.problem}\n    {outcome.output.strip()[-600:]}")
        return "\n".join(lines)


def snapshot(directory: Path) -> dict[str, str]:
    """Every file under `directory` (but the writer's lock, SQLite's -shm, the shared-memory index of the
    write-ahead log that every reader of the store maps, and an empty write-ahead log, which a reader may create)
    -> sha256 of its bytes, plus its mode."""
    result = {}
    for path in sorted(directory.rglob("*")):
        sqlite_scratch = path.name.endswith("-shm") or (path.name.endswith("-wal") and path.stat().st_size == 0)
        if path.is_file() and path.name != ".lock" and not sqlite_scratch:
            result[str(path.relative_to(directory))] = (
                hashlib.sha256(path.read_bytes()).hexdigest() + f" {path.stat().st_mode:o}"
            )
    return result


def build_base(root: Path, model: Path) -> dict[str, Path]:
    """The small indexes every case starts from: plain Flat, and one whitened to 8 dimensions."""
    corpus = root / "base.jsonl"
    corpus.write_text("\n".join(json.dumps(d) for d in DOCUMENTS) + "\n", encoding="utf-8")
    bases = {}
    for name, extra in (("plain", []), ("whitened", ["--whiten-k", "4"])):
        target = root / f"base-{name}"
        result = CliRunner().invoke(
            app, ["index", str(corpus), "-d", str(target), "--model", str(model), "--id-field", "id", "-q", *extra]
        )
        if result.exit_code != 0:
            raise RuntimeError(f"building the base index failed: {result.output}")
        bases[name] = target
    return bases


def _fill(args: list[str], workspace: Workspace) -> list[str]:
    return [a.format(index=workspace.index, model=workspace.model, root=workspace.root) for a in args]


def _one_line_problem(exit_code: int, output: str, fragments: tuple[str, ...]) -> str:
    message = output.strip()
    if "Traceback" in output:
        return "traceback"
    if exit_code != 1:
        return f"exit code {exit_code}"
    if not message.startswith("Error: ") or "\n" in message:
        return "not one Error: line"
    missing = [f for f in fragments if f not in message]
    return f"message lacks {missing}" if missing else ""


def base_of(case: Case) -> str:
    """Which base index a case starts from: the whitened one for cases about whitening."""
    return "whitened" if "whitening" in case.name else "plain"


def run_case(case: Case, base: Path, model: Path, scratch: Path) -> Outcome:
    root = Path(tempfile.mkdtemp(dir=scratch))
    with _index_place(root, case.disk) as place:
        index = place / "index"
        shutil.copytree(base, index)
        workspace = Workspace(root, index, model)
        if case.setup is not None:
            case.setup(workspace)
        before = snapshot(place)
        args = _fill(case.args, workspace)
        try:
            if case.process:
                exit_code, output = _run_process(args, case.stdin)
            else:
                result = CliRunner().invoke(app, args, input=case.stdin)
                exit_code, output = result.exit_code, result.output
                if result.exception is not None and not isinstance(result.exception, SystemExit):
                    output += f"\nTraceback: {type(result.exception).__name__}: {result.exception}"
            problem = _one_line_problem(exit_code, output, case.fragments)
            if not problem and snapshot(place) != before:
                problem = "the index directory changed"
        finally:
            _restore_permissions(root)
    shutil.rmtree(root, ignore_errors=True)
    return Outcome(case, not problem, problem, output)


@contextmanager
def _index_place(root: Path, disk: bool) -> Iterator[Path]:
    if not disk:
        yield root
        return
    mount = root / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "--lazy", str(mount)], check=True)


def fill_disk(workspace: Workspace) -> None:
    """Fill the filesystem holding the index to the last byte."""
    filler = workspace.index.parent / "filler"
    try:
        with open(filler, "wb") as handle:
            while True:
                handle.write(b"\0" * 4096)
                handle.flush()
    except OSError:
        pass


def can_mount() -> bool:
    """Whether this process may mount a tmpfs (root in a container that allows it): the full-disk cases need it."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    probe = Path(tempfile.mkdtemp())
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)], capture_output=True)
        if done.returncode != 0:
            return False
        subprocess.run(["umount", str(probe)], check=True)
        return True
    finally:
        probe.rmdir()


def _run_process(args: list[str], stdin: str | None) -> tuple[int, str]:
    command = [sys.executable, "-m", "searchengine", *args]
    if os.geteuid() == 0:  # root reads and writes anything: drop that power so permissions apply
        command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *command]
    done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr


def _restore_permissions(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)


def run_cases(cases: list[Case], model: Path, scratch: Path) -> Report:
    """Build the base indexes in `scratch`, run every case, and say how each went."""
    started = time.perf_counter()
    bases = build_base(scratch, model)
    report = Report()
    for case in cases:
        report.outcomes.append(run_case(case, bases[base_of(case)], model, scratch))
    report.seconds = time.perf_counter() - started
    return report


def main() -> None:
    from tests.conftest import write_tiny_model
    from tests.hostile.cases import all_cases

    with tempfile.TemporaryDirectory() as scratch:
        os.environ.setdefault("SEARCHENGINE_CACHE", str(Path(scratch) / "cache"))
        model = write_tiny_model(Path(scratch) / "model")
        report = run_cases(all_cases(disk=can_mount()), model, Path(scratch))
    print(report.summary())
    sys.exit(1 if report.failures else 0)


if __name__ == "__main__":
    main()
