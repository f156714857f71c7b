"""The document store's schema: the base tables, then numbered changes applied in order, each once (as simonw/llm's
embeddings_migrations.py does): a store records which it has had in `schema_migrations`.

The base tables (documents with their keyword index, tombstones, passages) predate the numbered list, so stores
of every age may lack some of them: each is created where it is missing, every time a store is opened for writing
(`create_base_tables`, and the keyword index in `migrate`, which an older store gains only once `upgrade` gave
its documents the current shape). Every later change is one function here, appended, never edited."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from searchengine.indexer.counters import create_counters
from searchengine.indexer.document_table import TABLE as DOCUMENTS
from searchengine.indexer.document_table import create_documents_table
from searchengine.indexer.keyword_table import TABLE as KEYWORD_TABLE
from searchengine.indexer.keyword_table import enable_keyword_index
from searchengine.indexer.passages import create_passages_table
from searchengine.indexer.segment_table import create_tables
from searchengine.indexer.settings_table import create_table as create_settings
from searchengine.indexer.tombstone_table import create_tombstones_table

if TYPE_CHECKING:
    import sqlite_utils

TABLE = "schema_migrations"


def create_base_tables(db: sqlite_utils.Database) -> None:
    """The documents (with their keyword index), tombstones and passages tables, each where it is missing."""
    tables = set(db.table_names())
    if DOCUMENTS not in tables:
        create_documents_table(db)
    create_tombstones_table(db)
    create_passages_table(db)


def _segments(db: sqlite_utils.Database) -> None:
    """1: vector segments named by the store, and the commit state (format 2)."""
    create_tables(db)


def _counters(db: sqlite_utils.Database) -> None:
    """2: document and passage counts kept by triggers (indexer/counters.py), read in one row, not a scan."""
    create_counters(db)


def _build_settings(db: sqlite_utils.Database) -> None:
    """3: how the index reads its input (indexer/settings_table.py), so `add` and `sync` read it the same way."""
    create_settings(db)


MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [_segments, _counters, _build_settings]
"""In order: migration n is MIGRATIONS[n - 1]."""


def applied(db: sqlite_utils.Database) -> int:
    """How many migrations the store has had."""
    if TABLE not in db.table_names():
        return 0
    return int(db.execute(f"SELECT coalesce(max(number), 0) FROM {TABLE}").fetchone()[0])


def migrate(db: sqlite_utils.Database) -> int:
    """Give a store in the current shape the keyword index where it has none, then apply the migrations it has
    not had, in one transaction; returns how many were applied."""
    if KEYWORD_TABLE not in db.table_names():
        enable_keyword_index(db)
    done = applied(db)
    if done >= len(MIGRATIONS):
        return 0
    with db.atomic():
        db.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (number INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        for number, migration in enumerate(MIGRATIONS[done:], start=done + 1):
            migration(db)
            db.execute(f"INSERT INTO {TABLE} (number, name) VALUES (?, ?)", [number, migration.__name__.strip("_")])
    return len(MIGRATIONS) - done
