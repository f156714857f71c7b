"""Upgrade step 9 (migration 7, recorded as `distinct_texts`): the number of distinct texts, kept by triggers
(indexer/tables/counters.py), so `info`'s repeats read one row instead of the whole index of text hashes. A store
needs it when it has not recorded migration 7; the rows already stored are counted here, once."""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchengine.indexer.tables.counters import count_distinct_texts

if TYPE_CHECKING:
    import sqlite_utils


def distinct_texts(db: sqlite_utils.Database) -> None:
    """Create the distinct-texts counter and its triggers, counting the stored texts once."""
    count_distinct_texts(db)
