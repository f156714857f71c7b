"""The writer lock (indexer/commit/writer_lock.py): one holder at a time, named in the refusal on one short line
whatever the lock file held before, and a lock file that is a symbolic link or not a regular file refused."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest
from searchengine.indexer.commit.writer_lock import LOCK, LOCK_TEXT_WIDTH, writer_lock
from searchengine.indexer.errors import IndexerError, IndexLockedError


def test_the_lock_names_its_holder_alone_whatever_the_file_held_before(tmp_path: Path) -> None:
    """The holder's text is written at a fixed width over the last one (no truncation at every write); a longer
    text left there by anything else is cut off, so a refused writer names the holder and nothing more. flock locks
    belong to an open file description, so a second open in this process conflicts too: it is named as this process
    (another thread or engine of it), not by a pid the caller would take for another process's."""
    (tmp_path / LOCK).write_text("x" * 100, encoding="utf-8")
    with writer_lock(tmp_path):
        named = rf"by this process \({os.getpid()}\): another thread or another SearchEngine of it; wait"
        with pytest.raises(IndexLockedError, match=named):
            with writer_lock(tmp_path):
                pass  # pragma: no cover
        assert (tmp_path / LOCK).read_text(encoding="utf-8") == f"process {os.getpid()}".ljust(LOCK_TEXT_WIDTH)
    with writer_lock(tmp_path):  # released once its block ended
        pass


@pytest.mark.parametrize(
    "text", [b"\xff\xfe\x00 not text", b"process 12" + b" " * 40 + b"\xc3", b"process 7\nand more" * 20]
)
def test_a_refused_writer_names_whatever_holds_the_lock_in_one_short_line(tmp_path: Path, text: bytes) -> None:
    """Something else holding the lock (a `flock` command, a writer between taking it and writing its text) may
    leave any bytes there: the refusal names at most LOCK_TEXT_WIDTH characters of them, on one line, and bytes
    that are not UTF-8 raised a UnicodeDecodeError."""
    (tmp_path / LOCK).write_bytes(text)
    with open(tmp_path / LOCK, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(IndexLockedError) as refused:
            with writer_lock(tmp_path):
                pass  # pragma: no cover
    holder = str(refused.value).partition("is being written by ")[2].partition("; wait")[0]
    assert holder and len(holder) <= LOCK_TEXT_WIDTH and "\n" not in str(refused.value) and "\x00" not in holder


def test_index_locked_error_is_an_indexer_error() -> None:
    assert issubclass(IndexLockedError, IndexerError)


def test_the_lock_file_is_never_followed_through_a_symlink(tmp_path: Path) -> None:
    precious = tmp_path / "precious.txt"
    precious.write_text("do not truncate", encoding="utf-8")
    index = tmp_path / "index"
    index.mkdir()
    (index / LOCK).symlink_to(precious)
    with pytest.raises(IndexerError, match="lock file .* is a symbolic link"):
        with writer_lock(index):
            pass  # pragma: no cover
    assert precious.read_text(encoding="utf-8") == "do not truncate"


def test_a_lock_file_that_is_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / LOCK)
    with pytest.raises(IndexerError, match="lock file .* is not a regular file"):
        with writer_lock(tmp_path):
            pass  # pragma: no cover
