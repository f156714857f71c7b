"""The store's numbered schema changes, upgrade steps 3 to 8, applied in order, each once (as simonw/llm's
embeddings_migrations.py does); a store records which it has had in `schema_migrations`, under the numbers they
were first given there (step n is recorded as n - 2: steps 1 and 2 predate the record, indexer/upgrades/chain.py).
Each change is a module of its own in this package, appended to MIGRATIONS, never edited."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from searchengine.indexer.errors import IndexerError
from searchengine.indexer.upgrades.build_settings_table import build_settings
from searchengine.indexer.upgrades.distinct_texts import distinct_texts
from searchengine.indexer.upgrades.document_checksums import row_checksums
from searchengine.indexer.upgrades.document_counters import counters
from searchengine.indexer.upgrades.originals_table import segment_originals
from searchengine.indexer.upgrades.segment_tables import segments
from searchengine.indexer.upgrades.template_table import vector_template

if TYPE_CHECKING:
    import sqlite_utils

TABLE = "schema_migrations"

MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [
    segments,  # 1, step 3 (segment_tables.py)
    counters,  # 2, step 4 (document_counters.py)
    build_settings,  # 3, step 5 (build_settings_table.py)
    row_checksums,  # 4, step 6 (document_checksums.py)
    segment_originals,  # 5, step 7 (originals_table.py)
    vector_template,  # 6, step 8 (template_table.py)
    distinct_texts,  # 7, step 9 (distinct_texts.py)
]
"""In order: migration n is MIGRATIONS[n - 1], recorded under its function's name."""


def applied(db: sqlite_utils.Database) -> int:
    """How many migrations the store has had."""
    if TABLE not in db.table_names():
        return 0
    return int(db.execute(f"SELECT coalesce(max(number), 0) FROM {TABLE}").fetchone()[0])


def migrate(db: sqlite_utils.Database) -> int:
    """Apply the migrations the store has not had, in one transaction; returns how many were applied. A store that
    has had more than this code knows was written by a newer searchengine, whose tables this one would not keep up
    to date as it writes: refused (a reader never migrates, so it still reads the store)."""
    done = applied(db)
    if done > len(MIGRATIONS):
        raise IndexerError(
            f"this index was written by a newer searchengine (its store has had {done} schema changes, this "
            f"searchengine knows {len(MIGRATIONS)}), whose records a write by this one would not keep: upgrade "
            "searchengine (pip install -U searchengine) to write it; searching it works as it is"
        )
    if done == len(MIGRATIONS):
        return 0
    with db.atomic():
        db.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (number INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        for number, migration in enumerate(MIGRATIONS[done:], start=done + 1):
            migration(db)
            db.execute(f"INSERT INTO {TABLE} (number, name) VALUES (?, ?)", [number, migration.__name__.strip("_")])
    return len(MIGRATIONS) - done
