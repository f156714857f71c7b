"""Upgrade step 6 (migration 4, recorded as `row_checksums`): a checksum of every document row
(indexer/tables/row_checksums.py), so `verify` sees a letter changed inside a stored text, which SQLite's own page
checks do not. A store needs it when it has not recorded migration 4; until then `verify` says "no row checksums
yet"."""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchengine.indexer.tables.row_checksums import create_row_checksums, record_missing_row_checksums

if TYPE_CHECKING:
    import sqlite_utils


def row_checksums(db: sqlite_utils.Database) -> None:
    """Create the row_checksums table and sum the rows already stored, once (a full read of the documents)."""
    create_row_checksums(db)
    record_missing_row_checksums(db)
