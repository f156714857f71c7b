"""Whether a writer has committed since a reader loaded the index, learned without moving the reader's snapshot.

A reader serves every search from one read transaction of the store (DocumentStore.read_snapshot) and the segments
of that commit. To learn whether a writer committed since, it must not end that transaction: if loading the new
state then failed, the store would answer from the new commit while the segments and tombstones held are the old
one's (a keyword search finding documents whose vectors are not loaded, a hybrid search failing on them). So the
newest commit number is read on a connection of its own, one small read outside any transaction.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from searchengine.indexer.errors import IndexerError
from searchengine.indexer.segment_table import STATE_TABLE
from searchengine.indexer.store_connection import connect


class CommitProbe:
    """The newest commit number of the store at `path`; its connection is opened on first use, in the thread that
    uses it (as every SQLite connection here stays in its thread)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._connection: sqlite3.Connection | None = None

    def newest(self) -> int | None:
        """The number of the latest commit; None where it cannot be read (the caller then reloads, and loading
        says what is wrong)."""
        try:
            if self._connection is None:
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
