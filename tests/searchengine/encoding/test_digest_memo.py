"""Digests remembered across processes while their files are unchanged, recomputed once a file changes."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest

from searchengine.encoding.digest_memo import memo_directory, memoized_digest
from searchengine.encoding.model_source import locate_model
from searchengine.encoding.onnx_cache import file_sha256


def _counting(path: Path, calls: list[int]):  # noqa: ANN202
    def compute() -> str:
        calls.append(1)
        return hashlib.sha256(path.read_bytes()).hexdigest()

    return compute


def test_a_settled_file_is_hashed_once_and_a_changed_one_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEARCHENGINE_CACHE", str(tmp_path / "cache"))
    path, calls = tmp_path / "weights.bin", []
    path.write_bytes(b"a" * 1000)

    def digest(context: str) -> str:  # every file counts as settled
        return memoized_digest([path], context, _counting(path, calls), settled_seconds=0.0)

    first = digest("test")
    assert digest("test") == first and len(calls) == 1
    assert digest("another use") == first and len(calls) == 2
    time.sleep(0.05)  # past the file system's time tick
    with path.open("r+b") as handle:  # same size, same inode, one byte changed in place
        handle.write(b"b")
    changed = digest("test")
    assert changed == hashlib.sha256(b"b" + b"a" * 999).hexdigest() != first and len(calls) == 3
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # times put back: ctime still moves
    assert digest("test") == changed and len(calls) == 4


def test_a_fresh_file_is_never_remembered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file changed within the last SETTLED_SECONDS could change again within one time tick unseen."""
    monkeypatch.setenv("SEARCHENGINE_CACHE", str(tmp_path / "cache"))
    path, calls = tmp_path / "export.onnx", []
    path.write_bytes(b"x" * 10)
    memoized_digest([path], "test", _counting(path, calls))
    memoized_digest([path], "test", _counting(path, calls))
    assert len(calls) == 2 and not memo_directory().exists()


def test_an_unwritable_cache_still_gives_the_digest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory would be")
    monkeypatch.setenv("SEARCHENGINE_CACHE", str(blocker))
    path = tmp_path / "f"
    path.write_bytes(b"content")
    settled = memoized_digest([path], "sha256", lambda: hashlib.sha256(b"content").hexdigest(), settled_seconds=0.0)
    assert settled == hashlib.sha256(b"content").hexdigest()  # remembering it failed quietly
    assert file_sha256(path) == hashlib.sha256(b"content").hexdigest()
    missing = tmp_path / "gone"
    with pytest.raises(FileNotFoundError):
        file_sha256(missing)


def test_a_remembered_model_fingerprint_equals_the_computed_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = locate_model()
    computed = source.fingerprint()  # the bundled files are old: this remembers it
    monkeypatch.setenv("SEARCHENGINE_CACHE", str(tmp_path / "cache"))
    assert source.fingerprint() == computed
    assert len(list(memo_directory().glob("*.json"))) == 1
    assert source.fingerprint() == computed
