"""Upgrade step 7 (migration 5, recorded as `segment_originals`): the table naming the original vectors' file of each
segment whose codes are approximate (indexer/vectors/originals.py), with its size and checksum. A store needs it
when it has not recorded migration 5; it starts empty, as no segment written before it kept originals."""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchengine.indexer.tables.segment_table import create_originals_table

if TYPE_CHECKING:
    import sqlite_utils


def segment_originals(db: sqlite_utils.Database) -> None:
    """Create the segment_originals table, empty."""
    create_originals_table(db)
