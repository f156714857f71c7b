"""The passages table of the document store: which vectors belong to a document split into passages.

A document that fits the model has one vector, whose id is the document's id, and no rows here. A document split
into passages has one row per passage: the passage's vector id, the document, and the characters [start, end) of
the document's text it covers. Its first passage's vector id is the document's own id, the others come from the
store's id sequence, which is never reused (DocumentStore counts the ids here when it picks the next one). Stores
written before passages existed have no such table and read as holding none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from searchengine.indexer.tables.counters import read_counter
from searchengine.indexer.tables.sql_chunks import in_chunks
from searchengine.indexer.tables.store_table import StoreTable

if TYPE_CHECKING:
    import sqlite_utils

TABLE = "passages"


def create_passages_table(db: sqlite_utils.Database) -> None:
    """The table, where it is missing (a base table: upgrade step 2, indexer/upgrades/base_tables.py)."""
    if TABLE not in db.table_names():
        db[TABLE].create({"id": int, "document": int, "start": int, "end": int}, pk="id")
        db[TABLE].create_index(["document"], index_name=f"{TABLE}_document")


class PassageTable(StoreTable):
    """Passage rows of one store."""

    name = TABLE

    def any(self) -> bool:
        """True when some document is split into passages."""
        with self._guard():
            return self.exists() and self.db.execute(f"SELECT EXISTS (SELECT 1 FROM {TABLE})").fetchone()[0] == 1

    def largest_id(self) -> int:
        """The largest passage vector id, -1 when there is none."""
        if not self.exists():
            return -1
        return int(self.db.execute(f"SELECT coalesce(max(id), -1) FROM {TABLE}").fetchone()[0])

    def extra_count(self) -> int:
        """Vectors beyond one per document: passages other than the first of their document."""
        with self._guard():
            if not self.exists():
                return 0
            kept = read_counter(self.db, "passages")
            if kept is not None:
                return kept
            return int(self.db.execute(f"SELECT count(*) FROM {TABLE} WHERE id != document").fetchone()[0])

    def extra_ids(self) -> np.ndarray:
        """Vector ids of every passage but the first of its document (the first's id is the document's own)."""
        with self._guard():
            if not self.exists():
                return np.zeros(0, dtype=np.int64)
            rows = self.db.execute(f"SELECT id FROM {TABLE} WHERE id != document ORDER BY id").fetchall()
        return np.array([row[0] for row in rows], dtype=np.int64)

    def insert(self, rows: Sequence[tuple[int, int, int, int]]) -> None:
        """Store (vector id, document id, start, end) rows, inside the caller's transaction."""
        self.db.conn.executemany(f"INSERT INTO {TABLE} (id, document, start, end) VALUES (?, ?, ?, ?)", rows)

    def of_vectors(self, vector_ids: Sequence[int]) -> dict[int, tuple[int, int, int]]:
        """Vector id -> (document id, start, end) for the ids that are passages; other ids are documents' own
        single vectors and are left out."""
        with self._guard():
            if not self.exists():
                return {}
            sql = f"SELECT id, document, start, end FROM {TABLE} WHERE id IN"
            return {row[0]: (row[1], row[2], row[3]) for row in in_chunks(self.db, sql, _ids(vector_ids))}

    def extra_ids_of(self, documents: Sequence[int]) -> list[int]:
        """Vector ids of the passages of `documents` other than each one's first (whose id is the document's)."""
        if not self.exists():
            return []
        sql = f"SELECT id FROM {TABLE} WHERE id != document AND document IN"
        return [row[0] for row in in_chunks(self.db, sql, _ids(documents))]

    def delete_documents(self, documents: Sequence[int]) -> list[int]:
        """Remove the passages of `documents`, inside the caller's transaction; returns the vector ids that were
        theirs beyond the documents' own ids (so the caller drops those vectors too)."""
        extra = self.extra_ids_of(documents)
        if self.exists():
            in_chunks(self.db, f"DELETE FROM {TABLE} WHERE document IN", _ids(documents))
        return extra


def _ids(values: Sequence[int]) -> list[int]:
    return sorted({int(value) for value in values})
