"""`searchengine verify`, and write commands that meet a broken index: one line, and nothing changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from searchengine.engine.search_engine import SearchEngine
from tests.searchengine.cli.test_cli import assert_one_line_error, run


@pytest.fixture
def whitened_index(tmp_path: Path, tiny_model: Path, sentences: list[str]) -> Path:
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(f"{a} {b}" for a in sentences for b in sentences[:3]), encoding="utf-8")
    target = tmp_path / "w"
    result = run("index", corpus, "-d", target, "--model", tiny_model, "--whiten-k", "8", "-q")
    assert result.exit_code == 0, result.output
    return target


def _file(index: Path, role: str) -> Path:
    """The file of `role`: one the manifest names, or the index's vector segment ("segment")."""
    if role == "segment":
        return next(index.glob("segment.*.faiss"))
    manifest = json.loads((index / "manifest.json").read_text(encoding="utf-8"))
    return index / manifest["files"][role]


def _flip_a_byte(path: Path) -> None:
    """Corrupt a file and keep its size: what a size check cannot see."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x55
    path.write_bytes(bytes(data))


def _snapshot(directory: Path) -> dict[str, tuple[bytes, int]]:
    """Every file's bytes and mode, but SQLite's scratch files: the -shm (the shared memory every reader of the
    store maps) and an empty write-ahead log (which a connection creates or removes, holding no data)."""
    return {
        entry.name: (entry.read_bytes(), entry.stat().st_mode)
        for entry in directory.iterdir()
        if not entry.name.endswith("-shm") and not (entry.name.endswith("-wal") and entry.stat().st_size == 0)
    }


def test_verify_reports_each_file_ok(whitened_index: Path) -> None:
    result = run("verify", "-d", whitened_index)
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert [line.split()[:2] for line in lines] == [
        ["OK", "store"],
        ["OK", "segments"],
        ["OK", "rows"],
        ["OK", "manifest"],
        ["OK", "whitening"],
        ["OK", "segment.0"],
    ]
    assert "integrity_check finds every page and index intact; its counts agree" in lines[0]
    assert "one per searchable vector and tombstone" in lines[1]
    assert "match the checksums written with them; the keyword index agrees with the texts" in lines[2]
    assert "model and whitening agree with the store's record of the build" in lines[3]
    assert all("sha256 match" in line for line in lines[4:])


@pytest.mark.parametrize("role", ["segment", "whitening"])
def test_flipped_bytes_are_caught_by_verify_and_on_open(whitened_index: Path, role: str) -> None:
    damaged = _file(whitened_index, role)
    _flip_a_byte(damaged)
    result = run("verify", "-d", whitened_index)
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert [line.split()[0] for line in lines[:-1]].count("FAILED") == 1
    assert any(line.startswith("FAILED") and damaged.name in line and "checksum" in line for line in lines)
    assert lines[-1] == f"Error: 1 file of the index at {whitened_index} is damaged; rebuild the index from its corpus"
    assert_one_line_error(run("info", "-d", whitened_index), "is corrupt: its checksum", damaged.name)
    assert_one_line_error(run("query", "anything", "-d", whitened_index), "is corrupt: its checksum")


@pytest.mark.parametrize("role", ["segment", "documents", "whitening"])
def test_verify_says_a_file_it_may_not_read_is_unreadable_not_damaged(whitened_index: Path, role: str) -> None:
    """Run as a separate process without root's permission override (setpriv), so the file's mode applies."""
    unreadable = _file(whitened_index, role)
    unreadable.chmod(0)
    command = [sys.executable, "-m", "searchengine", "verify", "-d", str(whitened_index)]
    if os.geteuid() == 0:
        command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *command]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    finally:
        unreadable.chmod(0o644)
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode == 1, lines
    assert any(line.startswith("FAILED") and unreadable.name in line for line in lines), lines
    assert lines[-1] == (
        f"Error: 1 file of the index at {whitened_index} may not be read by this user, so verify cannot tell whether "
        "it is intact: check the permissions of the files and the directory, or run verify as their owner"
    )
    assert run("verify", "-d", whitened_index).exit_code == 0  # readable again, and never changed


def test_verify_of_a_missing_index_is_one_line(tmp_path: Path) -> None:
    assert_one_line_error(run("verify", "-d", tmp_path / "nothing"), "no index at")


@pytest.mark.parametrize(
    "command",
    [
        ["add", "CORPUS"],
        ["delete", "0"],
        ["delete", "--external", "x"],
        ["compact"],
        ["cluster", "--k", "2"],
        ["mine", "--threshold", "0.9", "--dedupe"],
    ],
)
def test_a_write_command_on_a_broken_index_changes_nothing(
    whitened_index: Path, tmp_path: Path, command: list[str]
) -> None:
    corpus = tmp_path / "more.txt"
    corpus.write_text("one more text\n", encoding="utf-8")
    _flip_a_byte(_file(whitened_index, "segment"))
    (whitened_index / "spool.1.tmp").write_bytes(b"left by a killed run")  # a writer would clean this up
    before = _snapshot(whitened_index)
    result = run(*[str(corpus) if part == "CORPUS" else part for part in command], "-d", whitened_index)
    assert_one_line_error(result, "is corrupt: its checksum")
    assert _snapshot(whitened_index) == before


@pytest.mark.parametrize("written", ["1_0", "\u0663", "+3"])
def test_delete_reads_only_plain_digits_as_an_id(whitened_index: Path, sentences: list[str], written: str) -> None:
    """int() reads 1_0 as 10 and an Arabic-Indic digit as 3: a mistyped id must delete nothing."""
    assert_one_line_error(run("delete", written, "-d", whitened_index), "is not a document id", "--external")
    with SearchEngine.open(whitened_index) as engine:
        assert len(engine) == 3 * len(sentences)
