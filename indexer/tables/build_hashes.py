"""The text hashes of a build, while it fills a new store. The documents table's index of text hashes takes each
new row at a random place, so every row added dirtied its own page of it: past a million rows that was about
17 KB written per row of the 24 KB an add wrote, and the insert rate fell with every row
(docs/benchmarks.md#the-store-at-10-million-rows). A build fills a new store that no one reads before its
commit, so it drops that index while it fills the store and makes it again, sorted in one pass, in the commit that
names the store, the same index a store filled row by row has.

Meanwhile the build's repeats are found in a temporary table of the connection (never in the file): an 8-byte key
of each row's hash with the row's id, kept in memory up to TEMP_CACHE_KIB (about 30 bytes a row, estimated from its
layout, not measured) and spilled to an unsynced temporary file past that. A key only points at rows; their full hashes are compared, so two texts whose
hashes share the key are never taken for one."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from searchengine.indexer.tables.sql_chunks import in_chunks

if TYPE_CHECKING:
    import sqlite_utils

TEMP_TABLE = "build_hashes"
TEMP_CACHE_KIB = 256 * 1024
"""The page cache of the connection's temporary tables during a build: the keys of about 8 million rows (estimated)."""


def hash_key(digest: str) -> int:
    """An 8-byte signed integer from the first 16 hex digits of a text's hash (SQLite's INTEGER holds it)."""
    return int.from_bytes(bytes.fromhex(digest[:16]), "big", signed=True)


def start(db: sqlite_utils.Database, documents: str, hash_index: str) -> None:
    """Drop the index `hash_index` of the table `documents`, and keep the hashes in a temporary table instead until
    `finish`: those of the rows stored already (one read of the table, nothing for a new store) and of each row
    `record`ed."""
    db.execute(f"PRAGMA temp.cache_size = -{TEMP_CACHE_KIB}")
    db.execute(f"DROP INDEX IF EXISTS {hash_index}")
    db.execute(
        f"CREATE TEMP TABLE IF NOT EXISTS {TEMP_TABLE} (key INTEGER NOT NULL, id INTEGER NOT NULL, "
        "PRIMARY KEY (key, id)) WITHOUT ROWID"
    )
    record(db, db.conn.execute(f"SELECT id, hash FROM {documents}"))


def record(db: sqlite_utils.Database, rows: Iterable[tuple[int, str]]) -> None:
    """Keep the hashes of new rows, (id, hash) each."""
    db.conn.executemany(
        f"INSERT INTO temp.{TEMP_TABLE} (key, id) VALUES (?, ?)", ((hash_key(digest), i) for i, digest in rows)
    )


def known(db: sqlite_utils.Database, documents: str, hashes: Sequence[str]) -> set[str]:
    """Which of `hashes` some row of `documents` stored in this build has (rows deleted since are no longer
    found: the key leads to the row, which must still be there with the same full hash)."""
    wanted = set(hashes)
    keys = sorted({hash_key(digest) for digest in wanted})
    sql = f"SELECT d.hash FROM temp.{TEMP_TABLE} AS b JOIN {documents} AS d ON d.id = b.id WHERE b.key IN"
    return {row[0] for row in in_chunks(db, sql, keys)} & wanted


def finish(db: sqlite_utils.Database) -> None:
    """Forget the build's hashes (the caller makes the index again, in its transaction)."""
    db.execute(f"DROP TABLE IF EXISTS temp.{TEMP_TABLE}")
