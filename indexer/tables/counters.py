"""Counts the store keeps as it changes: documents, passages beyond each document's first, and distinct texts
(migration 7). Triggers keep them
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


DISTINCT_TEXTS = "distinct_texts"
"""The counter of distinct texts (text hashes) among the documents: `info`'s repeats are the documents less it."""
_DISTINCT_TRIGGERS = {
    "insert": "AFTER INSERT ON documents WHEN NOT EXISTS "
    "(SELECT 1 FROM documents WHERE hash = NEW.hash AND id != NEW.id) "
    f"BEGIN UPDATE {TABLE} SET value = value + 1 WHERE name = '{DISTINCT_TEXTS}'; END",
    "delete": "AFTER DELETE ON documents WHEN NOT EXISTS (SELECT 1 FROM documents WHERE hash = OLD.hash) "
    f"BEGIN UPDATE {TABLE} SET value = value - 1 WHERE name = '{DISTINCT_TEXTS}'; END",
    "update": "AFTER UPDATE OF hash ON documents WHEN OLD.hash IS NOT NEW.hash "
    f"BEGIN UPDATE {TABLE} SET value = value "
    "+ NOT EXISTS (SELECT 1 FROM documents WHERE hash = NEW.hash AND id != NEW.id) "
    f"- NOT EXISTS (SELECT 1 FROM documents WHERE hash = OLD.hash) WHERE name = '{DISTINCT_TEXTS}'; END",
}
"""Each finds, through the index of text hashes, whether the row changed was or is its text's only one."""
KEPT = (*COUNTED, DISTINCT_TEXTS)
"""Every counter a store may keep: what `verify` checks."""


def count_distinct_texts(db: sqlite_utils.Database) -> None:
    """The distinct-texts counter, set from the documents as they are (one read of the hash index), and the
    triggers that keep it in step."""
    db.execute(
        f"INSERT OR REPLACE INTO {TABLE} (name, value) VALUES (?, (SELECT count(DISTINCT hash) FROM documents))",
        [DISTINCT_TEXTS],
    )
    for event, body in _DISTINCT_TRIGGERS.items():
        db.execute(f"CREATE TRIGGER IF NOT EXISTS {TABLE}_{DISTINCT_TEXTS}_{event} {body}")


def pause_distinct_texts(db: sqlite_utils.Database) -> bool:
    """Drop the distinct-texts triggers while a build fills the store without its hash index (through which each
    would read every row); returns whether the store keeps that counter, for `count_distinct_texts` at the end."""
    if read_counter(db, DISTINCT_TEXTS) is None:
        return False
    for event in _DISTINCT_TRIGGERS:
        db.execute(f"DROP TRIGGER IF EXISTS {TABLE}_{DISTINCT_TEXTS}_{event}")
    return True


def read_counter(db: sqlite_utils.Database, name: str) -> int | None:
    """The count `name` keeps, or None in a store that has no counters (written before them, read-only)."""
    if TABLE not in db.table_names():
        return None
    row = db.execute(f"SELECT value FROM {TABLE} WHERE name = ?", [name]).fetchone()
    return None if row is None else int(row[0])


def counted(db: sqlite_utils.Database, name: str) -> int:
    """What count(*) says the counter `name` should hold: for `verify`."""
    if name == DISTINCT_TEXTS:
        return int(db.execute("SELECT count(DISTINCT hash) FROM documents").fetchone()[0])
    table, condition = COUNTED[name]
    return int(db.execute(f"SELECT count(*) FROM {table} AS NEW WHERE {condition}").fetchone()[0])
