"""The writer lock of an index directory: one process writes an index at a time. An flock on the directory's .lock
file, which names its holder ("process <pid>") so a writer refused names who writes; the file is opened without
ever following a symbolic link, and a lock file that is not a regular file is refused."""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from searchengine.indexer.errors import IndexerError, IndexLockedError, storage_error_kind

LOCK = ".lock"
LOCK_TEXT_WIDTH = 32
"""Characters of the lock file's text ("process <pid>", padded with spaces): a fixed width, so writing it over the
last holder's leaves nothing of that behind without truncating the file."""


@contextmanager
def writer_lock(directory: Path, wait: float = 0.0) -> Iterator[None]:
    """Hold the writer lock of the index in `directory` (which must exist). `wait`: seconds to wait for another
    writer to finish (0: fail at once with IndexLockedError naming it)."""
    with _open_lock(directory / LOCK) as lock:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                raise IndexLockedError(
                    f"index {directory} is being written by {_lock_holder(lock.fileno())}; wait for it to finish "
                    "and try again"
                ) from None
        lock.seek(0)
        # padded to a fixed width instead of truncated first: ftruncate cost a one-document add a measurable share
        # (docs/benchmarks.md#serving); 32 characters hold any pid, and readers strip the padding
        lock.write(f"process {os.getpid()}".ljust(LOCK_TEXT_WIDTH))
        lock.flush()
        if os.fstat(lock.fileno()).st_size > LOCK_TEXT_WIDTH:  # longer text from elsewhere: cut it off once
            lock.truncate(LOCK_TEXT_WIDTH)
        yield


def _open_lock(path: Path) -> TextIO:
    """The lock file, opened without ever following a symbolic link (O_NOFOLLOW): a link planted there cannot
    make the writer truncate and write some other file."""
    if path.exists() and not path.is_symlink() and not path.is_file():  # a FIFO would block the open
        raise IndexerError(
            f"the lock file {path} is not a regular file (a FIFO, a device or a directory); remove it and try again"
        )
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise IndexerError(
                f"the lock file {path} is a symbolic link, which is never followed; remove it and try again"
            ) from None
        raise storage_error_kind(exc)(f"cannot open the lock file {path} ({exc.strerror or exc})") from None
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):  # swapped for one between the check and the open
        os.close(descriptor)
        raise IndexerError(f"the lock file {path} is not a regular file; remove it and try again")
    os.set_blocking(descriptor, True)
    return os.fdopen(descriptor, "r+", encoding="utf-8")


def _lock_holder(descriptor: int) -> str:
    """Who holds the lock, as the lock file's first LOCK_TEXT_WIDTH bytes say ("process <pid>" for a writer), on one
    line: whatever something else holding it left there (a `flock` command, a writer between taking the lock and
    writing its text) never raises, nor runs on. A holder that is this process (another of its threads, or another
    engine it opened on the same folder) is named so, not by a pid the caller would take for someone else's."""
    text = os.pread(descriptor, LOCK_TEXT_WIDTH, 0).decode("utf-8", "replace")
    holder = " ".join("".join(c if c.isprintable() else " " for c in text).split()) or "another process"
    if holder == f"process {os.getpid()}":  # flock is per open file: a second writer of this same process
        return f"this process ({os.getpid()}): another thread or another SearchEngine of it"
    return holder
