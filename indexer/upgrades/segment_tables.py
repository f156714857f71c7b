"""Upgrade step 3, the store's part (migration 1, recorded as `segments`): the tables of format 2, `segments` (the
segment files the store names, with their sizes, checksums and id ranges) and `index_state` (commit number, last
update, library versions, next free id). A store needs it when it has not recorded migration 1: a format-1 index's,
whose first write also writes its vector files as segments (format_one.py, chain.upgrade_index)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchengine.indexer.tables.segment_table import create_tables

if TYPE_CHECKING:
    import sqlite_utils


def segments(db: sqlite_utils.Database) -> None:
    """Create the segments and index_state tables (indexer/tables/segment_table.py), empty: the conversion that
    runs this step names the segments it writes."""
    create_tables(db)
