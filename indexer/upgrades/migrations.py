"""Upgrade steps 3 and on that change the store's schema: numbered changes applied in order, each once (as simonw/llm's
embeddings_migrations.py does); a store records which it has had in `schema_migrations`, under the numbers they
were first given there (step n is recorded as n - 2: steps 1 and 2 predate the record, indexer/upgrades/chain.py).
Every change is one function here, appended, never edited."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from searchengine.indexer.tables.counters import count_distinct_texts, create_counters
from searchengine.indexer.tables.row_checksums import create_row_checksums, record_missing_row_checksums
from searchengine.indexer.tables.segment_table import create_originals_table, create_tables, create_template_table
from searchengine.indexer.tables.settings_table import create_table as create_settings

if TYPE_CHECKING:
    import sqlite_utils

TABLE = "schema_migrations"


def _segments(db: sqlite_utils.Database) -> None:
    """1 (step 3): vector segments named by the store, and the commit state (format 2)."""
    create_tables(db)


def _counters(db: sqlite_utils.Database) -> None:
    """2 (step 4): document and passage counts kept by triggers (indexer/tables/counters.py), read in one row, not
    a scan."""
    create_counters(db)


def _build_settings(db: sqlite_utils.Database) -> None:
    """3 (step 5): how the index reads its input (indexer/tables/settings_table.py), so `add` and `sync` read it
    the same way."""
    create_settings(db)


def _row_checksums(db: sqlite_utils.Database) -> None:
    """4 (step 6): a checksum of every document row (indexer/tables/row_checksums.py), so `verify` sees a letter
    changed inside a stored text; the rows already stored are summed here, once (a full read of the table)."""
    create_row_checksums(db)
    record_missing_row_checksums(db)


def _segment_originals(db: sqlite_utils.Database) -> None:
    """5 (step 7): the original vectors' file of each segment whose codes are approximate
    (indexer/vectors/originals.py), named with its size and checksum."""
    create_originals_table(db)


def _vector_template(db: sqlite_utils.Database) -> None:
    """6 (step 8): the trained template of an index of a trained type (indexer/vectors/template.py), named with its
    size and checksum; an index built before has none until a merge trains one or `compact --retrain`."""
    create_template_table(db)


def _distinct_texts(db: sqlite_utils.Database) -> None:
    """7 (step 9): the number of distinct texts kept by triggers (indexer/tables/counters.py), so `info`'s repeats
    read one row instead of the whole index of text hashes; the rows already stored are counted here, once."""
    count_distinct_texts(db)


MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [
    _segments,
    _counters,
    _build_settings,
    _row_checksums,
    _segment_originals,
    _vector_template,
    _distinct_texts,
]
"""In order: migration n is MIGRATIONS[n - 1]."""


def applied(db: sqlite_utils.Database) -> int:
    """How many migrations the store has had."""
    if TABLE not in db.table_names():
        return 0
    return int(db.execute(f"SELECT coalesce(max(number), 0) FROM {TABLE}").fetchone()[0])


def migrate(db: sqlite_utils.Database) -> int:
    """Apply the migrations the store has not had, in one transaction; returns how many were applied."""
    done = applied(db)
    if done >= len(MIGRATIONS):
        return 0
    with db.atomic():
        db.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (number INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        for number, migration in enumerate(MIGRATIONS[done:], start=done + 1):
            migration(db)
            db.execute(f"INSERT INTO {TABLE} (number, name) VALUES (?, ?)", [number, migration.__name__.strip("_")])
    return len(MIGRATIONS) - done
