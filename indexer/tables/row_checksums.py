"""The row_checksums table: a checksum of every document row (its id, external id, text, origin, metadata and text
hash), written in the transaction that writes the row. SQLite's own checks see the pages and indexes of the file,
not what a row holds, so a letter changed inside a stored text passes them; `verify` compares each row with its
checksum (indexer/commit/row_check.py). A trigger drops a row's checksum with the row."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from searchengine.indexer.tables.sql_chunks import in_chunks

if TYPE_CHECKING:
    import sqlite_utils

TABLE = "row_checksums"
DOCUMENTS = "documents"
COLUMNS = "id, external_id, text, source, line, metadata, hash"
"""What a checksum covers, in this order: every column of a document row."""
DIGEST_BYTES = 16


def create_row_checksums(db: sqlite_utils.Database) -> None:
    """The table, and the trigger that removes a row's checksum when the row is deleted."""
    db.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (id INTEGER PRIMARY KEY, checksum BLOB NOT NULL)")
    db.execute(
        f"CREATE TRIGGER IF NOT EXISTS {TABLE}_delete AFTER DELETE ON {DOCUMENTS} "
        f"BEGIN DELETE FROM {TABLE} WHERE id = old.id; END"
    )


def has_row_checksums(db: sqlite_utils.Database) -> bool:
    """Whether the store keeps row checksums (an index written before migration 4 has none until its next write)."""
    return TABLE in db.table_names()


def row_checksum(row: Sequence[object]) -> bytes:
    """The checksum of one row's columns (COLUMNS, as SQLite gives them back: ints, texts, None), over their
    Python repr, which tells every value apart (a text "1" from the number 1, None from "None")."""
    encoded = repr(tuple(row)).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(encoded, digest_size=DIGEST_BYTES).digest()


def record_row_checksums(db: sqlite_utils.Database, ids: Sequence[int]) -> None:
    """Write the checksums of rows `ids` as they are stored now, inside the caller's transaction (read back from
    SQLite, so a value its column changed on the way in is summed as it will be read)."""
    rows = in_chunks(db, f"SELECT {COLUMNS} FROM {DOCUMENTS} WHERE id IN", sorted({int(i) for i in ids}))
    db.conn.executemany(
        f"INSERT OR REPLACE INTO {TABLE} (id, checksum) VALUES (?, ?)", ((row[0], row_checksum(row)) for row in rows)
    )


def record_missing_row_checksums(db: sqlite_utils.Database, batch: int = 10_000) -> int:
    """Write the checksum of every row that has none (a store from before migration 4); returns how many. One pass
    in id order (each batch starts after the last one's ids, so no batch rescans the rows summed before it)."""
    written, after = 0, None
    while ids := [
        row[0]
        for row in db.execute(
            f"SELECT d.id FROM {DOCUMENTS} AS d LEFT JOIN {TABLE} AS c ON c.id = d.id "
            "WHERE c.id IS NULL AND (? IS NULL OR d.id > ?) ORDER BY d.id LIMIT ?",
            [after, after, batch],
        ).fetchall()
    ]:
        record_row_checksums(db, ids)
        written += len(ids)
        after = ids[-1]
    return written


def rows_with_checksums(db: sqlite_utils.Database) -> Iterator[tuple[tuple, bytes | None]]:
    """Every document row (COLUMNS) with the checksum kept for it (None where it has none), in id order."""
    cursor = db.execute(
        f"SELECT {', '.join('d.' + column for column in COLUMNS.split(', '))}, c.checksum FROM {DOCUMENTS} AS d "
        f"LEFT JOIN {TABLE} AS c ON c.id = d.id ORDER BY d.id"
    )
    for row in cursor:
        yield row[:-1], row[-1]


def orphan_checksums(db: sqlite_utils.Database) -> int:
    """Checksums kept for rows the documents table does not hold."""
    return int(db.execute(f"SELECT count(*) FROM {TABLE} WHERE id NOT IN (SELECT id FROM {DOCUMENTS})").fetchone()[0])
