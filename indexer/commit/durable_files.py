"""Checksums and fsync: what makes a file safe to name in a commit."""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
from pathlib import Path


def file_checksum(path: Path) -> str:
    """'sha256:<hex>' of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return f"sha256:{digest.hexdigest()}"


def fsync_path(path: Path) -> None:
    """fsync a file or a directory (so a rename or a new file in it is durable)."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


class ClaimedFile:
    """A new file held by this process while it is being made: created exclusively and share-locked (flock), so a
    writer's clean-up, which removes unnamed files only when it can lock them (`in_use`), leaves it alone until
    this process commits it or dies. `still_here` says whether the path is still this file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, 0o644)
        fcntl.flock(self._descriptor, fcntl.LOCK_SH)
        self._inode = os.fstat(self._descriptor).st_ino

    def still_here(self) -> bool:
        """True while the path names the file this object created (clean-up did not remove it)."""
        try:
            return self.path.stat().st_ino == self._inode
        except OSError:
            return False

    def release(self) -> None:
        if self._descriptor >= 0:
            os.close(self._descriptor)
            self._descriptor = -1


def in_use(path: Path) -> bool:
    """Whether another process holds `path` as a ClaimedFile (it is being made, not abandoned)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
    finally:
        os.close(descriptor)
    return False
