"""Upgrade step 4 (migration 2, recorded as `counters`): document and passage counts kept by triggers
(indexer/tables/counters.py), so a count reads one row, not a scan of the table. A store needs it when it has not
recorded migration 2 (every store written before 2026-11-25's counters); the counts start from the rows it holds."""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchengine.indexer.tables.counters import create_counters

if TYPE_CHECKING:
    import sqlite_utils


def counters(db: sqlite_utils.Database) -> None:
    """Create the counters table, filled from count(*) of the documents and passages the store holds, and the
    triggers that keep it in step from now on."""
    create_counters(db)
