"""Counts the store keeps as it changes: documents, and passages beyond each document's first. Triggers keep them
in step with every insert and delete, inside the same transaction, so reading a count costs one row, where
SQLite's count(*) reads the whole table, a cost that grows with the index. `verify` checks them against
count(*)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils


TABLE = "counters"
COUNTED = {
    "documents": ("documents", "1"),
    "passages": ("passages", "NEW.id != NEW.document"),
}
"""Counter name -> (table, which inserted row counts; OLD for deleted rows)."""


def create_counters(db: sqlite_utils.Database) -> None:
    """The counters table, filled from the tables as they are, and the triggers that keep it in step."""
    db.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (name TEXT PRIMARY KEY, value INTEGER NOT NULL)")
    for name, (table, condition) in COUNTED.items():
        db.execute(
            f"INSERT OR REPLACE INTO {TABLE} (name, value) VALUES (?, (SELECT count(*) FROM {table} AS NEW "
            f"WHERE {condition}))",
            [name],
        )
        for event, row, step in (("INSERT", "NEW", "+ 1"), ("DELETE", "OLD", "- 1")):
            when = condition.replace("NEW.", f"{row}.")
            db.execute(
                f"CREATE TRIGGER IF NOT EXISTS {TABLE}_{name}_{event.lower()} AFTER {event} ON {table} "
                f"WHEN {when} BEGIN UPDATE {TABLE} SET value = value {step} WHERE name = '{name}'; END"
            )


def read_counter(db: sqlite_utils.Database, name: str) -> int | None:
    """The count `name` keeps, or None in a store that has no counters (written before them, read-only)."""
    if TABLE not in db.table_names():
        return None
    row = db.execute(f"SELECT value FROM {TABLE} WHERE name = ?", [name]).fetchone()
    return None if row is None else int(row[0])


def counted(db: sqlite_utils.Database, name: str) -> int:
    """What count(*) says the counter `name` should hold: for `verify`."""
    table, condition = COUNTED[name]
    return int(db.execute(f"SELECT count(*) FROM {table} AS NEW WHERE {condition}").fetchone()[0])
