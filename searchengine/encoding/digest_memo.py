"""Remember digests of large files across processes, keyed on the files' stat, so that a cold query does not
re-read ~90 MB of weights and export to prove they are the ones it checked last time.

The key holds each file's path, size, inode, mtime_ns and ctime_ns. Any write to a file changes its ctime (which
no user call can set back), so a file changed in place, replaced or touched is hashed again; an unchanged file is
not. File times tick coarsely (a few milliseconds), so a file changed within the tick of its last change could
keep its times: as git does for its index, a digest is remembered only for files last changed more than
SETTLED_SECONDS ago. Memos are small files under cache_root()/digests, written atomically; where that directory
cannot be written the digest is simply computed each time. What this does not catch is a change no write made
(bits rotting on disk); `searchengine verify` reads every byte of an index."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from searchengine.encoding.cache_location import cache_root

SETTLED_SECONDS = 2.0
"""How long ago a file must have last changed for its digest to be remembered."""


def memo_directory() -> Path:
    return cache_root() / "digests"


def _stat_key(files: Sequence[Path], context: str, settled_seconds: float) -> tuple[str, bool] | None:
    """A hash of what the memo is for (`context`) and every file's identity on disk, and whether every file has
    settled (last changed over `settled_seconds` ago); None when a file is missing."""
    parts, newest = [context], 0
    for file in files:
        try:
            stat = os.stat(file)
        except OSError:
            return None
        newest = max(newest, stat.st_mtime_ns, stat.st_ctime_ns)
        parts.append(f"{Path(file).resolve()}\0{stat.st_size}\0{stat.st_ino}\0{stat.st_mtime_ns}\0{stat.st_ctime_ns}")
    settled = time.time_ns() - newest > settled_seconds * 1e9
    return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest(), settled


def memoized_digest(
    files: Sequence[Path], context: str, compute: Callable[[], str], *, settled_seconds: float = SETTLED_SECONDS
) -> str:
    """`compute()` (a digest over `files`), or the value it gave last time when no file has changed since (a value
    is remembered only once every file last changed over `settled_seconds` ago)."""
    stated = _stat_key(files, context, settled_seconds)
    if stated is None:
        return compute()
    key, settled = stated
    memo = memo_directory() / f"{key}.json"
    try:
        recorded = json.loads(memo.read_text(encoding="utf-8"))
        if isinstance(recorded, dict) and isinstance(recorded.get("digest"), str) and recorded.get("key") == key:
            return recorded["digest"]
    except (OSError, ValueError):
        pass
    digest = compute()
    if settled and _stat_key(files, context, settled_seconds) == stated:  # settled, and unchanged while it was read
        _write(memo, {"key": key, "digest": digest})
    return digest


def _write(memo: Path, record: dict[str, str]) -> None:
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=memo.parent, prefix=".memo-")
    except OSError:
        return
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(record, file)
        os.replace(temporary, memo)
    except OSError:
        Path(temporary).unlink(missing_ok=True)


def file_sha256(path: Path) -> str:
    """The hex sha256 of a file's bytes, read in 1 MiB blocks (remembered while the file is unchanged)."""

    def compute() -> str:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
        return digest.hexdigest()

    return memoized_digest([path], "sha256", compute)


def regular_size(path: Path) -> int:
    """The size of `path` when it is a regular file and not a link; OSError otherwise. Checked before a cached file
    is hashed or read: a link to /dev/zero would make reading it endless."""
    status = path.lstat()
    if not stat.S_ISREG(status.st_mode):
        raise OSError(f"{path} is not a regular file")
    return status.st_size
