"""The chain's steps that a store takes when it is opened (indexer/upgrades/chain.py lists them all): read an older
store through a view, and, opened for writing, apply steps 2 to 9 where it lacks them. Called by the store itself
(indexer/tables/store.py), so this module imports no index directory, rewrite or vector code: step 1 and a format-1
index's whole conversion need those, and stay in chain.py."""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchengine.indexer.upgrades.base_tables import create_base_tables, create_keyword_index
from searchengine.indexer.upgrades.legacy_store import is_legacy, open_legacy_view
from searchengine.indexer.upgrades.migrations import migrate

if TYPE_CHECKING:
    import sqlite_utils


def open_store(db: sqlite_utils.Database, writable: bool) -> bool:
    """Make an opened store readable in the current shape, and, opened for writing, apply the steps 2 to 9 it
    lacks (step 1 needs the vectors: `upgrade_index`). Returns whether the store still waits for step 1 (read
    through a view until then)."""
    if writable:
        create_base_tables(db)
    if is_legacy(db):
        open_legacy_view(db)
        return True
    if writable:
        upgrade_schema(db)
    return False


def upgrade_schema(db: sqlite_utils.Database) -> None:
    """Steps 2 to 9 on a store with one row per document: the keyword index where missing, then the numbered
    migrations it has not had."""
    create_keyword_index(db)
    migrate(db)
