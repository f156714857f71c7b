"""The build_settings table of the document store: how the index reads its input (the JSON fields that hold the
text, title and id; the folders read and the rules they were read with), as JSON by name, so `add` and `sync`
read new input the way the index was built. A store without the table (written before migration 3) reads as
holding none."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from searchengine.indexer.tables.store_table import StoreTable

if TYPE_CHECKING:
    import sqlite_utils

TABLE = "build_settings"


def create_table(db: sqlite_utils.Database) -> None:
    """The table (upgrade step 5, migration 3: indexer/upgrades/build_settings_table.py)."""
    db.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (key TEXT PRIMARY KEY, value TEXT NOT NULL)")


class SettingsTable(StoreTable):
    """Named JSON settings of one store, read and written through its connection (in the writer's transaction);
    `guard` turns SQLite errors into the store's one-line errors."""

    name = TABLE

    def get(self, key: str) -> Any:  # noqa: ANN401 (a JSON value)
        """The setting `key`, None where it was never set or cannot be read as JSON."""
        with self._guard():
            if TABLE not in self.db.table_names():
                return None
            row = self.db.execute(f"SELECT value FROM {TABLE} WHERE key = ?", [key]).fetchone()
        if row is None:
            return None
        try:
            return json.loads(row[0])
        except json.JSONDecodeError:
            return None

    def set(self, key: str, value: Any) -> None:  # noqa: ANN401 (a JSON value)
        """Record `value` (JSON-serialisable) as the setting `key`, replacing any earlier one."""
        with self._guard():
            self.db.execute(
                f"INSERT INTO {TABLE} (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [key, json.dumps(value, ensure_ascii=False, allow_nan=False)],
            )
