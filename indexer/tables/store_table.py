"""What every table of the document store shares: the store's connection, and the guard that turns SQLite errors
into the store's one-line errors (indexer/tables/store_connection.py)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    import sqlite_utils



class StoreTable:
    """One table of the store (`name`), read and written through the store's connection, inside whatever
    transaction the store has open."""

    name: ClassVar[str]

    def __init__(self, db: sqlite_utils.Database, guard: Callable[[], AbstractContextManager[None]]) -> None:
        self.db = db
        self._guard = guard

    def exists(self) -> bool:
        """Whether the store has the table (stores written before it have not)."""
        with self._guard():
            return self.name in self.db.table_names()
