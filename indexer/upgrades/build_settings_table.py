"""Upgrade step 5 (migration 3, recorded as `build_settings`): the table of how the index reads its input
(indexer/tables/settings_table.py), so `add` and `sync` read new input the way the index was built. A store needs it
when it has not recorded migration 3; the table starts empty, which reads as an index of plain text or JSON
records read with the default fields (what every index built before it was)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchengine.indexer.tables.settings_table import create_table

if TYPE_CHECKING:
    import sqlite_utils


def build_settings(db: sqlite_utils.Database) -> None:
    """Create the build_settings table, empty."""
    create_table(db)
