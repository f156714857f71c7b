"""Keeping the store's write-ahead log small while readers hold read snapshots.

SQLite appends each commit to the store's -wal file and copies it into the database file at checkpoints. It starts
the log again from its beginning only when a checkpoint has copied all of it and no reader still reads from it. A
reader here holds one read snapshot for as long as no writer commits (DocumentStore.read_snapshot), and a snapshot
begun before the log was all copied keeps reading the log, so under steady writes neither happens and the file
grows with every write, to many times the store's size after a large add through the server, and it stayed after
the server stopped (measured in docs/benchmarks.md#serving). So:
  1. a write through a SearchEngine lets go of that engine's snapshot first (IndexSnapshot.writing);
  2. a commit that leaves the log over WAL_KEEP_BYTES waits up to WAL_WAIT_S for the readers to move to the
     database file, then empties the log (`truncate_log`);
  3. meanwhile each reader whose commit has not changed renews its snapshot once the log is all copied, or while
     a writer waits for it (`LogUpkeep`, called from SearchEngine.refresh); the renewed snapshot reads the
     database file alone.
A reader that never renews (a SearchEngine held open without `refresh`) only keeps the log from being emptied:
the writer stops waiting for it, and waits again no sooner than WAL_RETRY_S later in the same process.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from searchengine.indexer.tables import store_connection

WAL_WAIT_S = 1.0
"""How long a commit waits, at most, for readers to leave the log it would empty."""

WAL_RETRY_S = 30.0
"""How long after a wait that ran out a writer in the same process waits again (a reader that did not move in
WAL_WAIT_S is likely one that never will)."""

_waited_in_vain: dict[str, float] = {}
"""When a wait for readers last ran out, by store path (this process only)."""

CHECK_EVERY_S = 0.05
"""How often, at most, a reader checkpoints while the log is over WAL_KEEP_BYTES (a reader that never moves on,
such as an idle Python session holding an engine, keeps the log from starting again however often others try)."""


def truncate_log(connection: sqlite3.Connection, path: Path) -> None:
    """After a commit on `connection`: if the log of the store at `path` is over WAL_KEEP_BYTES, copy all of it
    into the database file, wait up to WAL_WAIT_S for readers to move there, and empty it (SQLite's TRUNCATE
    checkpoint). The commit is done either way: a checkpoint that fails or runs out of time changes nothing."""
    key = str(path)
    if _log_bytes(path) <= store_connection.WAL_KEEP_BYTES:
        return
    waited_in_vain = time.monotonic() - _waited_in_vain.get(key, -WAL_RETRY_S) < WAL_RETRY_S
    wait_ms = 0 if waited_in_vain else int(WAL_WAIT_S * 1000)
    try:
        connection.execute(f"PRAGMA busy_timeout = {wait_ms}")
        try:
            busy, _, _ = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            connection.execute(f"PRAGMA busy_timeout = {store_connection.BUSY_TIMEOUT_MS}")
    except sqlite3.Error:
        return
    if busy and wait_ms:
        _waited_in_vain[key] = time.monotonic()
    elif not busy:
        _waited_in_vain.pop(key, None)


def empty_log(path: Path) -> None:
    """Fold the log of the store at `path` into it and remove it, where nothing else reads it any more (SQLite
    does so when the last connection closes, but only one that can write): for the server, once its readers and
    writer closed. Does nothing where the store cannot be written or another process still reads it."""
    if _log_bytes(path) == 0 or not _writable(Path(path)):
        return
    try:
        connection = _open_existing(Path(path))
        try:
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            connection.close()
    except sqlite3.Error:
        return


def _open_existing(path: Path) -> sqlite3.Connection:
    """A read-write connection that never waits and never creates the file (a store a merge just removed)."""
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True, timeout=0)


def _writable(path: Path) -> bool:
    """Whether this user may write the store and its directory (where SQLite writes the log)."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def _log_bytes(path: Path) -> int:
    try:
        return os.stat(f"{path}-wal").st_size
    except OSError:
        return 0


class LogUpkeep:
    """Checkpoints of the store at `path`'s write-ahead log on behalf of one reader, and when that reader should
    renew its snapshot. Its connection is opened on first use, in the thread that uses it, and can write the
    database file (a checkpoint copies committed pages into it; nothing else is ever written through it)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._connection: sqlite3.Connection | None = None
        self._usable = _writable(self.path)
        self._checked_at = -CHECK_EVERY_S
        self._renewed_for: int | None = None
        """The log's length in frames when the reader last renewed for it: renewing again changes nothing."""

    def time_to_renew(self) -> bool:
        """True when the reader should renew its snapshot now: the log is over WAL_KEEP_BYTES, and a checkpoint
        just copied all of it into the database file (not renewed for it yet) or a writer is checkpointing it,
        likely waiting for this reader. A snapshot begun once the log is all copied reads the database file alone,
        so the log can be emptied."""
        if not self._usable or _log_bytes(self.path) <= store_connection.WAL_KEEP_BYTES:
            return False
        now = time.monotonic()
        if now - self._checked_at < CHECK_EVERY_S:
            return False
        self._checked_at = now
        try:
            if self._connection is None:
                self._connection = _open_existing(self.path)
            busy, log, copied = self._connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.Error:  # a file this user cannot write after all, or a damaged one: loading says what
            self._usable = False
            self.close()
            return False
        if busy:
            return True
        if log <= 0 or copied != log or log == self._renewed_for:
            return False
        self._renewed_for = log
        return True

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
