"""The store's SQLite connection: how it is opened (WAL for a writer, read-only or immutable for a reader), and
how its errors become one-line IndexerErrors that say whether the file is damaged, full, or not permitted."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from searchengine.indexer.errors import IndexerError, StorageFullError, StoragePermissionError

BUSY_TIMEOUT_MS = 10_000
"""How long a statement waits for another connection's lock (a writer's commit, a checkpoint) before failing."""

WAL_KEEP_BYTES = 8 * 1024 * 1024
"""How much of the write-ahead log file a writer keeps when SQLite starts the log again (its journal_size_limit);
indexer/tables/wal_upkeep.py says when that happens."""

WRITER_CACHE_KIB = 64 * 1024
"""The page cache of a writer's connection (SQLite's default is 2 MiB). An add inserts into the index of text hashes
at random places, so past a few hundred thousand documents nearly every row touched a page that had left the
cache: at 300,000 documents a 2 MiB cache read 25 KB and wrote 27 KB per document added, 64 MiB read 6.9 KB and wrote
20 KB (benchmarks/storage/store_scale.py, docs/benchmarks.md#the-store-at-10-million-rows). Readers keep
SQLite's default: a query reads a few pages per hit."""

SQLITE_LIMITS = ("too complex", "too large", "too many", "too big")
"""Words of SQLite's errors for a statement past its limits (a LIKE pattern too complex, an expression tree too
large, too many SQL variables, a string or blob too big): the request's fault, not a damaged store."""


def opens_immutable(path: Path) -> bool:
    """Whether a read-only connection to the store at `path` is opened immutable: where this user cannot write the
    directory and WAL's shared-memory file is missing, SQLite can read the file no other way. An immutable connection
    never sees another process's writes (the directory's owner may still write there): CommitProbe reopens it when
    the files change."""
    return not os.access(Path(path).parent, os.W_OK) and not Path(f"{path}-shm").exists()


def connect(path: Path, writable: bool) -> sqlite3.Connection:
    """A connection to the store at `path`. A writable one puts the file in WAL mode (kept in the file), so
    readers never wait for a write in progress. A read-only one is immutable where `opens_immutable` says so."""
    if writable:
        connection = sqlite3.connect(str(path))
        connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute(f"PRAGMA journal_size_limit = {WAL_KEEP_BYTES}")
        connection.execute(f"PRAGMA cache_size = -{WRITER_CACHE_KIB}")
        return connection
    uri = Path(path).resolve().as_uri()
    immutable = opens_immutable(path)
    wal = Path(f"{path}-wal")
    if immutable and wal.exists() and wal.stat().st_size > 0:
        raise IndexerError(
            f"the index's latest writes are in {wal}, which SQLite cannot read in a directory this user may not "
            "write without its -shm file: open the index once as a user who can write the directory (or copy it "
            "with its -shm file)"
        )
    connection = sqlite3.connect(f"{uri}?mode=ro{'&immutable=1' if immutable else ''}", uri=True)
    connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return connection


class StoreGuard:
    """`with guard():` around SQLite calls on the store at `path` turns their errors into one-line IndexerErrors;
    every table of the store is handed the same guard."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def corrupt(self, exc: Exception) -> IndexerError:
        """The one-line error for a failed SQLite call: a full disk or a permission problem is not corruption."""
        text = str(exc)
        if "disk is full" in text:
            return StorageFullError(
                f"no space left on device writing {self.path}: free some space and run the command again; the "
                "index is as it was before"
            )
        if "readonly" in text or "unable to open" in text:
            return StoragePermissionError(
                f"cannot open or write {self.path} ({text}): check the permissions of the file and its directory"
            )
        if any(limit in text for limit in SQLITE_LIMITS):
            return IndexerError(f"the request is more than SQLite evaluates at once ({text}); use simpler filters")
        return IndexerError(f"document store {self.path} is corrupt or unreadable ({exc}); rebuild the index")

    @contextmanager
    def __call__(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.ProgrammingError as exc:  # a misuse of the connection, not a damaged file
            if "thread" in str(exc):
                raise IndexerError(
                    f"document store {self.path} was opened in another thread, and its SQLite connection stays there; "
                    "open one SearchEngine per thread (they may share an Encoder)"
                ) from None
            if "closed" in str(exc):
                raise IndexerError(f"document store {self.path} is closed; open the index again") from None
            raise self.corrupt(exc) from None
        except sqlite3.DatabaseError as exc:
            raise self.corrupt(exc) from None


class ReadDatabase:
    """A read-only store's connection with the part of sqlite_utils.Database the tables read through (`execute`,
    `query`, `table_names`, `conn`), on the standard library alone: sqlite-utils imports pandas where it is
    installed, a third of a cold query's start, and a reader needs none of its writing helpers."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, parameters: Sequence[Any] | dict[str, Any] | None = None) -> sqlite3.Cursor:
        """Run one statement, as sqlite_utils.Database.execute does."""
        return self.conn.execute(sql) if parameters is None else self.conn.execute(sql, parameters)

    def query(self, sql: str, parameters: Sequence[Any] | dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        """The rows of a SELECT as dictionaries by column name."""
        cursor = self.execute(sql, parameters)
        names = [column[0] for column in cursor.description]
        return (dict(zip(names, row)) for row in cursor)

    def table_names(self) -> list[str]:
        """The names of the store's tables."""
        return [row[0] for row in self.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()]

    def atomic(self) -> AbstractContextManager[ReadDatabase]:
        """A reader writes nothing: a write's transaction is refused as SQLite refuses a write on a read-only
        connection (the store's guard makes it one IndexerError)."""
        raise sqlite3.OperationalError("attempt to write a readonly database")
