"""The tombstones table of the document store: vector ids of deleted documents whose vectors are still inside some
segment. Searches leave them out; a merge that drops their vectors forgets them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from searchengine.indexer.tables.sql_chunks import in_chunks
from searchengine.indexer.tables.store_table import StoreTable

if TYPE_CHECKING:
    import sqlite_utils

TABLE = "tombstones"


def create_tombstones_table(db: sqlite_utils.Database) -> None:
    """The table, where it is missing (a base table: upgrade step 2, indexer/upgrades/base_tables.py)."""
    if TABLE not in db.table_names():
        db[TABLE].create({"id": int}, pk="id")


class TombstoneTable(StoreTable):
    """Tombstoned vector ids of one store."""

    name = TABLE

    def add(self, ids: Sequence[int]) -> None:
        """Tombstone the vectors `ids` (an id tombstoned already stays one)."""
        with self._guard(), self.db.atomic():
            self.db[TABLE].insert_all(({"id": int(i)} for i in ids), ignore=True)

    def ids(self) -> np.ndarray:
        """Ids deleted from the store whose vectors are still in the vector index, in order."""
        with self._guard():
            if not self.exists():
                return np.zeros(0, dtype=np.int64)
            rows = self.db.execute(f"SELECT id FROM {TABLE} ORDER BY id").fetchall()
        return np.array([row[0] for row in rows], dtype=np.int64)

    def largest_id(self) -> int:
        """The largest tombstoned id, -1 when there is none."""
        return int(self.db.execute(f"SELECT coalesce(max(id), -1) FROM {TABLE}").fetchone()[0])

    def clear(self, ids: Sequence[int] | None = None) -> None:
        """Forget the tombstones of `ids` (their vectors are gone: a merge dropped them), or all of them."""
        with self._guard(), self.db.atomic():
            if ids is None:
                self.db.execute(f"DELETE FROM {TABLE}")
            else:
                in_chunks(self.db, f"DELETE FROM {TABLE} WHERE id IN", [int(i) for i in ids])
