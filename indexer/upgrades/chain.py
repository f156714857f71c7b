"""The one upgrade chain: every shape an older searchengine wrote on disk is brought to the current one by these
steps, in order, each applied once.

    step  brings                               module                       an index needs it when
    1     one row per document                 legacy_store.py              its documents count repeats (`count`)
    2     tombstones, passages, keyword index  base_tables.py               it lacks one of those tables
    3     vectors in segments the store names  format_one.py,               its manifest is format 1 (vector files
          (format 2)                           segment_tables.py (1)        named in it, one per shard with --shards)
    4     document and passage counters        document_counters.py (2)     the store has not recorded migration 2
    5     build settings                       build_settings_table.py (3)  the store has not recorded migration 3
    6     a checksum of every document row     document_checksums.py (4)    the store has not recorded migration 4
    7     segments' originals files            originals_table.py (5)       the store has not recorded migration 5
    8     the trained template                 template_table.py (6)        the store has not recorded migration 6
    9     a count of distinct texts            distinct_texts.py (7)        the store has not recorded migration 7

(n): the migration number the store records the step under (migrations.py applies them in order).

When: at the first write, under the writer lock. Opening an index to read never changes a file (a reader may be
on read-only media, or a user who may not write the index): a reader reads every older shape as it is, format-1
vector files as segments (format_one.py) and an older documents table through a view (legacy_store.py), so what
readers and writers hold is one format. The first write then converts a format-1 index whole, once (steps 1 to
9, by one rewrite into a new generation: a kill leaves the old index), and opening a store for writing applies
whatever of steps 2 to 9 it still lacks, in one transaction. Steps 1 and 2 predate any record: the store's shape
says whether they are needed. Steps 3 to 9 are recorded in the store's `schema_migrations`, under the numbers
they were first given there (1 to 7). The steps a store takes when opened run in store_steps.py (which the store
calls, so it imports no directory or rewrite code); the conversion of a whole index is `upgrade_index` here. A
later step is a module of this package, appended to this list and to migrations.MIGRATIONS (or `upgrade_index`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from searchengine.indexer.commit.index_directory import IndexDirectory


def upgrade_index(directory: IndexDirectory) -> tuple[bool, int]:
    """Bring a format-1 index to the current format by one whole rewrite (steps 1 to 9: its store to one row per
    document, its vectors to segments), saying so on stderr; called by every write before it starts. Returns
    (whether it did, documents an older store's rows were split into)."""
    if directory.read_settings().segmented:
        return False, 0
    from searchengine.indexer.commit.rewrite import rewriting

    print(
        f"Converting index {directory.path} to the segmented format (once: later writes change only what they "
        "write); this rewrites it whole one last time.",
        file=sys.stderr,
    )
    with rewriting(directory) as rewrite:
        upgraded = rewrite.upgraded
    return True, upgraded
