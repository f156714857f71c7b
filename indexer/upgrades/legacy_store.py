"""Stores written before one-row-per-document (a unique `hash`, a `count` of repeats, an `external_ids` table):
read through a temporary view that gives them the current shape, and rewritten into it by `upgrade`, which every
write path runs inside its rewrite (searchengine.indexer.commit.rewrite)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from searchengine.indexer.tables.document_table import TABLE, create_documents_table

if TYPE_CHECKING:
    import sqlite_utils

EXTERNAL_IDS_TABLE = "external_ids"
"""Older stores only: user-given ids -> the (shared) row holding that document's text."""
_VIEW = (
    "CREATE TEMP VIEW {TABLE} AS SELECT d.id AS id, d.text AS text, d.source AS source, d.line AS line, "
    "d.metadata AS metadata, d.hash AS hash, {external_id} AS external_id FROM main.{TABLE} AS d"
)
"""An older store as the current shape, for reading: each row one document, with its first external id."""
_EXTERNAL_ID = f"(SELECT min(e.external_id) FROM main.{EXTERNAL_IDS_TABLE} AS e WHERE e.id = d.id)"


def is_legacy(db: sqlite_utils.Database) -> bool:
    """Whether the store is in the shape older versions wrote (its documents counted repeats)."""
    return "count" in {row[1] for row in db.execute(f"PRAGMA table_info({TABLE})").fetchall()}


def open_legacy_view(db: sqlite_utils.Database) -> None:
    """Read an older store as the current shape, through a temporary view over it (this connection only)."""
    external_id = _EXTERNAL_ID if EXTERNAL_IDS_TABLE in db.table_names() else "NULL"
    db.execute(_VIEW.format(external_id=external_id, TABLE=TABLE))


def upgrade(db: sqlite_utils.Database, next_id_after: Callable[[str], int]) -> list[tuple[int, int]]:
    """Rewrite an older store (one row per distinct text) into one row per document, in the caller's transaction.

    Each old row keeps its id and its first external id. Every further occurrence it counted becomes a
    document of its own with a new id (`next_id_after(table)` for the old table, then on; its other external
    ids in turn; origin and metadata those of the first occurrence, the only ones older versions kept; line
    unknown). Returns (new id, id whose vector it shares) for those, so the caller adds their vectors."""
    db.execute(f"DROP VIEW temp.{TABLE}")
    old = f"{TABLE}_before_upgrade"
    db.execute(f"ALTER TABLE main.{TABLE} RENAME TO {old}")
    create_documents_table(db, TABLE)
    external: dict[int, list[str]] = {}
    if EXTERNAL_IDS_TABLE in db.table_names():
        for external_id, row_id in db.execute(f"SELECT external_id, id FROM {EXTERNAL_IDS_TABLE} ORDER BY external_id"):
            external.setdefault(row_id, []).append(external_id)
    next_id = next_id_after(old)
    copies: list[tuple[int, int]] = []
    rows = db.execute(f"SELECT id, text, source, line, metadata, hash, count FROM {old} ORDER BY id")
    for row_id, text, source, line, metadata, digest, count in rows.fetchall():
        names = external.get(row_id, [])
        occurrences = max(int(count or 1), len(names), 1)
        for occurrence in range(occurrences):
            new_id = row_id if occurrence == 0 else next_id + len(copies)
            db.execute(
                f"INSERT INTO {TABLE} (id, external_id, text, source, line, metadata, hash) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    new_id,
                    names[occurrence] if occurrence < len(names) else None,
                    text,
                    source,
                    line if occurrence == 0 else None,
                    metadata,
                    digest,
                ),
            )
            if occurrence:
                copies.append((new_id, row_id))
    db.execute(f"DROP TABLE {old}")
    db.execute(f"DROP TABLE IF EXISTS {EXTERNAL_IDS_TABLE}")
    return copies
