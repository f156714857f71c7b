"""Whether a writer has committed since a reader loaded the index, learned without moving the reader's snapshot.

A reader serves every search from one read transaction of the store (DocumentStore.read_snapshot) and the segments
of that commit. To learn whether a writer committed since, it must not end that transaction: if loading the new
state then failed, the store would answer from the new commit while the segments and tombstones held are the old
one's (a keyword search finding documents whose vectors are not loaded, a hybrid search failing on them). So the
newest commit number is read on a connection of its own, one small read outside any transaction.

Where that connection is immutable (a reader who may not write the index's directory, with WAL's shared-memory
file missing: store_connection.opens_immutable), SQLite never looks at the file again, so the store's files are
compared by their stat at each look, and the connection is opened again when they changed.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from searchengine.indexer.errors import IndexerError
from searchengine.indexer.tables.segment_table import STATE_TABLE
from searchengine.indexer.tables.store_connection import connect, opens_immutable

FileStamp = tuple[tuple[int, int, int] | None, ...]
"""Inode, size and modification time (ns) of the store, its -wal and its -shm file, None for one missing."""


class CommitProbe:
    """The newest commit number of the store at `path`; its connection is opened on first use, in the thread that
    uses it (as every SQLite connection here stays in its thread)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._connection: sqlite3.Connection | None = None
        self._opened_on: FileStamp | None = None
        """The files' stamp when an immutable connection was opened (None: the connection is not immutable)."""

    def newest(self) -> int | None:
        """The number of the latest commit; None where it cannot be read (the caller then reloads, and loading
        says what is wrong)."""
        try:
            if self._opened_on is not None and self._opened_on != self._files():
                self.close()  # an immutable connection would go on reading what the file held when it was opened
            if self._connection is None:
                self._opened_on = self._files() if opens_immutable(self.path) else None
                self._connection = connect(self.path, writable=False)
            row = self._connection.execute(f"SELECT value FROM {STATE_TABLE} WHERE key = 'commit'").fetchone()
        except (sqlite3.Error, IndexerError):
            return None
        if row is None:
            return 0  # as SegmentTable.commit_number counts a store no write has stamped yet
        return int(row[0]) if str(row[0]).isdigit() else None

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        self._opened_on = None

    def _files(self) -> FileStamp:
        """The FileStamp of the store's files now."""
        stamps = []
        for name in (str(self.path), f"{self.path}-wal", f"{self.path}-shm"):
            try:
                stat = os.stat(name)
                stamps.append((stat.st_ino, stat.st_size, stat.st_mtime_ns))
            except OSError:
                stamps.append(None)
        return tuple(stamps)
