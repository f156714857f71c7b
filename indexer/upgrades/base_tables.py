"""Upgrade step 2: the tables every store has had since before the numbered migrations began (tombstones, passages,
and the keyword index), created where an older store lacks them. A store shows by its shape whether it needs them;
the keyword index only once the store has one row per document (step 1), as it indexes that shape."""

from __future__ import annotations

from typing import TYPE_CHECKING

from searchengine.indexer.tables.document_table import TABLE as DOCUMENTS
from searchengine.indexer.tables.document_table import create_documents_table
from searchengine.indexer.tables.keyword_table import TABLE as KEYWORD_TABLE
from searchengine.indexer.tables.keyword_table import enable_keyword_index
from searchengine.indexer.tables.passages import TABLE as PASSAGES
from searchengine.indexer.tables.passages import create_passages_table
from searchengine.indexer.tables.tombstone_table import TABLE as TOMBSTONES
from searchengine.indexer.tables.tombstone_table import create_tombstones_table

if TYPE_CHECKING:
    import sqlite_utils


def create_base_tables(db: sqlite_utils.Database) -> None:
    """The documents (with their keyword index), tombstones and passages tables, each where it is missing."""
    tables = set(db.table_names())  # listed once: creating the documents table makes neither of the others
    if DOCUMENTS not in tables:
        create_documents_table(db)
    if TOMBSTONES not in tables:
        create_tombstones_table(db)
    if PASSAGES not in tables:
        create_passages_table(db)


def create_keyword_index(db: sqlite_utils.Database) -> None:
    """The keyword index over the documents, where the store has none (a store in the current shape)."""
    if KEYWORD_TABLE not in db.table_names():
        enable_keyword_index(db)
